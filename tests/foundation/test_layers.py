"""The layers of docs/architecture.md, held on the source: the import graph is read from every module of
src/kdt (ast, every import: at load time, in a function, under TYPE_CHECKING), each module placed in the
layer the document's list names for it, and

- no import goes up a layer (a module imports from its own layer or those below);
- no cycle among the modules, wherever the import is written (at load time, in a function, under
  TYPE_CHECKING): an import inside a function hides a circle, it does not remove it;
- no cycle among the packages (kdt's top-level packages and modules, every import counted);
- no cycle among the operators' folders (kdt/operators/<operator>/).

The same functions run on a copy of the tree with one bad import written in, so the test can fail."""
from __future__ import annotations

import ast
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def layers_of(doc: str) -> list[tuple[str, list[str]]]:
    """[(layer, [unit])] bottom to top, from the numbered list under "Layers" in docs/architecture.md: a line
    `N. **name**: `unit`, ...`, a unit a module (`versions`, `run/supervisor.py`) or a folder (`expand/`)."""
    section = doc[doc.index("\nLayers"):]
    out = []
    for m in re.finditer(r"^(\d+)\. \*\*([^*]+)\*\*: (.*)$", section, re.M):
        out.append((m.group(2), re.findall(r"`([^`]+)`", m.group(3))))
    return out


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    line: int
    at_load: bool       # runs when `src` loads (top level, not under TYPE_CHECKING)


def _module(pkg: Path, path: Path) -> str:
    parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(pkg: Path) -> dict[str, Path]:
    return {_module(pkg, p): p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts}


def _resolve(mod: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def edges(mods: dict[str, Path]) -> list[Edge]:
    """Every import of a kdt module by another, to the module it names (`from a import b`: a.b when b is a
    module, else a); a load-time import also loads the packages above its target (their __init__)."""
    out = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        load_nodes = _at_load(tree.body)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, path.name == "__init__.py", node.level, node.module)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for n in names:
                while n and n not in mods:
                    n = n.rpartition(".")[0]
                if n and n != mod and n.split(".")[0] == mod.split(".")[0]:
                    out.append(Edge(mod, n, node.lineno, id(node) in load_nodes))
    return out


def _at_load(body: list) -> set[int]:
    """The ids of the import statements that run when a module loads: not in a function, not under
    `if TYPE_CHECKING:` (a class body runs at load)."""
    out = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            out |= _at_load(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.add(id(node))
        for field in ("body", "orelse", "finalbody", "handlers"):
            out |= _at_load(getattr(node, field, None) or [])
    return out


def layer_map(mods: dict[str, Path], layers: list[tuple[str, list[str]]], top: str = "kdt") -> tuple[dict, list]:
    """{module: layer index} by the most specific unit that names it; and the modules no unit names."""
    units = []
    for i, (_, names) in enumerate(layers):
        for u in names:
            u = u.removesuffix(".py")
            if u.endswith("/"):
                units.append((f"{top}." + u.rstrip("/").replace("/", "."), True, i))
            else:
                units.append((top if u == "__init__" else f"{top}." + u.replace("/", "."), False, i))
    placed, unplaced = {}, []
    for mod in mods:
        best = None
        for name, folder, i in units:
            if mod == name or (folder and mod.startswith(name + ".")):
                if best is None or len(name) > len(best[0]):
                    best = (name, i)
        if best is None:
            unplaced.append(mod)
        else:
            placed[mod] = best[1]
    return placed, unplaced


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), iteratively."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _package(mod: str) -> str:
    """kdt's top-level package or module a module belongs to."""
    return ".".join(mod.split(".")[:2])


def problems(pkg: Path, doc: str) -> dict[str, list[str]]:
    mods = modules(pkg)
    es = edges(mods)
    layers = layers_of(doc)
    placed, unplaced = layer_map(mods, layers, pkg.name)
    up = [f"{e.src} ({layers[placed[e.src]][0]}) -> {e.dst} ({layers[placed[e.dst]][0]}) at line {e.line}"
          for e in es if e.src in placed and e.dst in placed and placed[e.dst] > placed[e.src]]
    graph = {}
    for e in es:        # every import: one a function runs later is a dependency all the same (a hidden circle)
        graph.setdefault(e.src, set()).add(e.dst)
    # a package's __init__ loading its own submodule is one load, not a cycle
    module_cycles = [c for c in _cycles(graph)
                     if not (len(c) == 2 and c[1].startswith(c[0] + "."))]
    packages = {}
    for e in es:
        a, b = _package(e.src), _package(e.dst)
        if a != b and b != pkg.name:
            packages.setdefault(a, set()).add(b)
    ops = {}
    for e in es:
        a, b = e.src.split("."), e.dst.split(".")
        if a[1:2] == b[1:2] == ["operators"] and len(a) > 3 and len(b) > 3 and a[2] != b[2]:
            ops.setdefault(a[2], set()).add(b[2])
    return {"unplaced": unplaced, "up": up, "module cycles": [" -> ".join(c) for c in module_cycles],
            "package cycles": [" -> ".join(c) for c in _cycles(packages)],
            "operator folder cycles": [" -> ".join(c) for c in _cycles(ops)]}


def test_the_layers_of_the_architecture_hold():
    found = problems(ROOT / "src" / "kdt", DOC.read_text())
    assert found == {k: [] for k in found}, found


def test_the_document_lists_the_layers_in_order():
    names = [name for name, _ in layers_of(DOC.read_text())]
    assert names[:5] == ["foundation", "documents", "expansion base", "operators", "machinery"]
    assert names[-3:] == ["stages", "report", "cli"] and "registry" in names


def _bad_tree(tmp_path: Path, edit) -> Path:
    pkg = tmp_path / "kdt"
    shutil.copytree(ROOT / "src" / "kdt", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.json", "generated",
                                                                               "crd-rules", "*.c"))
    edit(pkg)
    return pkg


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + "\n" + line + "\n")


def test_an_import_up_a_layer_fails(tmp_path):
    """operators importing the registry (as expand/torchft.py once did) is an arrow up."""
    pkg = _bad_tree(tmp_path, lambda p: _append(p / "operators" / "torchft" / "groups.py", "from ... import kinds as K"))
    found = problems(pkg, DOC.read_text())
    assert found["up"] == [f"kdt.operators.torchft.groups (operators) -> kdt.kinds (registry) at line "
                           f"{len((pkg / 'operators' / 'torchft' / 'groups.py').read_text().splitlines())}"]
    assert any("kdt.kinds" in c and "kdt.operators" in c for c in found["package cycles"])


def test_a_lazy_import_up_a_layer_fails_too(tmp_path):
    """An import inside a function is a dependency as well (run/supervisor.py once asked kdt.kinds)."""
    pkg = _bad_tree(tmp_path, lambda p: _append(p / "operators" / "framework" / "pods.py",
                                                "def _late():\n    from ... import kinds\n    return kinds"))
    found = problems(pkg, DOC.read_text())
    assert len(found["up"]) == 1 and found["up"][0].startswith("kdt.operators.framework.pods (operators) -> kdt.kinds (registry)")
    assert any("kdt.kinds" in c and "kdt.operators" in c for c in found["package cycles"])
    # a function's import runs later, and is a circle all the same (kdt.operators.jobset.kind imports kdt.operators.framework.pods)
    assert any("kdt.operators.jobset.kind" in c and "kdt.operators.framework.pods" in c for c in found["module cycles"])


def test_a_circle_hidden_in_functions_fails(tmp_path):
    """Two modules of one layer importing each other, each inside a function (as kdt.live.controlplane and
    kdt.live.install once did): no arrow goes up, and the circle is found all the same."""
    def edit(p):
        _append(p / "live" / "pki.py", "def _late():\n    from . import releases\n    return releases")
        _append(p / "live" / "releases.py", "def _late():\n    from . import pki\n    return pki")
    found = problems(_bad_tree(tmp_path, edit), DOC.read_text())
    assert not found["up"]
    assert "kdt.live.pki -> kdt.live.releases" in found["module cycles"]


def test_a_load_cycle_inside_a_layer_fails(tmp_path):
    def edit(p):
        _append(p / "errors.py", "from . import fields  # noqa: E402")
        _append(p / "fields.py", "from . import errors  # noqa: E402")
    found = problems(_bad_tree(tmp_path, edit), DOC.read_text())
    assert not found["up"]
    assert "kdt.errors -> kdt.fields" in found["module cycles"]


def test_a_module_in_no_layer_fails(tmp_path):
    found = problems(_bad_tree(tmp_path, lambda p: (p / "newstage.py").write_text("X = 1\n")), DOC.read_text())
    assert found["unplaced"] == ["kdt.newstage"]


def test_operator_folders_that_import_each_other_fail(tmp_path):
    found = problems(_bad_tree(tmp_path, lambda p: _append(p / "operators" / "jobset" / "facts.py",
                                                           "from ..trainer_v2 import facts as TV2  # noqa: E402")),
                     DOC.read_text())
    assert any("jobset" in c and "trainer_v2" in c for c in found["operator folder cycles"])

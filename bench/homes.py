"""The structure figures of issue #54, measured on src/kdt (the source read with ast; the registry's kind names
from kdt.kinds).

    .venv/bin/python bench/homes.py

- homes per operator: the folders of src/kdt (a top-level module counts as its own) holding a module that is
  about the operator (named after it or one of its kinds, or defining a class or top-level function so
  named), the operator's own folder included;
- kind tables outside the registry: module-level tuples, sets, lists or dicts of two or more registered kind
  names written as literals (keys of a dict too) outside kdt/kinds and kdt/operators;
- circles at any level: strongly connected import components among modules, every import counted (a
  function's too), and among kdt's top-level packages;
- the longest `main` of kdt/cli (lines);
- function-level imports: import statements inside a function, all of src/kdt and kdt/live's.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "kdt"
sys.path.insert(0, str(ROOT / "tests" / "foundation"))
from test_layers import _cycles, edges, modules  # noqa: E402

# each operator folder and the words that name it or its kinds in a module, class or function name
OPERATORS = {
    "training_operator_v1": ("training_operator", "pytorchjob", "tfjob", "kubeflowv1"),
    "trainer_v2": ("trainer_v2", "trainjob", "trainingruntime", "runtime"),
    "jobset": ("jobset",),
    "kueue": ("kueue",),
    "statefulset": ("statefulset",),
    "volcano": ("volcano",),
    "scheduler_plugins": ("scheduler_plugins", "coscheduling"),
    "torchft": ("torchft",),
    "mpi": ("mpijob", "mpi"),
}


def _kind_names() -> set[str]:
    sys.path.insert(0, str(ROOT / "src"))
    from kdt import kinds as K
    return {k.kind for k in K.ALL}


def _folder(path: Path) -> str:
    rel = path.relative_to(PKG)
    if rel.parts[0] == "operators" and len(rel.parts) > 2:
        return "/".join(rel.parts[:2])
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def homes() -> dict[str, list[str]]:
    out = {}
    files = [p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts and "go" not in p.relative_to(PKG).parts]
    for op, words in OPERATORS.items():
        pat = re.compile("|".join(words), re.I)
        found = set()
        for path in files:
            folder = _folder(path)
            if folder == f"operators/{op}":
                found.add(folder)
                continue
            if pat.search(path.stem.replace("_", "")) or pat.search(path.stem):
                found.add(folder)
                continue
            tree = ast.parse(path.read_text())
            for node in tree.body:
                if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and pat.search(node.name):
                    if isinstance(node, ast.ClassDef) or not node.name.startswith("_"):
                        found.add(folder)
                        break
        out[op] = sorted(found)
    return out


def kind_tables() -> list[str]:
    kinds = _kind_names()
    out = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        if "__pycache__" in rel.parts or rel.parts[0] in ("kinds", "operators"):
            continue
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            v = node.value
            elts = (v.keys if isinstance(v, ast.Dict) else v.elts if isinstance(v, (ast.Tuple, ast.Set, ast.List)) else [])
            named = [e.value for e in elts if isinstance(e, ast.Constant) and e.value in kinds]
            if len(named) >= 2:
                out.append(f"{rel}:{node.lineno}")
    return sorted(out)


def circles() -> tuple[list, list]:
    mods = modules(PKG)
    es = edges(mods)
    graph: dict = {}
    pk: dict = {}
    for e in es:
        graph.setdefault(e.src, set()).add(e.dst)
        a, b = ".".join(e.src.split(".")[:2]), ".".join(e.dst.split(".")[:2])
        if a != b and b != "kdt":
            pk.setdefault(a, set()).add(b)
    mod_c = [c for c in _cycles(graph) if not (len(c) == 2 and c[1].startswith(c[0] + "."))]
    return mod_c, _cycles(pk)


def longest_main() -> tuple[int, str]:
    best = (0, "")
    for path in sorted((PKG / "cli").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name == "main":
                n = node.end_lineno - node.lineno + 1
                best = max(best, (n, path.name))
    return best


def function_imports() -> tuple[int, int]:
    total = live = 0
    for path in PKG.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        inner = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner |= {id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))}
        total += len(inner)
        if path.relative_to(PKG).parts[0] == "live":
            live += len(inner)
    return total, live


def main() -> None:
    h = homes()
    print("homes per operator (folders of src/kdt holding something about it):")
    for op, folders in h.items():
        print(f"  {op:22} {len(folders)}  {', '.join(folders)}")
    t = kind_tables()
    print(f"kind tables outside the registry and operators/: {len(t)}  {', '.join(t)}")
    mc, pc = circles()
    print(f"circles at any level: {len(mc)} among modules, {len(pc)} among packages")
    for c in mc + pc:
        print("  " + " <-> ".join(c))
    n, name = longest_main()
    print(f"longest cli main: {n} lines (cli/{name})")
    total, live = function_imports()
    print(f"function-level imports: {total} in src/kdt, {live} in kdt/live")


if __name__ == "__main__":
    main()

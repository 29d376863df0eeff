"""The house rules of the tooling package, checked on its source (docs/architecture.md; the layers and
import cycles: test_layers.py): no stage outside the registry (kdt.kinds) and the facts (kdt.operators)
compares a
kind name; every registered kind is unique and reachable; the checklist names files that exist."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kdt import kinds as K

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "kdt"


def _module(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module(p): p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}


_KIND_NAMES = {k.kind for k in K.ALL}


def _kind_constants() -> set[str]:
    """The names under which kdt.operators keeps a registered kind's name (`TV2.TRAINJOB`, `JS.KIND`,
    `TV2.RUNTIME_KINDS`), read off the modules, so that a new one is held too."""
    import importlib
    import pkgutil

    import kdt.operators as O
    out = set()
    for info in pkgutil.walk_packages(O.__path__, "kdt.operators."):
        for name, value in vars(importlib.import_module(info.name)).items():
            values = value if isinstance(value, tuple) and value else (value,)
            if name.isupper() and all(isinstance(v, str) and v in _KIND_NAMES for v in values):
                out.add(name)
    return out


_KIND_CONSTANTS = _kind_constants()


def _is_kind_ref(node) -> bool:
    """`x.kind`, `x["kind"]`, `x.get("kind")`, `str(...)` of one."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str"
            and len(node.args) == 1):
        return _is_kind_ref(node.args[0])
    if isinstance(node, ast.Attribute) and node.attr == "kind":
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == "kind":
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "kind")


def _names_a_kind(node) -> bool:
    """A registered kind's name as a literal (or in a tuple of them), or an operators' kind constant (the
    registry's own objects, `K.TRAINJOB`, are kinds, not names)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and n.value in _KIND_NAMES:
            return True
        if (isinstance(n, ast.Attribute) and n.attr in _KIND_CONSTANTS
                and not (isinstance(n.value, ast.Name) and n.value.id in ("K", "kinds"))):
            return True
    return False


def test_no_stage_outside_the_registry_compares_a_kind_name():
    offenders = []
    for mod, path in _modules().items():
        # kdt.live reads what a cluster returns (its pods, Jobs, ConfigMaps, owner references) by the kinds the API
        # server names them, the way kdt.operators states what the operators create: no document is classified
        if mod.startswith(("kdt.kinds", "kdt.operators", "kdt.live")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_is_kind_ref(s) for s in sides) and any(_names_a_kind(s) for s in sides if not _is_kind_ref(s)):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "endswith"
                    and _is_kind_ref(node.func.value) and node.args and isinstance(node.args[0], ast.Constant)
                    and any(n.endswith(str(node.args[0].value)) for n in _KIND_NAMES)):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, "ask kdt.kinds instead of comparing kind names: " + ", ".join(offenders)


def _fstring_parts(tree) -> set[int]:
    return {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in ast.walk(n)}


def test_no_lint_rule_names_a_kind_but_through_the_registry():
    """The lint rules go further: a rule names a kind only as the registry's object (`K.LOCAL_QUEUE`,
    `K.of(doc) is K.VOLCANO_JOB`), never by its name, so neither `str(doc.kind) == "Job"`, nor a constant
    `LOCAL_QUEUE = "LocalQueue"` compared with a document's kind, nor a helper handed `"PodGroup"`, nor
    `kind in TV2.RUNTIME_KINDS`: a registered kind's name as a literal (messages' f-strings aside) or a
    comparison with the operators' tables of kind names."""
    offenders = []
    for mod, path in _modules().items():
        if not mod.startswith("kdt.lint"):
            continue
        tree = ast.parse(path.read_text())
        in_fstring = _fstring_parts(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in _KIND_NAMES and id(node) not in in_fstring:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
            if isinstance(node, ast.Compare) and any(_names_a_kind(s) for s in [node.left, *node.comparators]):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, "name kinds by kdt.kinds (K.of(doc), K.<KIND>.matches(doc)): " + ", ".join(offenders)


def test_every_kind_is_registered_once_and_found_by_its_identity():
    ids = [(k.group, k.kind) for k in K.ALL]
    assert len(ids) == len(set(ids))
    for k in K.ALL:
        assert K.lookup(k.group, k.kind) is k
        obj = {"apiVersion": k.api_version, "kind": k.kind}
        assert K.of_object(obj) is k and k.matches(obj)
        assert k.role in (K.JOB, K.RUNTIME, K.PODS, K.DATA)


def test_every_kind_module_is_in_the_registry():
    """A module under kdt/kinds, or an operator's `kind.py` (kdt/operators/<operator>/kind.py), declares KINDS,
    all listed in the registry's ALL (else its kinds are invisible to every stage)."""
    registered = {id(k) for k in K.ALL}
    paths = [p for p in (PKG / "kinds").glob("*.py") if p.name != "__init__.py"] + \
        [p for p in sorted(PKG.glob("operators/*/kind.py")) if p.parent.name != "framework"]
    assert len(paths) >= 6
    for path in paths:
        mod = __import__(_module(path), fromlist=["KINDS"])
        assert hasattr(mod, "KINDS"), f"{path.name} declares no KINDS"
        assert all(id(k) in registered for k in mod.KINDS), f"{path.name}: not every kind is in kdt.kinds.ALL"


def test_the_checklists_name_files_that_exist():
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## Checklists"):]
    paths = set(re.findall(r"`((?:src|tests|docs|bench|scripts|charts|overlays|components|deploy)/[^`*<> ]+)`", section))
    assert len(paths) >= 10
    missing = [p for p in sorted(paths) if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


_SHAPES = "kdt.operators.trainer_v2.shapes"


def _imported(path: Path, tree) -> set[str]:
    """Every module (and `from` name, as module.name) a file imports, relative imports resolved."""
    package = _module(path).split(".") if path.is_relative_to(PKG) else []
    if package and path.name != "__init__.py":
        package = package[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join([*base, *([node.module] if node.module else [])])
            out |= {mod} | {f"{mod}.{a.name}" for a in node.names}
    return out


def _reads_by_path(tree, name: str) -> bool:
    """A string (not a docstring) naming the file: a reader by path, such as a generator."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and name in n.value and id(n) not in docs
               for n in ast.walk(tree))


def test_the_trainer_shape_checklist_names_every_reader_of_the_shape_table():
    """"Adding a Trainer shape" names every module that imports (or reads) operators/trainer_v2/shapes.py:
    a new shape's columns are read there, so a reader the checklist leaves out is a file a new shape forgets."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("**Adding a Trainer shape**")
    section = text[start:text.index("**Adding", start + 1)]
    named = set(re.findall(r"`((?:src|tests|scripts|bench|charts)/[^`*<> ]+)`", section))
    table = PKG / "operators" / "trainer_v2" / "shapes.py"
    readers = []
    for folder in ("src", "scripts", "bench", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path in (table, Path(__file__).resolve()) or "__pycache__" in path.parts:
                continue
            tree = ast.parse(path.read_text())
            if _SHAPES in _imported(path, tree) or _reads_by_path(tree, "trainer_v2/shapes.py"):
                readers.append(str(path.relative_to(ROOT)))
    assert len(readers) >= 10, readers          # the expansion, the webhook, torchtune, the migration, lint, ...
    missing = [r for r in readers if r not in named]
    assert not missing, f"docs/architecture.md \"Adding a Trainer shape\" does not name these readers of the table: {missing}"


@pytest.mark.parametrize("kind", [k for k in K.ALL if k.role == K.JOB], ids=lambda k: k.id)
def test_every_job_kind_reads_its_pod_templates(kind):
    """A training job kind gives lint and validation its pod templates (TrainJob: its trainer instead)."""
    from kdt.documents import load_stream
    doc = _minimal(kind)
    (d,), problems = load_stream(doc, "k.yaml")
    assert not problems
    found = list(K.pod_templates(d)) or list(kind.extra_containers(d))
    assert found, f"{kind.id} yields no pod template for a minimal object"


def _minimal(kind) -> str:
    pod = "{spec: {containers: [{name: c, image: i}]}}"
    if kind is K.TRAINJOB:
        spec = "{trainer: {image: i}}"
    elif kind is K.JOBSET:
        spec = f"{{replicatedJobs: [{{name: r, template: {{spec: {{template: {pod}}}}}}}]}}"
    elif kind.group == "kubeflow.org":
        spec = f"{{{kind.replica_specs}: {{Worker: {{replicas: 1, template: {pod}}}}}}}"
    elif kind.group == "batch.volcano.sh":
        spec = f"{{tasks: [{{name: t, replicas: 1, template: {pod}}}]}}"
    else:
        spec = f"{{replicas: 1, template: {pod}}}"
    return f"apiVersion: {kind.api_version}\nkind: {kind.kind}\nmetadata: {{name: x}}\nspec: {spec}\n"


def test_no_package_binds_a_name_that_a_submodule_of_it_also_has():
    """Python binds a subpackage to its parent's name when it loads it, replacing a function of the same
    name (`from kdt.cli import run` gave the module after `import kdt.cli.run`): no package of kdt
    defines a top-level function or class named like one of its own submodules."""
    clashes = []
    for init in PKG.rglob("__init__.py"):
        subs = {p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py"} | \
               {p.name for p in init.parent.iterdir() if (p / "__init__.py").exists()}
        for node in ast.parse(init.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in subs:
                clashes.append(f"{init.relative_to(ROOT)}: {node.name}")
            if isinstance(node, ast.ImportFrom) and node.level and node.module:   # `from .engine import rules`
                clashes += [f"{init.relative_to(ROOT)}: {a.asname or a.name}" for a in node.names
                            if (a.asname or a.name) in subs and (a.asname or a.name) != node.module]
    assert not clashes, clashes


def test_the_command_layer_parses_and_prints():
    """Each command's `main` (kdt/cli/*.py) is at most 60 lines: it parses its arguments, calls the stage that does
    the work (kdt.merge_preview.preview_targets, kdt.validate_run.validate_targets, ...) and prints (#54)."""
    long = []
    for path in sorted((PKG / "cli").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name == "main" and node.end_lineno - node.lineno + 1 > 60:
                long.append(f"{path.relative_to(ROOT)}: {node.end_lineno - node.lineno + 1} lines")
    assert not long, long


def test_no_table_of_kinds_outside_the_registry_and_the_operators():
    """A kind's facts (its scope, apply tier, how its job ends, ...) are its Kind's in the registry: no module outside
    kdt/kinds and kdt/operators keeps a table (a tuple, set, list or dict written at module level) of two or more
    registered kind names (kdt.live once kept four that disagreed)."""
    tables = []
    for mod, path in _modules().items():
        if mod.startswith(("kdt.kinds", "kdt.operators")):
            continue
        for node in ast.parse(path.read_text()).body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            elts = (value.keys if isinstance(value, ast.Dict) else
                    value.elts if isinstance(value, (ast.Tuple, ast.Set, ast.List)) else [])
            if sum(1 for e in elts if isinstance(e, ast.Constant) and e.value in _KIND_NAMES) >= 2:
                tables.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not tables, "ask the registry (kdt.kinds) for the kind's facts: " + ", ".join(tables)


_FAKE_FACTS = '''"""A fake operator's facts (the test of docs/architecture.md "Adding an operator")."""
GROUP = "fake.example.com"
KIND = "FakeJob"
# the status conditions that end a FakeJob (an operator's API types would be cited here: release and file)
ENDS = ("Done", "Broken")
'''
_FAKE_KIND = '''"""The fake operator's kind: identity, role, live facts and the hooks it has."""
from __future__ import annotations

from ..framework.kind import JOB, Kind, PodTemplate
from . import facts as F


class FakeJob(Kind):
    group, kind, versions = F.GROUP, F.KIND, ("v1",)
    role = JOB
    operator = "Fake Operator"
    ends = F.ENDS

    def pod_templates(self, doc):
        tmpl = (doc.data.get("spec") or {}).get("template") or {}
        yield PodTemplate(doc, ("spec", "template", "spec"), tmpl.get("spec") or {}, "worker", 1,
                          ("spec", "template", "metadata"))


KINDS = (FakeJob(),)
'''
_FAKE_CHECK = '''
from kdt import kinds as K
from kdt.documents import load_stream
from kdt.live import admission
k = K.lookup("fake.example.com", "FakeJob")
assert k is not None and k in K.ALL and K.by_role(K.JOB)[-1] is not None
(d,), _ = load_stream("apiVersion: fake.example.com/v1\\nkind: FakeJob\\nmetadata: {name: x}\\n"
                      "spec: {template: {spec: {containers: [{name: c, image: i}]}}}\\n", "f.yaml")
assert K.of(d) is k and [c["name"] for _, _, c in K.containers(d)] == ["c"]
assert admission.tier(d.data, True) == K.JOB_TIER and k.ends == ("Done", "Broken")
print("registered")
'''


def test_adding_an_operator_touches_its_folder_and_one_registration_line(tmp_path):
    """docs/architecture.md "Adding an operator", held on a copy of the package: a fake operator's folder
    (facts.py, kind.py) and one line in the registry are all it takes for every stage (lint's pod templates, the
    live path's apply tier and end conditions) to know its kind, and the layers still hold."""
    import difflib
    import shutil
    import subprocess
    import sys

    from test_layers import DOC, problems
    pkg = tmp_path / "kdt"
    def ignore(folder, names):      # the live path's Go modules: their go.mod only (kdt.live.releases reads them)
        go = "/live/go" in folder.replace("\\", "/")
        return [n for n in names if n == "__pycache__" or (go and n != "go.mod" and not Path(folder, n).is_dir())]
    shutil.copytree(PKG, pkg, ignore=ignore)
    op = pkg / "operators" / "fakeop"
    op.mkdir()
    (op / "__init__.py").write_text('"""A fake operator."""\n')
    (op / "facts.py").write_text(_FAKE_FACTS)
    (op / "kind.py").write_text(_FAKE_KIND)
    registry = pkg / "kinds" / "__init__.py"
    text = registry.read_text()
    anchor = "from ..operators.trainer_v2.kind import KINDS as TRAINER_V2_INTEGRATION\n"
    assert anchor in text
    registry.write_text(text.replace(anchor, anchor + "from ..operators.fakeop.kind import KINDS as FAKEOP_INTEGRATION\n"))
    changed = [str(p.relative_to(tmp_path)) for p in sorted(pkg.rglob("*.py"))
               if not (PKG / p.relative_to(pkg)).exists() or (PKG / p.relative_to(pkg)).read_text() != p.read_text()]
    assert changed == ["kdt/kinds/__init__.py", "kdt/operators/fakeop/__init__.py", "kdt/operators/fakeop/facts.py",
                       "kdt/operators/fakeop/kind.py"]
    added = [line for line in difflib.ndiff(text.splitlines(), registry.read_text().splitlines())
             if line.startswith(("+ ", "- "))]
    assert len(added) == 1
    found = problems(pkg, DOC.read_text())
    assert found == {k: [] for k in found}, found
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    got = subprocess.run([sys.executable, "-c", _FAKE_CHECK], cwd=tmp_path, capture_output=True, text=True,
                         env={**env, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert got.returncode == 0 and got.stdout.strip() == "registered", got.stderr[-2000:]

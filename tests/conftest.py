"""Shared test setup: the tooling package lives under src/, and this checkout's copy is the one tested
(also in subprocesses, and when .venv's editable install points at another checkout)."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = str(ROOT / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != SRC:
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
KDT = [sys.executable, "-m", "kdt"]
# Bytecode kept: the suite starts some thousand Python processes (kdt, its pods, torchrun agents and workers,
# the samples), each importing this checkout's src/ and training/. With PYTHONDONTWRITEBYTECODE set (as some
# shells and images set it) each of them compiled every module it imports again: about 0.25 s of CPU per kdt
# command, 17 % of tests/validate's and tests/lint's CPU. __pycache__ is git-ignored, and every walk of the
# tree skips it (kdt's targets, the render cache's fingerprint, the image's .dockerignore, the wheel).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


import subprocess  # noqa: E402

import pytest  # noqa: E402


def _tool(command: str):
    def run(*args, stdin: str | None = None, cwd: Path = ROOT):
        proc = subprocess.run([*KDT, command, *map(str, args)],
                              input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr
    return run


@pytest.fixture(scope="session")
def session_folder(tmp_path_factory):
    """``session_folder(name)``: a folder of this test session that every xdist worker sees (beside each
    worker's own base folder; without xdist, in the session's base folder)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent

    def get(name: str) -> Path:
        folder = base / name
        folder.mkdir(exist_ok=True)
        return folder

    return get


@pytest.fixture(scope="session")
def computed_once(session_folder):
    """``computed_once(name, compute)``: ``compute()`` run once per test session, by whichever xdist worker asks
    first; the others (and later asks) read its pickled result. For expensive results several tests read:
    pytest-xdist spreads a module's tests over workers, and a worker that runs another module's test in
    between tears a module-scoped fixture down and computes it again."""
    import fcntl
    import pickle
    folder = session_folder("computed-once")

    def get(name: str, compute):
        result = folder / f"{name}.pickle"
        with open(folder / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not result.exists():
                result.write_bytes(pickle.dumps(compute()))
            return pickle.loads(result.read_bytes())

    return get


@pytest.fixture
def validate_cli():
    """Run `kdt validate`: (exit code, stdout, stderr)."""
    return _tool("validate")


@pytest.fixture
def lint_cli():
    """Run `kdt lint`: (exit code, stdout, stderr)."""
    return _tool("lint")


@pytest.fixture
def preview_cli():
    """Run `kdt preview`: (exit code, stdout, stderr)."""
    return _tool("preview")


@pytest.fixture
def overlay_with(tmp_path):
    """Build an overlay of an overlay with extra components, inside the repository (kustomize refuses
    paths that leave its root), render it, and remove it afterwards: (Target, Rendered)."""
    import shutil
    from kdt import targets
    from kdt.render import render
    made = []

    def build(overlay: str, components: list[str], namespace: str | None = None):
        work = ROOT / ".pytest-np" / f"{overlay}-{'-'.join(c.replace('/', '_') for c in components)}-{tmp_path.name}"
        work.mkdir(parents=True)
        made.append(work)
        comps = ", ".join(f"../../components/{c}" for c in components)
        (work / "kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                                 + (f"namespace: {namespace}\n" if namespace else "")
                                                 + f"resources: [../../overlays/{overlay}]\ncomponents: [{comps}]\n")
        t = targets.Target(f"{overlay}+{'+'.join(components)}", targets.KUSTOMIZE, work)
        return t, render(t)
    yield build
    for work in made:
        shutil.rmtree(work, ignore_errors=True)   # only ours: the other test worker may be using the folder


# Longest first: the tests that run real processes (torchrun, kdt run, pip, pre-commit) take 5 to 40 s
# each, the rest well under one. Collected last, one of them would keep a worker busy while the others
# idle at the end of `make test` (pytest-xdist's worksteal hands each worker a contiguous share in
# collection order, and an idle one steals the back half of another's queue); collected first, the short
# ones fill in behind them. tests/run first: it holds the longest (kdt run with faults, 20 to 35 s each).
# A replay of the scheduler on measured durations put the end of the run 14 s earlier with 3 workers
# (4 s with 2) than with tests/training first. Stable: each module's tests stay together.
_LONGEST_FIRST = ("tests/run/", "tests/training/", "tests/workflow/", "tests/reader/")


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        return next((i for i, p in enumerate(_LONGEST_FIRST) if item.nodeid.startswith(p)), len(_LONGEST_FIRST))
    items.sort(key=rank)

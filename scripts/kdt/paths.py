"""Where things are: the repository root and the project's own binaries."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


def venv_bin() -> Path:
    """The bin folder of the environment running us (the project's .venv under make)."""
    return Path(sys.executable).parent


def tool(name: str) -> str:
    """Path of the project's pinned kubectl or helm, never whatever is on PATH.

    KDT_<NAME> overrides (used by tests that inject a failing binary).
    """
    override = os.environ.get(f"KDT_{name.upper()}")
    if override:
        return override
    for folder in (venv_bin(), ROOT / ".venv" / "bin"):
        candidate = folder / name
        if candidate.exists():
            return str(candidate)
    raise UsageError(f"{name}: the project's pinned {name} is missing; run `make venv` to bootstrap .venv")


def display(path: Path | str) -> str:
    """A path as users should see it: relative to the repo root when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)

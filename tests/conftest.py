"""Shared test setup: the tooling package lives under scripts/."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "scripts") not in sys.path:
    sys.path.insert(0, str(ROOT / "scripts"))


import subprocess  # noqa: E402

import pytest  # noqa: E402


def _tool(script: str):
    def run(*args, stdin: str | None = None, cwd: Path = ROOT):
        proc = subprocess.run([sys.executable, str(ROOT / "scripts" / script), *map(str, args)],
                              input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr
    return run


@pytest.fixture
def validate_cli():
    """Run scripts/validate.py: (exit code, stdout, stderr)."""
    return _tool("validate.py")


@pytest.fixture
def lint_cli():
    """Run scripts/lint.py: (exit code, stdout, stderr)."""
    return _tool("lint.py")

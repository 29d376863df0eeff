"""Fixtures of tests/lint live in lint_support.py, importable by name (every conftest is module `conftest`, so tests must not import from it)."""
from lint_support import *  # noqa: F401,F403

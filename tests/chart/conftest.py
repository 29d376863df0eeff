"""Fixtures of tests/chart live in chart_support.py, importable by name (every conftest is module `conftest`, so tests must not import from it)."""
from chart_support import *  # noqa: F401,F403

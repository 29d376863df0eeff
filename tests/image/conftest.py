"""Fixtures of tests/image live in image_support.py, importable by name (every conftest is module `conftest`, so tests must not import from it)."""
from image_support import *  # noqa: F401,F403

"""Fixtures for the merge preview tests: project-written YAML under tests/expand/fixtures."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def load():
    from kdt.documents import load_stream

    def _load(*names, text=None):
        docs = []
        for n in names:
            d, f = load_stream((FIXTURES / n).read_text(), f"fixtures/{n}")
            assert not f, f
            docs += d
        if text is not None:
            d, f = load_stream(text, "inline.yaml")
            assert not f, f
            docs += d
        return docs
    return _load

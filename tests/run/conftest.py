"""Fixtures of tests/run; helpers live in run_support.py, importable by name."""
from __future__ import annotations

import os
import sys

import pytest

from run_support import ROOT


@pytest.fixture(scope="session")
def llm_volumes(tmp_path_factory) -> list[str]:
    """``--volume`` flags giving the fine-tune targets their data and model (what a cluster's PVCs hold):
    a tiny random Llama as /models/base and learnable JSONL of every record shape in /data
    (training/make_tiny_llm.py). Built once per session, shared by the xdist workers."""
    sys.path.insert(0, str(ROOT / "training"))
    import make_tiny_llm as mk
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    root = mk.ensure(base / "kdt-run-llm", shapes=("mixed",), name="base")
    return ["--volume", f"datasets-pvc={root / 'data-mixed'}", "--volume", f"models-pvc={root / 'models'}"]

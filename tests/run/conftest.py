"""Fixtures of tests/run; helpers live in run_support.py, importable by name."""
from __future__ import annotations

import fcntl
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
    root = base / "kdt-run-llm"
    with open(base / "kdt-run-llm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "READY").exists():
            mk.write_data(root / "data", "mixed", 256, 32)
            mk.write_model(root / "models", name="base")
            (root / "READY").write_text("ok")
    return ["--volume", f"datasets-pvc={root / 'data'}", "--volume", f"models-pvc={root / 'models'}"]

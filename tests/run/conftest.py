"""Fixtures of tests/run; helpers live in run_support.py, importable by name."""
from __future__ import annotations

import fcntl
import hashlib
import json
import sys

import pytest

from run_support import ROOT, kdt_run


@pytest.fixture(scope="session")
def shared_run(session_folder):
    """``shared_run(*args)``: ``kdt_run(*args)`` once per session, whichever test (of whichever xdist worker)
    asks first; every later ask reads the same (code, stdout, stderr, events) and the same run folder
    (``folder / "run"``: its pods' logs and volumes), returned as the fifth value. For runs two tests read:
    a target run to completion that is also a fault test's uninterrupted reference."""
    root = session_folder("kdt-run-shared")

    def get(*args):
        key = hashlib.sha256(json.dumps([str(a) for a in args]).encode()).hexdigest()[:16]
        folder, result = root / key, root / f"{key}.json"
        with open(root / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not result.exists():
                result.write_text(json.dumps(kdt_run(*args, workdir=folder)))
            return (*json.loads(result.read_text()), folder)

    return get


@pytest.fixture(scope="session")
def llm_volumes(session_folder) -> list[str]:
    """``--volume`` flags giving the fine-tune targets their data and model (what a cluster's PVCs hold):
    a tiny random Llama as /models/base and learnable JSONL of every record shape in /data
    (training/make_tiny_llm.py). Built once per session, shared by the xdist workers."""
    sys.path.insert(0, str(ROOT / "training"))
    import make_tiny_llm as mk
    root = mk.ensure(session_folder("kdt-run-llm"), shapes=("mixed",), name="base")
    return ["--volume", f"datasets-pvc={root / 'data-mixed'}", "--volume", f"models-pvc={root / 'models'}"]


@pytest.fixture(scope="session")
def initializer_volumes(session_folder) -> list[str]:
    """``--volume`` for the fine-tune whose dataset and model come through Trainer's initializers
    (overlays/llm-trainjob-initializers): the initializer volume's folder holds dataset/ and model/ as the
    initializers would write them, here the tiny Llama and the data of llm_volumes."""
    sys.path.insert(0, str(ROOT / "training"))
    import make_tiny_llm as mk
    root = mk.ensure(session_folder("kdt-run-llm"), shapes=("mixed",), name="base")
    ws = root / "initializer-volume"
    ws.mkdir(exist_ok=True)
    for name, target in (("dataset", root / "data-mixed"), ("model", root / "models" / "base")):
        if not (ws / name).exists():
            (ws / name).symlink_to(target)
    return ["--volume", f"initializer-llm-finetune={ws}"]

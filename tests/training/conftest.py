"""Fixtures for the training tests; the harness itself is training_harness.py."""
from __future__ import annotations

import fcntl
import hashlib
import json
from pathlib import Path

import pytest

from training_harness import Cluster, _source_hash, final_result


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.cleanup()


@pytest.fixture(scope="session")
def shared_dir(session_folder) -> Path:
    return session_folder("trainkit-shared")


@pytest.fixture(scope="session")
def baseline(shared_dir):
    """``baseline(sample, args, env)``: the [DONE] line of an uninterrupted ``--nproc-per-node=2``
    run of that configuration (run once per session, whichever test asks first)."""

    def get(sample: str, args: list[str], env: dict | None = None) -> dict:
        key = hashlib.sha256(json.dumps([sample, args, env or {}, _source_hash()]).encode()).hexdigest()[:16]
        result = shared_dir / f"baseline-{key}.json"
        with open(shared_dir / f"baseline-{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if result.exists():
                return json.loads(result.read_text())
            work = shared_dir / f"baseline-{key}"
            work.mkdir(exist_ok=True)
            c = Cluster(work)
            try:
                agent = c.start("baseline", sample, [*args, "--checkpoint-dir", str(work / "ckpt")],
                                nproc=2, env=env)
                rc = c.wait_all(240)
                assert rc == [0], c.dump()
                d = final_result([agent], world_size=2)
                d["_log"] = agent.text()
            finally:
                c.cleanup()
            result.write_text(json.dumps(d))
            return d

    return get


@pytest.fixture(scope="session")
def tiny_llm(shared_dir):
    """A tiny random Llama + word-level tokenizer with a chat template (training/make_tiny_llm.py), saved with
    save_pretrained, the same without a chat template, and learnable JSONL splits of every record shape:
    ``{"model": Path, "model_no_template": Path, "data": {"chat"|"prompt"|"text": Path}}``. Built once
    per session, shared by the xdist workers."""
    import make_tiny_llm as mk

    shapes = ("chat", "prompt", "text")
    root = mk.ensure(shared_dir / "tiny-llm", shapes=shapes, no_template=True)
    return {"model": root / "models" / mk.NAME, "model_no_template": root / "models-no-template" / mk.NAME,
            "data": {s: root / f"data-{s}" for s in shapes}}

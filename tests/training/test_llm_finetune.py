"""The LLM fine-tune (training/llm_finetune.py) under torchrun, 2 CPU processes with gloo, offline: a tiny random
Llama and its tokenizer saved to a folder (make_tiny_llm.py) and loaded through ``--model-local-dir
--local-files-only``. Each record shape trains and its validation loss falls; LoRA on DDP and full on FSDP2;
``best`` is the lowest validation loss; the report parses; an MLflow file store receives the run; a worker
killed mid-epoch resumes mid-epoch and ends bit-identical to an uninterrupted run; bad input is one line."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from training_harness import PYTHON, TRAINING, base_env, final_result
from trainkit.log import parse_line
from test_training_recovery import (FIXED_CONF, assert_resumes_were_complete, elastic_pair, finish,
                                    first_resume_after, last_step_before, signal_worker, wait_train_step)

pytestmark = pytest.mark.timeout(240)
SAMPLE = "llm_finetune.py"


def llm_args(tiny, shape: str, *extra: str, model: Path | None = None) -> list[str]:
    data = tiny["data"][shape]
    return ["--model-local-dir", str(model or tiny["model"]), "--local-files-only",
            "--train-file", str(data / "train.jsonl"), "--val-file", str(data / "val.jsonl"),
            "--deterministic", "--log-every", "1", *extra]


# Killed mid-epoch: ~85 packed rows of 32 tokens, 4 rows a step, a checkpoint every 4 steps.
KILL_ARGS = ["--seq-len", "32", "--batch-size", "2", "--epochs", "2", "--max-steps", "30", "--checkpoint-every", "4",
             "--eval-every", "8", "--lr", "1e-2", "--step-sleep", "0.05"]


def evals(agent) -> list[dict]:
    return [e for e in agent.events() if e["_tag"] in ("EVAL", "EPOCH") and "val_loss" in e]


def check_outputs(out: Path, agent) -> dict:
    """best -> the lowest validation loss of the run; report.json complete; returns the report."""
    seen = evals(agent)
    assert len(seen) >= 3, agent.text()[-3000:]
    losses = [float(e["val_loss"]) for e in seen]
    assert losses[-1] < losses[0] - 0.05, losses                       # it learns
    lowest = min(seen, key=lambda e: float(e["val_loss"]))
    link = out / "best"
    assert link.is_symlink() and os.readlink(link) == f"best-step_{int(lowest['step']):09d}"
    best = json.loads((link / "best.json").read_text())
    assert best["step"] == int(lowest["step"]) and round(best["val_loss"], 6) == float(lowest["val_loss"])
    assert [p.name for p in out.glob("best-step_*")] == [os.readlink(link)]        # older best folders dropped
    report = json.loads((out / "report.json").read_text())
    done = final_result([agent], world_size=2)
    assert report["steps"] == int(done["step"]) and report["weights_sha256"] == done["weights_sha256"]
    assert report["world_size"] == 2 and report["tokens_per_s"] > 0 and report["peak_memory_bytes"] > 0
    assert report["best"]["step"] == best["step"] and report["best"]["val_ppl"] > 1
    assert report["wall_s"] >= report["train_s"] > 0
    assert (out / "final" / "tokenizer.json").is_file()
    return report


def test_lora_ddp_chat_packed_with_accumulation_best_report_and_mlflow(cluster, tiny_llm, tmp_path):
    out, store = tmp_path / "out" / "chat-lora", tmp_path / "mlruns"
    stale = out / "best-step_000000001.tmp-0badc0de"            # an export a killed run left half-written
    stale.mkdir(parents=True)
    agent = cluster.start("chat", SAMPLE, llm_args(
        tiny_llm, "chat", "--seq-len", "64", "--batch-size", "8", "--micro-batch-size", "3", "--epochs", "3",
        "--eval-every", "4", "--lr", "1e-2", "--output-dir", str(out)),
        nproc=2, env={"MLFLOW_TRACKING_URI": f"file:{store}", "MLFLOW_EXPERIMENT_NAME": "tests"})
    assert cluster.wait_all(200) == [0], cluster.dump()
    setup = [e for e in agent.events("SETUP") if e.get("sample") == "llm"][0]
    assert setup["finetune"] == "lora" and setup["shapes"] == "messages:256" and setup["packing"] == "true"
    assert 0 < int(setup["trainable"]) < int(setup["params"])
    report = check_outputs(out, agent)
    assert not stale.exists()
    assert report["finetune"] == "lora" and report["parallel"] == "ddp"
    assert (out / "best" / "adapter_model.safetensors").is_file() and not (out / "best" / "model.safetensors").exists()
    # MLflow: the run, its parameters, metrics per step and the best adapter as an artifact
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    import mlflow
    client = mlflow.tracking.MlflowClient(f"file:{store}")
    run = client.get_run((out / "mlflow_run_id").read_text().strip())
    assert run.info.status == "FINISHED" and run.info.run_name == "chat-lora"
    assert run.data.params["finetune"] == "lora"
    train = client.get_metric_history(run.info.run_id, "train_loss")
    assert [m.step for m in train] == list(range(1, report["steps"] + 1))
    val = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "val_loss")}
    assert round(val[report["best"]["step"]], 6) == round(report["best"]["val_loss"], 6)
    names = {a.path for a in client.list_artifacts(run.info.run_id, "best")}
    assert {"best/adapter_model.safetensors", "best/best.json"} <= names


def test_full_finetune_on_fsdp2_prompt_completion_padded(cluster, tiny_llm, tmp_path):
    out = tmp_path / "out" / "prompt-full"
    agent = cluster.start("prompt", SAMPLE, llm_args(
        tiny_llm, "prompt", "--finetune", "full", "--parallel", "fsdp", "--no-packing", "--seq-len", "32",
        "--batch-size", "8", "--micro-batch-size", "4", "--max-steps", "24", "--epochs", "2", "--eval-every", "6",
        "--lr", "3e-3", "--output-dir", str(out)), nproc=2)
    assert cluster.wait_all(200) == [0], cluster.dump()
    report = check_outputs(out, agent)
    assert report["finetune"] == "full" and report["parallel"] == "fsdp" and report["steps"] == 24
    assert report["data"]["train"]["shapes"]["prompt"] == 256 and report["data"]["train"]["packing"] is False
    # the gathered full model, loadable as it is
    cfg = json.loads((out / "best" / "config.json").read_text())
    assert cfg["model_type"] == "llama" and (out / "best" / "model.safetensors").stat().st_size > 100_000


def test_text_worker_killed_mid_epoch_resumes_mid_epoch_bit_identical(cluster, baseline, tiny_llm, tmp_path):
    args = llm_args(tiny_llm, "text", *KILL_ARGS)
    ref = baseline(SAMPLE, args)
    ref_evals = [e for e in map(parse_line, ref["_log"].splitlines()) if e and e[0] in ("EVAL", "EPOCH")]
    losses = [float(f["val_loss"]) for _, f in ref_evals]
    assert len(losses) >= 3 and losses[-1] < losses[0] - 0.05, losses       # the text shape learns too
    agents = elastic_pair(cluster, SAMPLE, args, tmp_path / "ck", FIXED_CONF)
    wait_train_step(cluster, agents, 11)
    t_kill = signal_worker(agents, 1)
    finish(cluster, agents)
    killed_at = last_step_before(agents, t_kill)
    res = first_resume_after(agents, t_kill)
    resumed = int(res[0]["step"])
    assert 0 < resumed < killed_at and int(res[0]["epoch"]) == 0 and int(res[0]["consumed"]) > 0   # mid-epoch
    assert {e["rng"] for e in res} == {"restored"}
    assert_resumes_were_complete(agents)
    d = final_result(agents, world_size=2)
    assert d["weights_sha256"] == ref["weights_sha256"] and d["final_loss"] == ref["final_loss"]
    assert d["best_val_loss"] == ref["best_val_loss"] and d["best_step"] == ref["best_step"]


def run_plain(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, str(TRAINING / SAMPLE), *args], env=base_env(), capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)


def error_lines(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.strip()]


def test_bad_input_is_one_line_and_nothing_trains(tiny_llm, tmp_path, capsys):
    """Each bad input is found before a process group, a tokenizer or a model exists. The cases found from the
    flags and files alone run in this process (``main()`` is what ``python llm_finetune.py`` calls); the one
    that needs the tokenizer runs as the real command, which shows the exit code and the one line end to end."""
    import importlib
    llm = importlib.import_module("llm_finetune")
    good = tiny_llm["data"]["chat"]
    bad = tmp_path / "train.jsonl"
    lines = (good / "train.jsonl").read_text().splitlines()
    lines[41] = lines[41][:-1]                                   # a record cut short: line 42
    bad.write_text("\n".join(lines) + "\n")
    empty = tmp_path / "val.jsonl"
    empty.write_text("\n")
    out = tmp_path / "out"
    splits = ["--train-file", str(good / "train.jsonl"), "--val-file", str(good / "val.jsonl")]
    cases = [
        (["--train-file", str(bad), "--val-file", str(good / "val.jsonl")], f"{bad}:42: not valid JSON"),
        (["--train-file", str(good / "train.jsonl"), "--val-file", str(empty)], f"{empty}: no records"),
        ([*splits, "--model-local-dir", str(tmp_path / "models" / "nope")], "--model-local-dir"),
        ([*splits, "--model-local-dir", str(tmp_path / "nope"), "--output-dir", str(out)], "no such folder"),
    ]
    for extra, expected in cases:
        code = llm.main(["--model-local-dir", str(tiny_llm["model"]), "--local-files-only", "--output-dir", str(out),
                         *extra])
        captured = capsys.readouterr()
        lines = [line for line in captured.err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1, (extra, captured.err[-2000:])
        assert lines[0].startswith("llm_finetune: error: ") and expected in lines[0], lines
        assert "[TRAIN]" not in captured.out
        assert not (out / "checkpoints").exists() and not (out / "report.json").exists()
    proc = run_plain(["--model-local-dir", str(tiny_llm["model_no_template"]), "--local-files-only",
                      "--output-dir", str(out), *splits], tmp_path)
    lines = error_lines(proc)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("llm_finetune: error: ") and "the tokenizer has no chat template" in lines[0], lines
    assert "Traceback" not in proc.stdout + proc.stderr and "[TRAIN]" not in proc.stdout
    assert not (out / "checkpoints").exists() and not (out / "report.json").exists()

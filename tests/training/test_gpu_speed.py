"""bench/gpu_speed.py on CPU: its FLOP counts against hand counts of small models, its peak table, and the
tiny configuration end to end (the samples' own main() and the plain loops, the arithmetic of every figure
it reports); and the sample flags it turns on and off (--compile, --reshard-after-forward, MNIST's --precision)."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from training_harness import PYTHON, TRAINING, base_env

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "gpu_speed.py"
sys.path.insert(0, str(ROOT / "bench"))

import gpu_speed  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def test_llm_flops_match_a_hand_count():
    """Llama, vocabulary 96, hidden 64, MLP 128, 2 layers, 4 heads of 16, 2 KV heads, untied head, T = 64.

    Per layer: q 64x64 = 4,096; k, v 64x32 = 2,048 each; o 4,096; gate, up, down 64x128 = 8,192 each; two
    RMSNorms of 64: 4,096 + 2 x 2,048 + 4,096 + 3 x 8,192 + 128 = 36,992. Two layers 73,984, final norm
    64, LM head 96 x 64 = 6,144: 80,192 parameters besides the input embedding (96 x 64, not counted).
    FLOPs per token: 6 x 80,192 = 481,152, attention 12 x 2 layers x 4 heads x 16 x 64 = 98,304: 579,456."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False))
    n = gpu_speed.nonembedding_params(model)
    assert n == 80_192
    assert gpu_speed.llm_flops_per_token(n, layers=2, heads=4, head_dim=16, seq_len=64) == 579_456


def test_t5_flops_match_a_hand_count():
    """The T5 sample's tiny config: d_model 64, 4 heads of 16, FF 128 (ReLU: wi, wo), 2 + 2 layers,
    vocabulary 384 (head tied to the embedding); source 32, target 8 positions.

    Encoder block: attention q, k, v, o 4 x 64 x 64 = 16,384, FF 2 x 64 x 128 = 16,384, two norms 128:
    32,896; x 2 + final norm 64 = 65,856. Decoder block: self- and cross-attention 2 x 16,384, FF 16,384,
    three norms 192: 49,344; x 2 + 64 = 98,752, of which the cross-attention K, V (2 layers x 2 x 64 x 64
    = 16,384) run over the 32 source positions, the other 82,368 over the 8 target positions.
    Linear: 6 x (65,856 x 32 + 82,368 x 8 + 16,384 x 32 + 64 x 384 x 8) = 6 x 3,487,232 = 20,923,392.
    Attention: 12 x 4 x 16 x (2 x 32 x 32 + 2 x (8 x 8 + 8 x 32)) = 768 x 2,688 = 2,064,384.
    Per sample: 22,987,776."""
    import torch
    from transformers import T5ForConditionalGeneration
    sys.path.insert(0, str(TRAINING))
    import t5_fsdp
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(t5_fsdp.tiny_config())
    assert gpu_speed.t5_flops_per_sample(model, 32, 8) == 22_987_776


def test_mnist_flops_match_a_hand_count():
    """conv1 32 x 26 x 26 outputs x 1 x 3 x 3 = 194,688 multiply-adds; conv2 64 x 24 x 24 x 32 x 9 =
    10,616,832; fc1 9,216 x 128 = 1,179,648; fc2 128 x 10 = 1,280: 11,992,448. Training: 3 x 2 x that
    = 71,954,688 per image."""
    sys.path.insert(0, str(TRAINING))
    import mnist_ddp
    assert gpu_speed.mnist_flops_per_sample(mnist_ddp.Net()) == 71_954_688


@pytest.mark.parametrize("name, tflops", [
    ("NVIDIA H100 80GB HBM3", 989.0), ("NVIDIA H100 PCIe", 756.0), ("NVIDIA H100 NVL", 835.0),
    ("NVIDIA H200", 989.0), ("NVIDIA H20", 148.0), ("NVIDIA A100-SXM4-80GB", 312.0),
    ("NVIDIA GeForce RTX 4090", None)])
def test_peak_table(name, tflops):
    assert gpu_speed.peak_bf16_tflops(name) == tflops


def test_steady_window_excludes_warmup():
    # steps 1..5, warm-up 2: the window runs from step 2's line (t=10.5) to step 5's (t=11.4)
    lines = [(1, 9.0, 10.0), (2, 0.5, 10.5), (3, 0.3, 10.8), (4, 0.3, 11.1), (5, 0.4, 11.4)]
    seconds, steps, median = gpu_speed.steady_window(lines, 2)
    assert (round(seconds, 6), steps, median) == (0.9, 3, 0.3)
    with pytest.raises(RuntimeError):
        gpu_speed.steady_window(lines[:2], 2)


@pytest.fixture(scope="module")
def tiny_bench(tmp_path_factory):
    """The tiny configuration of every sample, and the LLM under FSDP2 without resharding: 2 runs of 1 warm-up
    and 2 timed steps, a 1 TFLOP/s peak so that MFU is computed on CPU too."""
    out = tmp_path_factory.mktemp("gpu-speed")
    proc = subprocess.run([PYTHON, str(BENCH), "--tiny", "--runs", "2", "--warmup", "1", "--steps", "2",
                           "--variants", "base,llm:fsdp2 reshard:off,bf16:off", "--peak-tflops", "1",
                           "--json", str(out / "r.json"), "--workdir", str(out / "work")],
                          capture_output=True, text=True, timeout=170, env=base_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((out / "r.json").read_text()), proc.stdout


def test_tiny_bench_runs_every_sample_and_its_plain_loop(tiny_bench):
    doc, stdout = tiny_bench
    rows = {(r["sample"], r["variant"]): r for r in doc["results"]}
    assert set(rows) == {("llm", "base"), ("t5", "base"), ("mnist", "base"), ("llm", "fsdp2 reshard:off"),
                         ("llm", "bf16:off"), ("t5", "bf16:off"), ("mnist", "bf16:off")}
    for key in [("llm", "base"), ("t5", "base"), ("mnist", "base"), ("llm", "fsdp2 reshard:off")]:
        assert rows[key]["status"] == "ok", rows[key]
        assert len(rows[key]["runs"]["sample"]) == len(rows[key]["runs"]["plain"]) == 2
        assert all(r["steps"] == doc["info"]["steps"] for r in rows[key]["runs"]["sample"])
    # on CPU the base is fp32, so "bf16 off" is the base: said, not run
    assert all(rows[(s, "bf16:off")]["status"].startswith("skipped") for s in ("llm", "t5", "mnist"))
    assert rows[("llm", "fsdp2 reshard:off")]["options"]["fsdp"] is True
    assert rows[("llm", "fsdp2 reshard:off")]["options"]["reshard"] is False
    assert doc["info"]["size"] == "tiny" and doc["info"]["peak_bf16_tflops"] == 1.0
    table = stdout[stdout.index("sample/plain"):].splitlines()
    assert [line.split()[:2] for line in table[1:5]] == [["llm", "base"], ["llm", "fsdp2"], ["t5", "base"],
                                                         ["mnist", "base"]]
    assert "llm bf16:off: skipped: the CPU base is fp32 already" in table


def test_tiny_bench_arithmetic(tiny_bench):
    """Every reported figure follows from the measured step time and the model's FLOP count; the tiny LLM's
    count is the hand count of its config (vocabulary 80 of make_tiny_llm's tokenizer, hidden 64, MLP 128,
    2 layers, 4 heads of 16, 2 KV heads, T 64): 74,048 + 80 x 64 = 79,168 non-embedding parameters,
    6 x 79,168 + 98,304 = 573,312 FLOPs per token; 2 rows of 64 tokens a step."""
    doc, _ = tiny_bench
    llm = next(r for r in doc["results"] if (r["sample"], r["variant"]) == ("llm", "base"))
    assert llm["flops_per_item"] == 573_312 and llm["items_per_step"] == 128 and llm["unit"] == "tokens"
    assert doc["info"]["llm_nonembedding_params"] == 79_168
    for row in doc["results"]:
        if row["status"] != "ok":
            continue
        for who in ("sample", "plain"):
            for run in row["runs"][who]:
                assert run["step_s"] > 0
                assert run["items_per_s"] == pytest.approx(row["items_per_step"] / run["step_s"])
                assert run["achieved_tflops"] == pytest.approx(row["flops_per_item"] * run["items_per_s"] / 1e12)
                assert run["mfu"] == pytest.approx(run["achieved_tflops"] / 1.0)
                assert run["peak_memory_bytes"] is None            # not measured on CPU
            s = row["summary"][who]["items_per_s"]
            values = [r["items_per_s"] for r in row["runs"][who]]
            assert (s["median"], s["min"], s["max"]) == (statistics.median(values), min(values), max(values))
        assert row["summary"]["ratio"] == pytest.approx(
            row["summary"]["sample"]["items_per_s"]["median"] / row["summary"]["plain"]["items_per_s"]["median"])


def test_bench_usage_errors_are_one_line():
    for args in (["--samples", "bert"], ["--variants", "turbo"], ["--runs", "0"]):
        proc = subprocess.run([PYTHON, str(BENCH), *args], capture_output=True, text=True, timeout=60, env=base_env())
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith("gpu_speed.py: error:")


def test_llm_compile_wraps_each_layer_and_keeps_the_names():
    """--compile compiles each decoder layer's forward in place: the state dict (checkpoints, exports) keeps
    its names, and the layers are what the FSDP2 units are."""
    from transformers import LlamaConfig, LlamaForCausalLM
    sys.path.insert(0, str(TRAINING))
    import llm_finetune
    model = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                         num_attention_heads=2, num_key_value_heads=1))
    names = list(model.state_dict())
    plain = [layer.forward for layer in llm_finetune.decoder_layers(model)]
    assert llm_finetune.compile_layers(model) == 3
    assert list(model.state_dict()) == names
    for layer, before in zip(llm_finetune.decoder_layers(model), plain):
        assert layer.forward is not before and getattr(layer.forward, "_torchdynamo_orig_callable", None) == before


def test_sample_flags_parse():
    sys.path.insert(0, str(TRAINING))
    import llm_finetune
    import mnist_ddp
    import t5_fsdp
    a = llm_finetune.parse_args(["--model-local-dir", "m"])
    assert (a.compile, a.reshard_after_forward) == (False, True)
    a = llm_finetune.parse_args(["--model-local-dir", "m", "--compile", "--no-reshard-after-forward"])
    assert (a.compile, a.reshard_after_forward) == (True, False)
    assert t5_fsdp.parse_args(["--compile"]).compile is True
    m = mnist_ddp.parse_args([])
    assert (m.precision, m.compile) == ("fp32", False)
    assert mnist_ddp.parse_args(["--precision", "bf16", "--compile"]).precision == "bf16"


def test_mnist_bf16_on_cpu_is_one_line(tmp_path):
    proc = subprocess.run([PYTHON, str(TRAINING / "mnist_ddp.py"), "--device", "cpu", "--precision", "bf16"],
                          capture_output=True, text=True, timeout=60, env=base_env(), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["mnist_ddp: error: --precision bf16 needs a GPU; on CPU the sample "
                                                "trains in fp32"]


def test_a_failing_variant_is_its_row_and_the_next_still_runs(tmp_path):
    """A variant whose sample exits non-zero (here: its model folder is missing) is a failed row and the next
    variant still runs; past the deadline the rest are skipped, not run."""
    import os
    opts = gpu_speed.base_options(cuda=False)
    fx = {"model": str(tmp_path / "no-model"), "train": str(tmp_path / "train.jsonl"), "tokenizer_vocab": 80,
          "items_per_step": 128, "flops_per_item": 1, "unit": "tokens"}
    spec = {"sample": "llm", "variants": [["base", opts], ["act-ckpt:on", dict(opts, ac=True)]], "fx": fx,
            "shape": gpu_speed.TINY.llm, "size": gpu_speed.TINY.__dict__, "cuda": False, "runs": 1, "peak": None,
            "verbose": False, "deadline": 0}
    saved = dict(os.environ)            # the bench sets the torchrun variables of a world of one
    try:
        rows = []
        gpu_speed.run_variants(spec, rows.append)
        assert [r["variant"] for r in rows] == ["base", "act-ckpt:on"]
        assert all(r["status"].startswith("failed: RuntimeError: llm_finetune exited 2: ") for r in rows), rows
        late = []
        gpu_speed.run_variants(dict(spec, deadline=1.0), late.append)
        assert [r["status"] for r in late] == ["skipped: time budget"] * 2
    finally:
        os.environ.clear()
        os.environ.update(saved)

#!/usr/bin/env python3
"""How much of the GPU a training step of each sample uses: step time, tokens (samples) per second, peak
memory and MFU, each sample side by side with a plain PyTorch loop on the same model, data shape,
optimizer and precision (the ratio to beat), and every option a user turns on measured on and off.

    .venv/bin/python bench/gpu_speed.py                       # CPU: the tiny configuration (a smoke check)
    python3 bench/gpu_speed.py --json out.json --budget-s 420 # on a GPU: the full configuration

Samples, run in-process through their own ``main(argv)`` as a world of one (the bench sets the torchrun
variables ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT`` as ``torchrun --nproc-per-node=1`` would):

  llm    training/llm_finetune.py, full fine-tune of a Llama-style model built here from a config (about
         1.1 B parameters: hidden 2048, 16 layers, 32 heads, 8 KV heads, MLP 8192, vocabulary 32000, untied
         head), random weights saved with save_pretrained and loaded by the sample's from_pretrained path;
         packed rows of 2048 tokens, 4 rows a step
  t5     training/t5_fsdp.py, FSDP2, a T5 of t5-base's shape (random weights), 512 source + 128 target tokens
  mnist  training/mnist_ddp.py, DDP, the sample's CNN on MNIST-shaped idx files written here

Each (sample, variant) runs ``--runs`` times (default 3) alternately with its plain loop; each run has
``--warmup`` steps that are not timed. The sample's step time is read from its own ``[TRAIN]`` lines
(``--log-every 1``; the window from the end of the last warm-up step to the end of the last step); the
plain loop's between two device synchronisations. Peak memory: ``torch.cuda.max_memory_allocated`` of the
run (on CPU: not measured). MFU = model FLOPs per token x tokens/s / the chip's dense bf16 peak.

Model FLOPs, as torchtitan counts them (torchtitan v0.2.2 torchtitan/models/utils.py
``get_dense_model_nparams_and_flops``; v0.1.0 ``get_num_flop_per_token``): per token of a decoder,
``6 * N + 12 * L * H * Q * T`` with N the parameters less the input embedding, L layers, H heads, Q the
head dimension and T the sequence length (attention counted dense, causal sparsity not subtracted,
recomputation not counted). T5 and the CNN are counted the same way (6 x the parameters each token or
image passes through, plus the attention matmuls; see ``t5_flops_per_sample`` and
``mnist_flops_per_sample``). Peaks: torchtitan v0.2.2 torchtitan/tools/utils.py ``get_peak_flops``.

On a machine without CUDA (or with ``--tiny``) every model is tiny and the run takes seconds: it checks
the arithmetic and the plumbing (the same code paths), not the speed; bf16 variants need a GPU and are
skipped there.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAINING = ROOT / "training"
if str(TRAINING) not in sys.path:
    sys.path.insert(0, str(TRAINING))

# Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s, by a substring of the device name, first match wins.
# The figures and their datasheets are torchtitan v0.2.2 torchtitan/tools/utils.py get_peak_flops.
PEAK_BF16_TFLOPS = (
    ("H100 NVL", 835.0),       # nvidia.com/en-us/data-center/h100/
    ("H100 PCIe", 756.0),
    ("H100", 989.0),           # SXM and other variants ("NVIDIA H100 80GB HBM3")
    ("H200", 989.0),           # nvidia.com/en-us/data-center/h200/
    ("H20", 148.0),
    ("A100", 312.0),           # nvidia.com/en-us/data-center/a100/
    ("B200", 2250.0),
    ("MI355X", 2500.0),
    ("MI300X", 1300.0),
    ("MI325X", 1300.0),
    ("MI250X", 191.5),
)


def peak_bf16_tflops(device_name: str) -> float | None:
    """The chip's dense bf16 peak (TFLOP/s) from its name; None when the table does not know it."""
    for key, tflops in PEAK_BF16_TFLOPS:
        if key in device_name:
            return tflops
    return None


# -- model FLOPs ------------------------------------------------------------------
def nonembedding_params(model) -> int:
    """Parameters less the input embedding (each shared tensor once), as torchtitan subtracts
    ``nn.Embedding`` children; an untied output head stays in (its matmul is counted)."""
    total = sum(p.numel() for p in model.parameters())
    return total - model.get_input_embeddings().weight.numel()


def llm_flops_per_token(n_nonembedding: int, layers: int, heads: int, head_dim: int, seq_len: int) -> int:
    """torchtitan's count: 6 N (2 forward + 4 backward per weight) + 12 L H Q T (QK^T and AV: 2 matmuls
    forward, 4 backward, 2 FLOPs a multiply-add, dense over T keys)."""
    return 6 * n_nonembedding + 12 * layers * heads * head_dim * seq_len


def t5_flops_per_sample(model, src_len: int, tgt_len: int) -> int:
    """One training sample of an encoder-decoder, torchtitan's rule applied to each part: 6 x the weights
    each position passes through (encoder weights x source positions; decoder weights x target positions,
    except the cross-attention K/V projections, which run over the source positions; the LM head, tied or
    not, x target positions) + 12 H Q x (the keys each query attends: encoder S x S, decoder T x T
    self-attention and T x S cross-attention) per layer. Relative position biases and layer norms: no
    matmul, no FLOPs but their 6 x weights (layer norm weights are counted like torchtitan's norms)."""
    cfg = model.config
    d, v, h, q = cfg.d_model, cfg.vocab_size, cfg.num_heads, cfg.d_kv
    enc = sum(p.numel() for n, p in model.encoder.named_parameters() if "relative_attention_bias" not in n
              and not n.startswith("embed_tokens"))
    dec_all = sum(p.numel() for n, p in model.decoder.named_parameters() if "relative_attention_bias" not in n
                  and not n.startswith("embed_tokens"))
    cross_kv = cfg.num_decoder_layers * 2 * d * h * q
    dec = dec_all - cross_kv
    linear = 6 * (enc * src_len + dec * tgt_len + cross_kv * src_len + d * v * tgt_len)
    attention = 12 * h * q * (cfg.num_layers * src_len * src_len
                              + cfg.num_decoder_layers * (tgt_len * tgt_len + tgt_len * src_len))
    return linear + attention


def mnist_flops_per_sample(model) -> int:
    """3 x the forward FLOPs (forward 1, backward 2) of the convolutions and linear layers, 2 a
    multiply-add: a convolution does out_channels x out_h x out_w x in_channels x k_h x k_w of them
    (28x28 input, so conv1 26x26, conv2 24x24)."""
    conv1, conv2 = model.conv1, model.conv2
    macs = 0
    h = 28
    for conv in (conv1, conv2):
        h = h - conv.kernel_size[0] + 1
        macs += conv.out_channels * h * h * conv.in_channels * conv.kernel_size[0] * conv.kernel_size[1]
    macs += model.fc1.in_features * model.fc1.out_features + model.fc2.in_features * model.fc2.out_features
    return 3 * 2 * macs


# -- configurations ---------------------------------------------------------------
@dataclass
class Size:
    """Shapes of one configuration (full on a GPU, tiny on CPU)."""
    llm: dict
    t5: dict
    mnist: dict
    warmup: int
    steps: int


FULL = Size(
    llm=dict(hidden=2048, layers=16, heads=32, kv_heads=8, intermediate=8192, vocab=32000, seq_len=2048,
             batch=4),
    t5=dict(d_model=768, d_ff=3072, layers=12, heads=12, d_kv=64, vocab=32128, src=512, tgt=128, batch=32),
    mnist=dict(batch=1024),
    warmup=3, steps=8)
TINY = Size(
    llm=dict(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=None, seq_len=64, batch=2),
    t5=dict(tiny=True, src=32, tgt=8, batch=4),
    mnist=dict(batch=16),
    warmup=2, steps=4)

# (name, options): "base" first; every other variant turns one option of the base on or off.
LLM_VARIANTS = [
    ("base", {}),
    ("compile:on", {"compile": True}),
    ("act-ckpt:on", {"ac": True}),
    ("attn:eager", {"attn": "eager"}),
    ("fsdp2 reshard:on", {"fsdp": True, "reshard": True}),
    ("fsdp2 reshard:off", {"fsdp": True, "reshard": False}),
    ("bf16:off", {"bf16": False}),
]
T5_VARIANTS = [
    ("base", {}),                                 # FSDP2, reshard after forward (the sample's default)
    ("compile:on", {"compile": True}),
    ("attn:eager", {"attn": "eager"}),
    ("act-ckpt:on", {"ac": True}),
    ("fsdp2 reshard:off", {"reshard": False}),
    ("bf16:off", {"bf16": False}),
]
MNIST_VARIANTS = [
    ("base", {}),
    ("compile:on", {"compile": True}),
    ("bf16:off", {"bf16": False}),
]
VARIANTS = {"llm": LLM_VARIANTS, "t5": T5_VARIANTS, "mnist": MNIST_VARIANTS}
# What the attention toggle would mean where a sample has no such choice.
NOT_APPLICABLE = {
    "t5": "FSDP2 is always on (the sample has no DDP path); attention 'sdpa' is transformers' default for T5 "
          "where the installed release has it (5.23 has; the sample's [SETUP] line names the one used)",
    "mnist": "attention, activation checkpointing, FSDP2: not in a CNN trained with DDP",
}


def base_options(cuda: bool) -> dict:
    return {"bf16": cuda, "compile": False, "attn": "sdpa", "ac": False, "fsdp": False, "reshard": True}


# -- fixtures written once per bench run -------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def world_of_one() -> None:
    """The variables torchrun --nproc-per-node=1 sets, with a fresh rendezvous port for each run."""
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", GROUP_RANK="0",
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))


def llm_config(shape: dict, tok):
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=shape["vocab"] or len(tok), hidden_size=shape["hidden"],
                       intermediate_size=shape["intermediate"], num_hidden_layers=shape["layers"],
                       num_attention_heads=shape["heads"], num_key_value_heads=shape["kv_heads"],
                       max_position_embeddings=max(2048, shape["seq_len"]), rope_theta=500000.0,
                       bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                       pad_token_id=tok.pad_token_id, tie_word_embeddings=False)


def llm_records(tok, seq_len: int, rows: int) -> list[str]:
    """Text records of exactly seq_len / 2 tokens (BOS + words + EOS): the sample packs two into each row
    of seq_len, so every row is full and tokens per step = rows x seq_len."""
    import make_tiny_llm as mk
    words = seq_len // 2 - 2
    out = []
    for r in range(2 * rows):
        out.append(json.dumps({"text": " ".join(mk.NUMBERS[(r + i) % len(mk.NUMBERS)] for i in range(words))}))
    return out


def prepare_llm(work: Path, shape: dict, rows: int, device: str) -> dict:
    import torch
    import make_tiny_llm as mk
    from transformers import LlamaForCausalLM
    tok = mk.build_tokenizer()
    cfg = llm_config(shape, tok)
    folder = work / "llm-model"
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(cfg)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    n_nonemb = nonembedding_params(model)
    del model
    data = work / "llm-train.jsonl"
    data.write_text("\n".join(llm_records(tok, shape["seq_len"], rows)) + "\n")
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    return {"model": str(folder), "train": str(data), "tokenizer_vocab": len(tok), "vocab": cfg.vocab_size,
            "nonembedding_params": n_nonemb,
            "flops_per_item": llm_flops_per_token(n_nonemb, cfg.num_hidden_layers, cfg.num_attention_heads,
                                                  head_dim, shape["seq_len"]),
            "items_per_step": shape["batch"] * shape["seq_len"], "unit": "tokens"}


def t5_config(shape: dict):
    if shape.get("tiny"):
        import t5_fsdp
        return t5_fsdp.tiny_config()
    from transformers import T5Config
    return T5Config(vocab_size=shape["vocab"], d_model=shape["d_model"], d_kv=shape["d_kv"], d_ff=shape["d_ff"],
                    num_layers=shape["layers"], num_decoder_layers=shape["layers"], num_heads=shape["heads"],
                    decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)


def prepare_t5(work: Path, shape: dict, device: str) -> dict:
    import torch
    from transformers import T5ForConditionalGeneration
    cfg = t5_config(shape)
    torch.manual_seed(0)
    with torch.device(device):
        model = T5ForConditionalGeneration(cfg)
    folder = None
    if not shape.get("tiny"):
        folder = work / "t5-model"
        model.save_pretrained(folder)
    flops = t5_flops_per_sample(model, shape["src"], shape["tgt"])
    del model
    return {"model": str(folder) if folder else None, "flops_per_item": flops, "items_per_step": shape["batch"],
            "unit": "samples", "tokens_per_item": shape["src"] + shape["tgt"]}


def write_idx(folder: Path, n_train: int, n_test: int) -> None:
    """MNIST-format idx files of random digits (the standard names; content is irrelevant to speed)."""
    import numpy as np
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for stem, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        (folder / f"{stem}-images-idx3-ubyte").write_bytes(
            (2051).to_bytes(4, "big") + n.to_bytes(4, "big") + (28).to_bytes(4, "big") + (28).to_bytes(4, "big")
            + images.tobytes())
        (folder / f"{stem}-labels-idx1-ubyte").write_bytes((2049).to_bytes(4, "big") + n.to_bytes(4, "big")
                                                          + labels.tobytes())


def prepare_mnist(work: Path, shape: dict, steps: int) -> dict:
    import mnist_ddp
    write_idx(work / "mnist", shape["batch"] * (steps + 2), 64)
    return {"data": str(work / "mnist"), "cache": str(work / "mnist-cache"),
            "flops_per_item": mnist_flops_per_sample(mnist_ddp.Net()), "items_per_step": shape["batch"],
            "unit": "samples"}


# -- one run of a sample ------------------------------------------------------------
class _Tee(io.TextIOBase):
    def __init__(self, echo):
        self.buf, self.echo = io.StringIO(), echo

    def write(self, s):
        self.buf.write(s)
        if self.echo is not None:
            self.echo.write(s)
        return len(s)

    def flush(self):
        if self.echo is not None:
            self.echo.flush()


def sample_argv(sample: str, fx: dict, shape: dict, opts: dict, steps: int, cuda: bool) -> list[str]:
    common = ["--max-steps", str(steps), "--epochs", "1000", "--log-every", "1", "--checkpoint-every", "0",
              "--device", "cuda" if cuda else "cpu"]
    prec = ["--precision", "bf16" if opts["bf16"] else "fp32"]
    comp = ["--compile"] if opts["compile"] else []
    ac = ["--activation-checkpointing"] if opts["ac"] else []
    if sample == "llm":
        par = ["--parallel", "fsdp", "--reshard-after-forward" if opts["reshard"] else "--no-reshard-after-forward"] \
            if opts["fsdp"] else ["--parallel", "ddp"]
        return [*common, *prec, *comp, *ac, *par, "--model-local-dir", fx["model"], "--local-files-only",
                "--train-file", fx["train"], "--val-file", "", "--finetune", "full", "--seq-len",
                str(shape["seq_len"]), "--batch-size", str(shape["batch"]), "--attn-implementation", opts["attn"],
                "--warmup-steps", "0"]
    if sample == "t5":
        model = ["--tiny"] if fx["model"] is None else ["--model_id", fx["model"], "--local-files-only"]
        attn = ["--attn-implementation", opts["attn"]] if opts["attn"] != "sdpa" else []
        return [*common, *prec, *comp, *ac, *attn, *model, "--samples", str(shape["batch"] * (steps + 2)),
                "--max-source-len", str(shape["src"]), "--max-target-len", str(shape["tgt"]),
                "--batch-size", str(shape["batch"]), "--sharding-strategy", "full" if opts["reshard"] else "no-reshard"]
    return [*common, *prec, *comp, "--data-dir", fx["data"], "--cache-dir", fx["cache"],
            "--batch-size", str(shape["batch"]), "--test-limit", "64"]


def parse_train_lines(text: str) -> list[tuple[int, float, float]]:
    """(step, step_s, ts) of each [TRAIN] line of a sample's log."""
    from trainkit import parse_line
    out = []
    for line in text.splitlines():
        parsed = parse_line(line)
        if parsed and parsed[0] == "TRAIN":
            f = parsed[1]
            out.append((int(f["step"]), float(f["step_s"]), float(f["ts"])))
    return out


def steady_window(lines: list[tuple[int, float, float]], warmup: int) -> tuple[float, int, float]:
    """(seconds, steps, median step_s) of the steps after ``warmup``: from the log line of the last warm-up
    step to the last line (each line is written when its step has finished)."""
    start = [ts for step, _, ts in lines if step == warmup]
    after = [(step, s, ts) for step, s, ts in lines if step > warmup]
    if not start or not after:
        raise RuntimeError(f"no steady-state [TRAIN] lines after {warmup} warm-up steps")
    seconds = after[-1][2] - start[0]
    return seconds, after[-1][0] - warmup, statistics.median(s for _, s, _ in after)


def run_sample(sample: str, fx: dict, shape: dict, opts: dict, size: Size, cuda: bool, echo=None) -> dict:
    import torch
    mod = {"llm": "llm_finetune", "t5": "t5_fsdp", "mnist": "mnist_ddp"}[sample]
    main = __import__(mod).main
    argv = sample_argv(sample, fx, shape, opts, size.warmup + size.steps, cuda)
    world_of_one()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    tee = _Tee(echo)
    with contextlib.redirect_stdout(tee):
        rc = main(argv)
    if rc:
        raise RuntimeError(f"{mod} exited {rc}: {' '.join(argv)}")
    seconds, steps, median = steady_window(parse_train_lines(tee.buf.getvalue()), size.warmup)
    peak = int(torch.cuda.max_memory_allocated()) if cuda else None
    return {"step_s": seconds / steps, "step_s_median": median, "steps": steps, "peak_memory_bytes": peak}


# -- one run of the plain loop ------------------------------------------------------
def _compile_forward(modules) -> None:
    import torch
    for m in modules:
        m.forward = torch.compile(m.forward)


def _fsdp(blocks, root, bf16: bool, reshard: bool) -> None:
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mesh = init_device_mesh("cuda" if torch.cuda.is_available() and next(root.parameters()).is_cuda else "cpu",
                            (1,), mesh_dim_names=("shard",))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else MixedPrecisionPolicy()
    for b in blocks:
        fully_shard(b, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard)
    fully_shard(root, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard)


def run_plain(sample: str, fx: dict, shape: dict, opts: dict, size: Size, cuda: bool) -> dict:
    """The same model, batch shape, optimizer and precision in a bare loop: no data pipeline, no per-step
    host synchronisation, no logging; the device synchronised only around the timed window."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    dev = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    world_of_one()
    if not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo", rank=0, world_size=1)
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    use_fsdp = opts["fsdp"] or sample == "t5"
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if opts["bf16"] and not use_fsdp \
        else contextlib.nullcontext
    if sample == "llm":
        from transformers import AutoConfig, LlamaForCausalLM
        cfg = AutoConfig.from_pretrained(fx["model"], local_files_only=True)
        cfg._attn_implementation = opts["attn"]
        with dev:
            model = LlamaForCausalLM(cfg)
        model.config.use_cache = False
        blocks = list(model.model.layers)
        ids = torch.randint(0, fx["tokenizer_vocab"], (shape["batch"], shape["seq_len"]), device=dev)

        def loss_fn():
            logits = model(input_ids=ids, use_cache=False).logits
            return F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
        make_opt = lambda params: torch.optim.AdamW(params, lr=2e-4)  # noqa: E731
    elif sample == "t5":
        from transformers import T5ForConditionalGeneration
        cfg = t5_config(shape)
        if opts["attn"] != "sdpa":
            cfg._attn_implementation = opts["attn"]
        with dev:
            model = T5ForConditionalGeneration(cfg)
        blocks = list(model.encoder.block) + list(model.decoder.block)
        src = torch.randint(2, 384, (shape["batch"], shape["src"]), device=dev)
        tgt = torch.randint(2, 384, (shape["batch"], shape["tgt"]), device=dev)
        mask = torch.ones_like(src)

        def loss_fn():
            return model(input_ids=src, attention_mask=mask, labels=tgt).loss
        make_opt = lambda params: torch.optim.AdamW(params, lr=3e-4, weight_decay=0.01)  # noqa: E731
    else:
        import mnist_ddp
        model = mnist_ddp.Net().to(dev)
        blocks = []
        x = torch.randn(shape["batch"], 1, 28, 28, device=dev)
        y = torch.randint(0, 10, (shape["batch"],), device=dev)
        net = torch.compile(model) if opts["compile"] else model

        def loss_fn():
            return F.nll_loss(net(x).float(), y)
        make_opt = lambda params: torch.optim.Adadelta(params, lr=1.0)  # noqa: E731
    if opts["ac"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if opts["compile"] and blocks:
        _compile_forward(blocks)
    if use_fsdp:
        _fsdp(blocks, model, opts["bf16"], opts["reshard"])
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_opt(params)
    clip = sample != "mnist"                 # the fine-tunes clip at 1.0 by default; the MNIST sample does not

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_fn()
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    def sync():
        if cuda:
            torch.cuda.synchronize()
    for _ in range(size.warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(size.steps):
        step()
    sync()
    seconds = time.perf_counter() - t0
    peak = int(torch.cuda.max_memory_allocated()) if cuda else None
    del model, opt, params
    dist.destroy_process_group()
    return {"step_s": seconds / size.steps, "step_s_median": None, "steps": size.steps, "peak_memory_bytes": peak}


# -- a variant: runs of both, alternately ------------------------------------------------
def figures(run: dict, fx: dict, peak_tflops: float | None) -> dict:
    items_s = fx["items_per_step"] / run["step_s"]
    tflops = fx["flops_per_item"] * items_s / 1e12
    return dict(run, items_per_s=items_s, achieved_tflops=tflops,
                mfu=tflops / peak_tflops if peak_tflops else None)


def spread(values: list) -> dict | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure_variant(sample: str, variant: str, opts: dict, fx: dict, shape: dict, size: Size, cuda: bool,
                    runs: int, peak_tflops: float | None, echo=None) -> dict:
    out = {"sample": sample, "variant": variant, "options": opts, "unit": fx["unit"],
           "items_per_step": fx["items_per_step"], "flops_per_item": fx["flops_per_item"],
           "runs": {"sample": [], "plain": []}}
    for _ in range(runs):
        out["runs"]["sample"].append(figures(run_sample(sample, fx, shape, opts, size, cuda, echo), fx, peak_tflops))
        gc.collect()
        out["runs"]["plain"].append(figures(run_plain(sample, fx, shape, opts, size, cuda), fx, peak_tflops))
        gc.collect()
    summary = {}
    for who in ("sample", "plain"):
        rs = out["runs"][who]
        summary[who] = {k: spread([r[k] for r in rs]) for k in
                        ("step_s", "items_per_s", "achieved_tflops", "mfu", "peak_memory_bytes")}
    summary["ratio"] = summary["sample"]["items_per_s"]["median"] / summary["plain"]["items_per_s"]["median"]
    out["summary"] = summary
    out["status"] = "ok"
    return out


# -- the bench --------------------------------------------------------------------
def device_info(cuda: bool, peak_override: float | None) -> dict:
    import torch
    import transformers
    name = torch.cuda.get_device_name() if cuda else f"CPU ({os.cpu_count()} cores)"
    peak = peak_override if peak_override is not None else (peak_bf16_tflops(name) if cuda else None)
    return {"device": name, "torch": torch.__version__, "transformers": transformers.__version__,
            "peak_bf16_tflops": peak, "peak_source": "--peak-tflops" if peak_override is not None else
            "torchtitan v0.2.2 tools/utils.py get_peak_flops" if peak else None}


def matmul_tflops() -> float:
    """bf16 8192^3 matrix product on random data (median of 10 after 3 warm-ups, CUDA events)."""
    import torch
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return 2 * n ** 3 / statistics.median(times) / 1e12


def plan(samples: list[str], only: set[str] | None, cuda: bool) -> list[tuple[str, str, dict, str | None]]:
    """(sample, variant, options, reason it is skipped or None), each sample's base first and fp32 last."""
    out = []
    for sample in samples:
        rows = []
        for name, change in VARIANTS[sample]:
            if only and name not in only and f"{sample}:{name}" not in only:
                continue
            opts = dict(base_options(cuda), **change)
            if sample == "t5":
                opts["fsdp"] = True                 # the T5 sample always shards with FSDP2
            skip = None
            if opts["bf16"] and not cuda:
                skip = "bf16 needs a GPU"
            if not cuda and name == "bf16:off":
                skip = "the CPU base is fp32 already"
            rows.append((sample, name, opts, skip))
        out += sorted(rows, key=lambda t: {"base": 0, "bf16:off": 2}.get(t[1], 1))
    return out


# Shares of --budget-s, cumulative: the LLM may use the first 60 %, T5 up to 85 %, MNIST the rest; time a
# sample leaves unused goes to the next.
BUDGET_SHARE = {"llm": 0.6, "t5": 0.85, "mnist": 1.0}


def failure(row: dict, exc: BaseException) -> dict:
    text = str(exc)
    msg = "out of memory" if "out of memory" in text.lower() else \
        f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
    return dict(row, status=f"failed: {msg[:300]}")


def run_variants(spec: dict, on_result) -> None:
    """Measure spec's variants in order, in this process; ``on_result(row)`` after each. A variant that
    fails is its row (the process goes on: an out-of-memory leaves the allocator usable); once the
    deadline (time.time()) has passed, the rest are skipped."""
    size = Size(**spec["size"])
    echo = sys.stderr if spec["verbose"] else None
    for variant, opts in spec["variants"]:
        row = {"sample": spec["sample"], "variant": variant, "options": opts}
        if spec["deadline"] and time.time() > spec["deadline"]:
            on_result(dict(row, status="skipped: time budget", wall_s=0.0))
            continue
        t0 = time.perf_counter()
        try:
            res = measure_variant(spec["sample"], variant, opts, spec["fx"], spec["shape"], size, spec["cuda"],
                                  spec["runs"], spec["peak"], echo=echo)
        except Exception as exc:  # noqa: BLE001  (one variant's failure is its row; the others still run)
            res = failure(row, exc)
        gc.collect()
        if spec["cuda"]:
            import torch
            torch.cuda.empty_cache()
        res["wall_s"] = round(time.perf_counter() - t0, 1)
        on_result(res)


def worker_main(spec_path: str) -> int:
    """A sample's variants in a fresh process (GPU memory and CUDA state start clean); its rows are
    rewritten to spec["result"] after each, so a crash loses only the variant it happened in."""
    spec = json.loads(Path(spec_path).read_text())
    import warnings
    warnings.filterwarnings("ignore")
    from huggingface_hub.utils import disable_progress_bars
    disable_progress_bars()
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
    done: list[dict] = []
    result = Path(spec["result"])

    def on_result(row):
        done.append(row)
        tmp = result.with_suffix(".tmp")
        tmp.write_text(json.dumps(done))
        os.replace(tmp, result)
    run_variants(spec, on_result)
    return 0


def run_isolated(work: Path, spec: dict, on_result, timeout_s: float) -> None:
    """spec's variants in worker processes: one for all of them, and after a crash a new one for the
    variants after the one it crashed in (that one is a failed row)."""
    pending = list(spec["variants"])
    n = 0
    while pending:
        n += 1
        spec_path = work / f"spec-{spec['sample']}-{n}.json"
        result = spec_path.with_suffix(".result.json")
        spec_path.write_text(json.dumps(dict(spec, variants=pending, result=str(result))))
        timeout = max(60.0, spec["deadline"] - time.time() + timeout_s) if spec["deadline"] else None
        try:
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(spec_path)],
                                  capture_output=True, text=True, timeout=timeout, env=os.environ.copy())
            rc, tail = proc.returncode, (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        except subprocess.TimeoutExpired:
            rc, tail = "timeout", [f"no result within {timeout:.0f} s"]
        rows = json.loads(result.read_text()) if result.is_file() else []
        for row in rows:
            on_result(row)
        pending = pending[len(rows):]
        if pending and (rc != 0 or not rows):
            variant, opts = pending.pop(0)
            row = {"sample": spec["sample"], "variant": variant, "options": opts}
            on_result(failure(row, RuntimeError(f"worker exit {rc}: {' | '.join(tail)[-400:]}")))


def fmt_row(r: dict, base: dict | None) -> list[str]:
    if r["status"] != "ok":
        return [r["sample"], r["variant"], r["status"]]
    s, p = r["summary"]["sample"], r["summary"]["plain"]

    def ms(x):
        return f"{x['median'] * 1e3:.1f} [{x['min'] * 1e3:.1f}-{x['max'] * 1e3:.1f}]"

    def rate(x):
        return f"{x['median']:,.0f}"

    def pct(x):
        return "n/a" if x is None else f"{100 * x['median']:.1f}%"

    def gib(x):
        return "n/a" if x is None else f"{x['median'] / 2**30:.1f}"
    vs = ""
    if base is not None and base["status"] == "ok" and r is not base:
        vs = f"{s['items_per_s']['median'] / base['summary']['sample']['items_per_s']['median']:.2f}x"
    return [r["sample"], r["variant"], ms(s["step_s"]), rate(s["items_per_s"]), pct(s["mfu"]), gib(s["peak_memory_bytes"]),
            ms(p["step_s"]), rate(p["items_per_s"]), pct(p["mfu"]), f"{r['summary']['ratio']:.2f}", vs]


def print_table(results: list[dict], info: dict) -> None:
    head = ["sample", "variant", "step ms [min-max]", "items/s", "MFU", "peak GiB", "plain step ms", "plain items/s",
            "plain MFU", "sample/plain", "vs base"]
    rows = [head]
    bases = {r["sample"]: r for r in results if r["variant"] == "base"}
    for r in results:
        if r["status"] == "ok":
            rows.append(fmt_row(r, bases.get(r["sample"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    for r in results:
        if r["status"] != "ok":
            print(f"{r['sample']} {r['variant']}: {r['status']}")
    units = sorted({f"{r['sample']}: {r['unit']}" for r in results if "unit" in r})
    print(f"# items: {', '.join(units)}; MFU over {info['peak_bf16_tflops'] or 'no known'} TFLOP/s bf16 "
          f"({info['peak_source'] or 'no peak for this device: MFU not computed'})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--tiny", action="store_true", help="tiny models (automatic without CUDA)")
    p.add_argument("--samples", default="llm,t5,mnist", help="comma-separated: llm, t5, mnist")
    p.add_argument("--variants", default="", help="comma-separated variant names (e.g. base,compile:on or "
                                                  "llm:attn:eager); default all")
    p.add_argument("--runs", type=int, default=3, help="runs of each (sample and plain loop) per variant")
    p.add_argument("--warmup", type=int, default=None, help="untimed steps per run (default: the size's)")
    p.add_argument("--steps", type=int, default=None, help="timed steps per run (default: the size's)")
    p.add_argument("--peak-tflops", type=float, default=None,
                   help="the chip's bf16 peak, for a device the table does not know (or to check MFU on CPU)")
    p.add_argument("--budget-s", type=float, default=0, help="start no new variant after this many seconds (0: none)")
    p.add_argument("--variant-timeout-s", type=float, default=300,
                   help="with --budget-s: how long a sample's process may run past its share of the budget")
    p.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                   help="each sample's variants in a fresh process (default: on CUDA yes, on CPU no)")
    p.add_argument("--json", default=None, help="write every figure here (rewritten after each variant)")
    p.add_argument("--workdir", default=None, help="for the model folders and data (default: a temp folder)")
    p.add_argument("--verbose", action="store_true", help="echo the samples' logs to stderr")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker_main(args.worker)
    for flag in ("runs", "warmup", "steps"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            p.error(f"--{flag} must be at least 1")
    samples = [s.strip() for s in args.samples.split(",") if s.strip()]
    for s in samples:
        if s not in VARIANTS:
            p.error(f"--samples: unknown sample {s!r} (llm, t5, mnist)")
    known = {n for vs in VARIANTS.values() for n, _ in vs} | {f"{s}:{n}" for s, vs in VARIANTS.items() for n, _ in vs}
    only = {v.strip() for v in args.variants.split(",") if v.strip()} or None
    for v in only or ():
        if v not in known:
            p.error(f"--variants: unknown variant {v!r} (known: {', '.join(n for n, _ in LLM_VARIANTS)})")

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import warnings
    warnings.filterwarnings("ignore")
    try:
        import torch
        import transformers  # noqa: F401
        from huggingface_hub.utils import disable_progress_bars
    except ImportError as exc:
        print(f"gpu_speed: error: {sys.executable} cannot import {exc.name} (the samples need torch and "
              "transformers: make venv-full, or the device image's python3)", file=sys.stderr)
        return 2
    disable_progress_bars()
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
    cuda = torch.cuda.is_available() and not args.tiny
    size = FULL if cuda else TINY
    size = Size(size.llm, size.t5, size.mnist, args.warmup or size.warmup, args.steps or size.steps)
    isolate = cuda if args.isolate is None else args.isolate
    info = device_info(cuda, args.peak_tflops)
    info.update(size="full" if cuda else "tiny", warmup=size.warmup, steps=size.steps, runs=args.runs)
    t_start = time.perf_counter()
    if cuda:
        info["matmul_bf16_tflops"] = round(matmul_tflops(), 1)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="gpu-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"# gpu_speed: {info['device']}, torch {info['torch']}, transformers {info['transformers']}, "
          f"{info['size']} configuration, {size.warmup} warm-up + {size.steps} timed steps, {args.runs} runs"
          + (f", bf16 matmul {info['matmul_bf16_tflops']} TFLOP/s measured" if cuda else ""), flush=True)

    steps_total = size.warmup + size.steps
    dev = "cuda" if cuda else "cpu"
    fixtures, shapes = {}, {"llm": size.llm, "t5": size.t5, "mnist": size.mnist}
    results: list[dict] = []
    doc = {"info": info, "shapes": shapes, "not_applicable": NOT_APPLICABLE, "results": results}

    def dump():
        if args.json:
            Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")

    def record(res: dict) -> None:
        results.append(res)
        dump()
        base = next((r for r in results if r["sample"] == res["sample"] and r["variant"] == "base"), None)
        print("  ".join(c for c in fmt_row(res, base) if c), flush=True)

    todo = plan(samples, only, cuda)
    for sample in samples:
        variants = []
        for s_, variant, opts, skip in todo:
            if s_ != sample:
                continue
            if skip:
                record({"sample": sample, "variant": variant, "options": opts, "status": f"skipped: {skip}"})
            else:
                variants.append((variant, opts))
        if not variants:
            continue
        deadline = time.time() + args.budget_s * BUDGET_SHARE[sample] - (time.perf_counter() - t_start) \
            if args.budget_s else 0
        try:
            if sample not in fixtures:
                fixtures[sample] = (prepare_llm(work, size.llm, steps_total + 2, dev) if sample == "llm" else
                                    prepare_t5(work, size.t5, dev) if sample == "t5" else
                                    prepare_mnist(work, size.mnist, steps_total))
                if sample == "llm":
                    info["llm_nonembedding_params"] = fixtures[sample]["nonembedding_params"]
        except Exception as exc:  # noqa: BLE001
            for variant, opts in variants:
                record(failure({"sample": sample, "variant": variant, "options": opts}, exc))
            continue
        spec = {"sample": sample, "variants": variants, "fx": fixtures[sample], "shape": shapes[sample],
                "size": size.__dict__, "cuda": cuda, "runs": args.runs, "peak": info["peak_bf16_tflops"],
                "verbose": args.verbose, "deadline": deadline}
        if isolate:
            run_isolated(work, spec, record, args.variant_timeout_s)
        else:
            run_variants(spec, record)
    info["wall_s"] = round(time.perf_counter() - t_start, 1)
    dump()
    print()
    print_table(results, info)
    return 0 if all(not r["status"].startswith("failed") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Tokens per second of the LLM fine-tune (training/llm_finetune.py), measured from its own report.json.

Builds a random-weight Llama of the chosen size and learnable JSONL with training/make_tiny_llm.py (no
download: the model is a config, saved and loaded through from_pretrained), then runs the sample under
the project's launcher (``python -m trainkit.torchrun``) for ``--steps`` steps:

  cpu   2 processes, gloo, fp32, LoRA and full, DDP (and FSDP2 with --fsdp)
  gpu   1 process per visible GPU, NCCL, bf16 (only when torch sees a GPU)

and prints tokens/s (all ranks' input tokens over the training loop's wall time), the step time, the
peak memory the report names, and the ratio LoRA/full. Nothing is read from the internet.

    .venv/bin/python bench/llm_tokens.py                        # CPU: hidden 256, 4 layers, seq 256
    .venv/bin/python bench/llm_tokens.py --hidden 1024 --layers 8 --seq-len 1024 --steps 30   # on a lent H100
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAINING = ROOT / "training"
sys.path.insert(0, str(TRAINING))


def run(tmp: Path, name: str, nproc: int, extra: list[str], args) -> dict:
    out = tmp / "out" / name
    env = dict(os.environ, PYTHONPATH=str(TRAINING), HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error",
               TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1", PYTHONWARNINGS="ignore")
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // nproc))
    cmd = [sys.executable, "-m", "trainkit.torchrun", "--standalone", f"--nproc-per-node={nproc}",
           str(TRAINING / "llm_finetune.py"), "--model-local-dir", str(tmp / "models" / "bench"), "--local-files-only",
           "--train-file", str(tmp / "data" / "train.jsonl"), "--val-file", "", "--output-dir", str(out),
           "--seq-len", str(args.seq_len), "--batch-size", str(args.batch_size), "--max-steps", str(args.steps),
           "--epochs", "100", "--checkpoint-every", "0", "--log-every", str(args.steps), *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{name}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    report = json.loads((out / "report.json").read_text())
    report["process_wall_s"] = wall
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=4, help="rows per rank and step")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--records", type=int, default=4000)
    p.add_argument("--fsdp", action="store_true", help="also measure FSDP2 on CPU")
    p.add_argument("--timeout", type=float, default=900)
    args = p.parse_args()

    import make_tiny_llm as mk
    import torch
    tmp = Path(tempfile.mkdtemp(prefix="bench-llm-"))
    mk.write_data(tmp / "data", "mixed", args.records, 8)
    mk.write_model(tmp / "models", layers=args.layers, hidden=args.hidden, name="bench")
    print(f"# llm_finetune tokens/s: random Llama hidden={args.hidden} layers={args.layers}, packed rows of "
          f"{args.seq_len} tokens, {args.batch_size} rows/rank/step, {args.steps} steps, {os.cpu_count()} CPU cores")
    rows = []
    plans = [("cpu-ddp-lora", 2, ["--device", "cpu"]), ("cpu-ddp-full", 2, ["--device", "cpu", "--finetune", "full"])]
    if args.fsdp:
        plans.append(("cpu-fsdp-full", 2, ["--device", "cpu", "--finetune", "full", "--parallel", "fsdp"]))
    if torch.cuda.is_available():
        n = torch.cuda.device_count()
        plans += [(f"gpu{n}-ddp-lora-bf16", n, ["--device", "cuda", "--precision", "bf16"]),
                  (f"gpu{n}-ddp-full-bf16", n, ["--device", "cuda", "--precision", "bf16", "--finetune", "full"])]
    else:
        print("# no GPU visible to torch: GPU figures not measured (run this where `device status` lends one)")
    for name, nproc, extra in plans:
        r = run(tmp, name, nproc, extra, args)
        rows.append((name, r))
        print(f"{name:<24} procs={nproc}  tokens/s={r['tokens_per_s']:>10,.0f}  step_s={r['train_s'] / r['steps']:.3f}  "
              f"tokens={r['tokens_this_run']:,}  peak_mem={r['peak_memory_bytes'] / 2**20:,.0f} MiB ({r['peak_memory_kind']})  "
              f"trainable={r['trainable_params']:,}/{r['params']:,}  process_wall_s={r['process_wall_s']:.1f}")
    by = dict(rows)
    if "cpu-ddp-lora" in by and "cpu-ddp-full" in by:
        print(f"ratio cpu LoRA/full tokens/s: {by['cpu-ddp-lora']['tokens_per_s'] / by['cpu-ddp-full']['tokens_per_s']:.2f}")
    gpu = [r for n, r in rows if n.startswith("gpu")]
    if gpu and "cpu-ddp-lora" in by:
        print(f"ratio gpu/cpu tokens/s (LoRA): {gpu[0]['tokens_per_s'] / by['cpu-ddp-lora']['tokens_per_s']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The flags every sample shares, spelled the same everywhere."""
from __future__ import annotations

import argparse
import os


def env_number(name: str, kind, default):
    """A flag's default from the environment (a local run's knob), the flag's own default when unset."""
    value = os.environ.get(name, "")
    try:
        return kind(value) if value else default
    except ValueError:
        raise SystemExit(f"{name}={value!r} is not a {kind.__name__}") from None


def add_common_args(p: argparse.ArgumentParser, *, epochs: int, batch_size: int, lr: float,
                    checkpoint_every: int, batch_flags: tuple[str, ...] = ("--batch-size",),
                    seed: int = 1) -> None:
    g = p.add_argument_group("training")
    g.add_argument("--epochs", type=int, default=epochs, help="epochs to train")
    g.add_argument(*batch_flags, dest="batch_size", type=int, default=batch_size,
                   help="samples per rank and step")
    g.add_argument("--lr", type=float, default=lr, help="learning rate")
    g.add_argument("--max-steps", type=int, default=env_number("TRAINKIT_MAX_STEPS", int, 0),
                   help="stop after this many optimizer steps in total, counted across restarts (0: no limit; "
                        "default: $TRAINKIT_MAX_STEPS, which `kdt run --max-steps` sets)")
    g.add_argument("--seed", type=int, default=seed, help="seed of model init, data order and dropout")
    g.add_argument("--deterministic", action="store_true",
                   help="deterministic kernels only; with a fixed world size, runs are bit-identical, "
                        "interrupted or not")
    g.add_argument("--log-every", type=int, default=10, help="print a [TRAIN] line every N steps")
    g.add_argument("--step-sleep", type=float, default=env_number("TRAINKIT_STEP_SLEEP", float, 0.0),
                   help="sleep this many seconds after each step: slows a run down for recovery drills "
                        "(kill a pod mid-run) and the recovery benchmark")
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto: cuda + NCCL when GPUs exist, else cpu + gloo")
    c = p.add_argument_group("checkpoints")
    c.add_argument("--checkpoint-dir", default=None,
                   help="folder for checkpoints, on a volume every node shares (manifests: /checkpoints/<job>); "
                        "unset: no checkpoints, no resume")
    c.add_argument("--checkpoint-every", type=int, default=checkpoint_every,
                   help="save every N steps, besides each epoch end, the last step and SIGTERM "
                        "(0: only those)")
    c.add_argument("--keep-last", type=int, default=3, help="complete checkpoints to keep")
    c.add_argument("--async-checkpoint", action=argparse.BooleanOptionalAction, default=True,
                   help="write checkpoints in the background; only serialising/staging blocks training")
    c.add_argument("--audit-samples", action="store_true",
                   help="count how often each sample is trained on (kept in checkpoints) and report at each "
                        "epoch end whether every sample was seen exactly once")

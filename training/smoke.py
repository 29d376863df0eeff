#!/usr/bin/env python3
"""Cluster smoke test: a small MLP on synthetic classification data, DDP, seconds on CPU.

    torchrun --nproc_per_node=2 training/smoke.py --epochs 2 --checkpoint-dir /checkpoints/smoke

Every rank generates the same data from ``--seed`` (no files, no network), so
it runs on CPU-only nodes and checks rendezvous, collectives, checkpoints and
restarts end to end. Prints ``[DONE] ... final_loss=... weights_sha256=...``.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from trainkit import (ElasticSampler, Trainer, add_common_args, cleanup, init_distributed, log,  # noqa: E402
                      set_determinism)
from trainkit.args import check_ft_args  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_common_args(p, epochs=2, batch_size=32, lr=0.01, checkpoint_every=50,
                    batch_flags=("--batch", "--batch-size"))
    d = p.add_argument_group("data and model")
    d.add_argument("--samples", type=int, default=4096, help="synthetic samples")
    d.add_argument("--features", type=int, default=32, help="input features")
    d.add_argument("--classes", type=int, default=4, help="classes")
    d.add_argument("--hidden", type=int, default=64, help="hidden units of the MLP")
    args = p.parse_args(argv)
    check_ft_args(args, p)
    return args


def make_data(samples: int, features: int, classes: int, seed: int):
    """Gaussian inputs labelled by a fixed random 2-layer teacher: learnable, same on every rank."""
    g = torch.Generator().manual_seed(seed + 12345)
    x = torch.randn(samples, features, generator=g)
    w1 = torch.randn(features, 2 * classes, generator=g)
    w2 = torch.randn(2 * classes, classes, generator=g)
    y = (torch.tanh(x @ w1) @ w2).argmax(dim=1)
    return x, y


class MLP(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x))))


def main(argv=None) -> int:
    args = parse_args(argv)
    env = init_distributed(args.device, mode="ddp")
    from trainkit import ft as fault_tolerance
    ft = fault_tolerance.setup(args, env)
    set_determinism(args.seed, args.deterministic)
    x, y = make_data(args.samples, args.features, args.classes, args.seed)
    x, y = x.to(env.device), y.to(env.device)
    raw = MLP(args.features, args.hidden, args.classes).to(env.device)
    ids = [env.device.index] if env.device.type == "cuda" else None
    model = ft.ddp(raw, device_ids=ids) if ft else DDP(raw, device_ids=ids)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=50, gamma=0.9)
    sampler = ElasticSampler(args.samples, args.batch_size, seed=args.seed)
    log("SETUP", rank=env.rank, sample="smoke", samples=args.samples, features=args.features,
        classes=args.classes, params=sum(p.numel() for p in raw.parameters()))

    def step_fn(batch):
        idx = torch.tensor(batch.indices, dtype=torch.long, device=env.device)
        out = model(x[idx])
        loss_sum = F.cross_entropy(out, y[idx], reduction="sum")
        (loss_sum * (batch.world_size / batch.global_count)).backward()
        return loss_sum.item()

    def eval_fn(epoch):
        model.eval()
        with torch.no_grad():
            acc = (raw(x).argmax(1) == y).float().mean().item()
        return {"accuracy": round(acc, 4)}

    trainer = Trainer(env, args, model=model, raw_model=raw, optimizer=optimizer, scheduler=scheduler,
                      sampler=sampler, step_fn=step_fn, eval_fn=eval_fn, mode="ddp", name="smoke", ft=ft)
    trainer.run()
    cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

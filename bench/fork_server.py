#!/usr/bin/env python3
"""The fork server of trainkit.torchrun, forked from the agent or spawned: CPU and wall of one node.

Runs a standalone node (``python -m trainkit.torchrun --standalone --nproc-per-node=2``, the smoke
sample, 3 steps) ``--trials`` times with ``TRAINKIT_FORK_SERVER_FROM_AGENT=1`` (the default: the fork
server is the agent's fork where ``fork_refusal`` allows) and ``=0`` (always spawned, as
``multiprocessing`` does), alternating, with ``OMP_NUM_THREADS=1`` and ``PYTHONUNBUFFERED=1`` as kdt run
and the tests set them. Reports per mode: the wall time of the node, and the CPU time of every process
it started (the agent, the fork server, the workers, the resource tracker), read from /proc every 20 ms
until each exits (a process's last 20 ms can be missed: the same for both modes). Prints the means and
the ratios; the [LAUNCH] line of each run says which way its fork server started.

    .venv/bin/python bench/fork_server.py --trials 4
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from procs import descendants

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> tuple[int, float] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[19]), (int(rest[11]) + int(rest[12])) / TICK        # (start time, user + system)
    except (OSError, IndexError, ValueError):
        return None


def one_node(fork: bool, work: Path) -> tuple[float, float, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1",
               TRAINKIT_FORK_SERVER_FROM_AGENT="1" if fork else "0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "training"), os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "trainkit.torchrun", "--standalone", "--nproc-per-node=2", "--monitor-interval=0.1",
           str(ROOT / "training" / "smoke.py"), "--samples", "128", "--max-steps", "3",
           "--checkpoint-dir", str(work / "ck")]
    seen: dict[tuple[int, int], float] = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while True:
        for pid in [proc.pid, *descendants(proc.pid)]:
            c = _cpu(pid)
            if c:
                seen[(pid, c[0])] = max(c[1], seen.get((pid, c[0]), 0.0))
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    out = proc.stdout.read()
    if proc.returncode != 0:
        sys.exit(f"fork_server.py: the node failed (exit {proc.returncode}):\n{out[-2000:]}")
    how = re.search(r"fork_server=(\"[^\"]*\"|\S+)", out)
    return wall, sum(seen.values()), how.group(1) if how else "?"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=4)
    args = p.parse_args()
    if args.trials < 1:
        p.error("--trials must be at least 1")
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.trials):
            for fork in (True, False):
                work = Path(tmp) / f"{i}-{fork}"
                work.mkdir()
                wall, cpu, how = one_node(fork, work)
                results[fork].append((wall, cpu))
                print(f"trial {i + 1} fork_server={how}: wall {wall:.2f} s, cpu {cpu:.2f} s", flush=True)
    mean = {k: (statistics.mean(w for w, _ in v), statistics.mean(c for _, c in v)) for k, v in results.items()}
    for fork, (w, c) in mean.items():
        print(f"{'forked from the agent' if fork else 'spawned':>22}: wall {w:.2f} s, cpu {c:.2f} s "
              f"(mean of {args.trials})")
    (fw, fc), (sw, sc) = mean[True], mean[False]
    print(f"forked/spawned: wall {fw / sw:.2f}x, cpu {fc / sc:.2f}x; saved per node: {sw - fw:.2f} s wall, "
          f"{sc - fc:.2f} s cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())

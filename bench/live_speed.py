#!/usr/bin/env python3
"""How fast the live judge is when its binaries are built (#55): a warm `kdt cluster up` to ready, and the
judge of every shipped target (`bench/live_judge.py`), each against its goal, with where the start's time goes.

    .venv/bin/python bench/live_speed.py [--runs 3] [--skip-judge] [--control-plane-only]
                                         [--trainer 2.1 --training-operator 1.8]

Prints each `kdt cluster up` (wall time of the command, and the daemon's own timeline of the start: certificates,
etcd, kube-apiserver ready, CRDs installed and established, webhooks answering, runtimes installed), the best and
the median, then the judge's wall time; each with "met" or "not met" against its goal (cluster up: 10 s,
judge: 180 s), and the machine's load average and CPU count beside them (a machine others load runs slower:
measure again when it is quiet). Exit 0 when measured (met or not), 2 when the control plane cannot be had.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KDT = [sys.executable, "-m", "kdt"]
UP_GOAL_S = 10.0
JUDGE_GOAL_S = 180.0


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def _up_once(name: str, extra: tuple = ()) -> tuple[float, dict]:
    env = {**os.environ, "KDT_LIVE_OWNER_PID": str(os.getpid()),
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    t0 = time.monotonic()
    up = subprocess.run([*KDT, "cluster", "up", "--name", name, *extra], capture_output=True, text=True, env=env,
                        cwd=REPO, timeout=900)
    wall = time.monotonic() - t0
    try:
        if up.returncode != 0:
            raise SystemExit(f"live_speed: kdt cluster up failed: {up.stderr.strip().splitlines()[-1:]}")
        from kdt.live import kept
        state = kept.state(name) or {}
        return wall, state
    finally:
        subprocess.run([*KDT, "cluster", "down", "--name", name], capture_output=True, env=env, cwd=REPO, timeout=120)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3, help="warm starts to measure (default 3)")
    p.add_argument("--skip-judge", action="store_true", help="only the warm start")
    p.add_argument("--trainer", help="the Trainer release the started control planes run (default: kdt's)")
    p.add_argument("--training-operator", help="the Training Operator release (default: kdt's)")
    p.add_argument("--control-plane-only", action="store_true",
                   help="the start of etcd, kube-apiserver, kube-controller-manager and kube-scheduler alone (no "
                        "operator; implies --skip-judge): what can be measured before the operators are built")
    args = p.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    name = f"bench-speed-{os.getpid()}"
    print(f"live speed: {_load()}")
    extra = ("--control-plane-only",) if args.control_plane_only else ()
    extra += (("--trainer", args.trainer) if args.trainer else ()) + (
        ("--training-operator", args.training_operator) if args.training_operator else ())
    _up_once(name, extra)  # the first start builds what is missing and renders the install once: not counted
    walls, starts = [], []
    for i in range(args.runs):
        wall, state = _up_once(name, extra)
        walls.append(wall)
        starts.append(float(state.get("started_s") or 0))
        phases = ", ".join(f"{what} {t:.1f}" for what, t in state.get("timeline") or [])
        print(f"  kdt cluster up #{i + 1}: {wall:.1f} s (the daemon's start {state.get('started_s')} s: {phases})")
    best, median = min(walls), statistics.median(walls)
    what = f"warm kdt cluster up {' '.join(extra)}".rstrip()
    print(f"{what} to ready: best {best:.1f} s, median {median:.1f} s (goal {UP_GOAL_S:.0f} s"
          f"{', set for the whole start with the operators' if args.control_plane_only else ''}): "
          f"{'met' if median <= UP_GOAL_S else 'not met'}; {_load()}")
    if args.skip_judge or args.control_plane_only:
        return 0
    t0 = time.monotonic()
    judge = subprocess.run([sys.executable, str(REPO / "bench" / "live_judge.py")], capture_output=True, text=True,
                           cwd=REPO, timeout=3600)
    wall = time.monotonic() - t0
    tail = [ln for ln in judge.stdout.splitlines() if ln.startswith(("live judge:", "judge:", "rules whose"))]
    for ln in tail:
        print(f"  {ln}")
    if judge.returncode == 2:
        print(f"live_speed: bench/live_judge.py could not run: {judge.stderr.strip().splitlines()[-1:]}")
        return 2
    print(f"judge of every shipped target (bench/live_judge.py): {wall:.0f} s (goal {JUDGE_GOAL_S:.0f} s): "
          f"{'met' if wall <= JUDGE_GOAL_S else 'not met'}; {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

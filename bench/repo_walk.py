#!/usr/bin/env python3
"""Whole-repository time: `kdt validate` and `kdt lint` over a fetched operator repository with hundreds of
kustomizations, targets rendered one at a time against in parallel, side by side.

    .venv/bin/python bench/repo_walk.py [--repo kubernetes-sigs/kueue --ref v0.19.2] [--rounds 3]
                                        [--today-src /path/to/another/checkout/src]

Modes, each run as a new user runs it (in the repository's root, no arguments, a process per command):

- `one at a time`: this checkout with `-j 1`, rendering one target after the other as kdt did before
  (each target still rendered once);
- `parallel`: this checkout with its default, one render per core this process may use;
- `today` (with --today-src): the kdt of another checkout as it is (e.g. the main branch's src).

The machine may be shared: the modes are measured in the same run, alternating round by round (ABBA
order), and the load average is printed with every round; the ratio is of the medians. Printed per mode:
seconds of validate, lint and both, the CPU seconds both used (kdt, kubectl and helm: what parallel
rendering cannot shrink, only spread over the cores), documents per second (documents validated /
validate's seconds), and the ratio to `parallel`. The repository comes from bench/repos.py (a missing one is named with what to
fetch).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import repos  # noqa: E402


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def once(src: Path, command: str, folder: Path, jobs: int | None) -> tuple[float, int, float]:
    """(seconds, documents, CPU seconds of kdt and its kubectl and helm) of one `kdt COMMAND` over the whole
    repository."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    # every run renders (renders kept between runs, kdt.render_cache, would make every round after the first
    # a measure of the cache, not of rendering one at a time against in parallel)
    env = {**os.environ, "KDT_ROOT": str(folder), "PYTHONPATH": str(src), "KDT_RENDER_CACHE": "0"}
    cmd = [sys.executable, "-m", "kdt", command, "-o", "json", "--output", out] + (["-j", str(jobs)] if jobs else [])
    started, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - started, _cpu() - cpu
    if "Traceback" in proc.stderr or proc.returncode not in (0, 1, 2):
        raise SystemExit(f"repo_walk: {command} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    try:
        docs = json.loads(Path(out).read_text())["summary"]["documents"] or 0
    finally:
        Path(out).unlink(missing_ok=True)
    return seconds, docs, cpu


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", default="kubernetes-sigs/kueue")
    p.add_argument("--ref", default="v0.19.2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--today-src", help="src folder of another checkout to time as it is (e.g. the main branch's)")
    args = p.parse_args(argv)
    folder = repos.checkout(args.repo, args.ref)
    if folder is None:
        print(repos.missing(args.repo, args.ref))
        return 1
    here = ROOT / "src"
    modes = {"one at a time": (here, 1), "parallel": (here, None)}
    if args.today_src:
        modes["today"] = (Path(args.today_src).resolve(), None)
    n = cores()
    print(f"{args.repo} {args.ref} ({folder}); {n} cores for this process; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    times: dict = {m: {"validate": [], "lint": [], "cpu": []} for m in modes}
    documents = 0
    names = list(modes)
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for mode in order:
            src, jobs = modes[mode]
            cpu = 0.0
            for command in ("validate", "lint"):
                seconds, docs, used = once(src, command, folder, jobs)
                times[mode][command].append(seconds)
                cpu += used
                if command == "validate" and mode == "parallel":
                    documents = docs
            times[mode]["cpu"].append(cpu)
            print(f"  round {r + 1} {mode:<14} validate {times[mode]['validate'][-1]:6.1f} s   "
                  f"lint {times[mode]['lint'][-1]:6.1f} s   CPU {cpu:6.1f} s   "
                  f"load {os.getloadavg()[0]:.1f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\n| mode | validate s | lint s | both s | CPU s (both) | documents/s (validate) | both vs parallel |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    med = {m: {c: statistics.median(v) for c, v in t.items()} for m, t in times.items()}
    base = med["parallel"]["validate"] + med["parallel"]["lint"]
    for mode in modes:
        v, lt = med[mode]["validate"], med[mode]["lint"]
        print(f"| {mode}{' (-j 1)' if modes[mode][1] == 1 else ''} | {v:.1f} | {lt:.1f} | {v + lt:.1f} | "
              f"{med[mode]['cpu']:.1f} | {documents / v:.0f} | {(v + lt) / base:.2f}x |")
    print(f"\n{documents} documents in the walk (medians of {args.rounds} rounds; the machine is shared: "
          "the modes alternate in one run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

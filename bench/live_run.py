#!/usr/bin/env python3
"""`kdt run` offline against `kdt run --live`: the same command line on both paths, per target.

For each target: the verdict of each path (reason), whether they agree, and the seconds each took; then the
live path's extra seconds over the offline one. The live runs go to a control plane kept for the bench
(`kdt cluster up --name bench-live-run-<release>`, one per Trainer release, started before its first run and
stopped at the end: warm), so the figure is what
a run costs on the real controllers once the control plane is up (its start, about 20 s on 2 idle cores,
is printed apart).

    .venv/bin/python bench/live_run.py                  # overlays/ddp, 3 times each
    .venv/bin/python bench/live_run.py --all            # every target at the tests' reduced sizes, once

Exit 1 when a target's verdicts differ or the live one is not Succeeded.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KDT = [sys.executable, "-m", "kdt"]
NAME = "bench-live-run"
# the tests' reduced sizes (tests/run/test_run_targets.py _knobs): one process per node, a few steps
KNOBS = ["--nproc-per-node", "1", "--max-steps", "6", "--quiet"]
SPECIAL = {"overlays/tensorflow": ["--max-steps", "70", "--quiet"],
           "charts/trainer/ci/statefulset.yaml": ["--set", "nodes=2", *KNOBS[:2], "--max-steps", "3", "--quiet"],
           "charts/trainer/ci/llm-trainjob.yaml": ["--set", "nodes=2", *KNOBS[:2], "--max-steps", "3", "--quiet"]}
LLM = {"charts/trainer/ci/statefulset.yaml", "charts/trainer/ci/llm-trainjob.yaml"}
# as tests/run/test_run_targets.py: the 4-node fine-tunes run as their chart twins at 2 nodes, and the
# torchft fine-tune (4 pods and a Lighthouse) in tests/training; ddp-git clones this repository's own
# history (--git-repo: the checkout this bench runs from, which must hold the pinned commit)
SKIP = {"overlays/statefulset", "overlays/llm-trainjob", "overlays/torchft-statefulset"}
SPECIAL.update({"overlays/torchft-pytorchjob": [*KNOBS[:2], "--max-steps", "24", "--step-sleep", "0.05", "--quiet"],
                "overlays/torchft-trainjob": [*KNOBS[:2], "--max-steps", "24", "--step-sleep", "0.05", "--quiet"],
                "overlays/ddp-git": [*KNOBS, "--git-repo", "{git_repo}={repo}"]})


def _special(target: str) -> list[str]:
    """The knobs of a target; ddp-git's --git-repo names the repository its overlay clones (read there)."""
    knobs = SPECIAL.get(target, KNOBS)
    if any("{git_repo}" in k for k in knobs):
        text = (REPO / target / "code" / "kustomization.yaml").read_text()
        url = re.search(r"name: GITSYNC_REPO\s+value: (\S+)", text).group(1)
        knobs = [k.format(git_repo=url, repo=REPO) for k in knobs]
    return knobs


def all_targets() -> list[str]:
    out = [f"overlays/{p.name}" for p in sorted((REPO / "overlays").iterdir())
           if (p / "kustomization.yaml").is_file() and not p.name.startswith("scale-512-")]
    return [t for t in out if t not in SKIP] + sorted(LLM)


CLUSTERS: dict[str, str] = {}       # Trainer release -> the kept control plane's name


def cluster(release: str) -> str:
    """A control plane kept for the bench per Trainer release (started on first use)."""
    if release not in CLUSTERS:
        name = f"{NAME}-{release.replace('.', '-')}"
        t0 = time.monotonic()
        up = subprocess.run([*KDT, "cluster", "up", "--name", name, "--trainer", release], capture_output=True, text=True,
                            env={**os.environ, "KDT_LIVE_OWNER_PID": str(os.getpid())})
        if up.returncode != 0:
            raise SystemExit(f"live_run: the control plane did not start: {up.stderr.strip().splitlines()[-1:]}")
        print(f"control plane (Trainer {release}) up in {time.monotonic() - t0:.1f} s (kdt cluster up --name {name})",
              flush=True)
        CLUSTERS[release] = name
    return CLUSTERS[release]


def one(target: str, live: bool, work: Path, extra: list[str], release: str = "2.3") -> tuple[str, float]:
    args = [*KDT, "run", target, *_special(target), *extra, "--workdir", str(work)]
    if live:
        args += ["--live", "--cluster", cluster(release)]
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=900)
    took = time.monotonic() - t0
    need = re.search(r"the target needs trainer-([\d.]+)\+", p.stderr)
    if live and p.returncode == 2 and need and need.group(1) != release:
        return one(target, live, work, extra, need.group(1))
    line = (p.stdout.strip().splitlines() or [""])[-1] if p.returncode in (0, 1) else \
        f"exit {p.returncode}: {' | '.join(p.stderr.strip().splitlines()[-2:])[:300]}"
    return line, took


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("targets", nargs="*")
    ap.add_argument("--all", action="store_true", help="every target at the tests' reduced sizes")
    ap.add_argument("--repeat", type=int, default=None, help="runs per path and target (default: 3, or 1 with --all)")
    a = ap.parse_args(argv)
    targets = a.targets or (all_targets() if a.all else ["overlays/ddp"])
    repeat = a.repeat or (1 if a.all else 3)
    bad = 0
    extra_s = []
    try:
        with tempfile.TemporaryDirectory(prefix="kdt-bench-live-run-") as tmp:
            vol: list[str] = []
            if LLM & set(targets):
                subprocess.run([sys.executable, str(REPO / "training" / "make_tiny_llm.py"), f"{tmp}/llm", "--name", "base"],
                               check=True, capture_output=True)
                vol = ["--volume", f"datasets-pvc={tmp}/llm/data", "--volume", f"models-pvc={tmp}/llm/models"]
            for t in targets:
                extra = vol if t in LLM else []
                for k in range(repeat):
                    off, off_s = one(t, False, Path(tmp) / f"{len(extra_s)}-off", extra)
                    live, live_s = one(t, True, Path(tmp) / f"{len(extra_s)}-live", extra)
                    verdict = lambda s: s.split(":")[0]          # noqa: E731  "Succeeded (Reason)"
                    same = verdict(off) == verdict(live)
                    ok = same and live.startswith("Succeeded")
                    bad += not ok
                    extra_s.append(live_s - off_s)
                    print(f"{t} #{k + 1}: offline {off_s:5.1f} s  live {live_s:5.1f} s  (+{live_s - off_s:4.1f} s)  "
                          f"{'same verdict' if same else 'VERDICTS DIFFER'}: {live[:110]}"
                          + ("" if same else f" | offline: {off[:110]}"), flush=True)
    finally:
        for name in CLUSTERS.values():
            subprocess.run([*KDT, "cluster", "down", "--name", name], capture_output=True)
    if extra_s:
        srt = sorted(extra_s)
        print(f"\nlive path: {len(extra_s)} run(s), extra seconds over offline: median {srt[len(srt) // 2]:.1f} s, "
              f"min {srt[0]:.1f} s, max {srt[-1]:.1f} s; {bad} disagreeing or not Succeeded")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark: `kdt migrate` on every PyTorchJob it can find, to both Trainer shapes.

    .venv/bin/python bench/migrate.py [--to 2.1,2.3] [--show]

Reads (the first two always; the others when present):

| name | where | what is migrated |
| --- | --- | --- |
| this repository | overlays/*, charts/trainer/ci/*.yaml | every target whose render holds a PyTorchJob; those with a TrainJob, to the other shape |
| corpus | ../shared/corpus/kubeflow (bench/repos.corpus) | every YAML file with a PyTorchJob (Training Operator v1.8.1, v1.9.4 examples); and Trainer 2.3.0's example TrainJobs to 2.1's shape, on 2.3.0's runtimes |
| gnosia93/training-on-eks | bench/repos.checkout (a fetched snapshot) | its kustomize base and overlays (PyTorchJobs launched by a shell script) |

Each job is migrated with the upstream runtimes of its Trainer release given as `--runtime` (the corpus's
trainer-v2.1.0/runtimes, trainer-v2.3.0/runtimes: a job runs on one of them when it fits, else on a
generated one). Printed per input and release: jobs, pods compared, differences explained and unexplained,
findings (by row of docs/migration.md), errors and warnings of validate and lint on the migrated output, and
the seconds; then the totals. Exit 1 when a run crashes or a target of this repository has an unexplained
difference (the issue's target); the corpus's figures are printed as measured.
"""
from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from repos import checkout, corpus, missing  # noqa: E402

from kdt import kinds as K  # noqa: E402
from kdt import targets as T  # noqa: E402
from kdt.documents import load_stream  # noqa: E402
from kdt.findings import ERROR  # noqa: E402
from kdt.migration import load_runtimes, migrate_targets  # noqa: E402
from kdt.render import render  # noqa: E402

RUNTIMES = {"2.1": "trainer-v2.1.0/runtimes", "2.3": "trainer-v2.3.0/runtimes"}


def _has(path: Path, kind) -> bool:
    try:
        docs, _ = load_stream(path.read_text(errors="replace"), str(path))
    except Exception:      # noqa: BLE001  (a file the loader refuses holds no job to migrate)
        return False
    return any(kind.matches(d) for d in docs)


def inputs(base: Path) -> list[tuple[str, str, list[str], tuple[str, ...], str | None]]:
    """(set, name, paths, releases, the release whose upstream runtimes the cluster has; None: the target's)."""
    out = []
    for t in T.discover():
        docs = render(t).documents
        if any(K.PYTORCHJOB.matches(d) for d in docs):
            out.append(("this repository", t.name, [str(t.path)], ("2.1", "2.3"), None))
        elif any(K.TRAINJOB.matches(d) for d in docs):
            out.append(("this repository (shapes)", t.name, [str(t.path)], ("2.1", "2.3"), None))
    kf = base / "kubeflow"
    for p in sorted(kf.rglob("*.yaml")):
        if "crds" not in p.parts and _has(p, K.PYTORCHJOB):
            out.append(("corpus", str(p.relative_to(kf)), [str(p)], ("2.1", "2.3"), None))
    for p in sorted((kf / "trainer-v2.3.0" / "examples").glob("*.yaml")):
        if _has(p, K.TRAINJOB):
            # the TrainJob changes shape on the runtimes its cluster already has (2.3.0's)
            out.append(("corpus", str(p.relative_to(kf)), [str(p)], ("2.1",), "2.3"))
    eks = checkout("gnosia93/training-on-eks")
    if eks is None:
        print(missing("gnosia93/training-on-eks"))
    else:
        for sub in ("kustomize/base", "kustomize/overlays/ddp", "kustomize/overlays/fsdp"):
            if (eks / sub).is_dir():
                out.append(("gnosia93/training-on-eks", sub, [str(eks / sub)], ("2.1", "2.3"), None))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--to", default="2.1,2.3", help="the Trainer releases to migrate to (default 2.1,2.3)")
    p.add_argument("--show", action="store_true", help="print every unexplained difference and finding")
    args = p.parse_args()
    releases = [v.strip() for v in args.to.split(",") if v.strip()]
    base = corpus()
    if not (base / "kubeflow").is_dir():
        print(f"missing: the shared corpus ({base}); only this repository is measured")
    runtimes = {v: (load_runtimes([str(base / "kubeflow" / RUNTIMES[v])]) if (base / "kubeflow" / RUNTIMES[v]).is_dir()
                    else []) for v in RUNTIMES}
    print(f"{'set':<26} {'input':<58} {'to':<4} {'jobs':>4} {'pods':>5} {'expl':>5} {'unexp':>5} {'find':>4} "
          f"{'out E/W':>7} {'s':>5}  runtime")
    totals: dict[str, Counter] = {}
    rows: Counter = Counter()
    crashed = []
    failed_own = []
    for group, name, paths, want, cluster_release in inputs(base):
        for v in [r for r in releases if r in want]:
            started = time.perf_counter()
            try:
                results = migrate_targets(T.from_args(paths), v, runtimes.get(cluster_release or v, []))
            except Exception:          # noqa: BLE001  (a crash is what this bench looks for)
                crashed.append(f"{name} -> {v}:\n{traceback.format_exc()}")
                print(f"{group:<26} {name:<58} {v:<4} CRASH")
                continue
            took = time.perf_counter() - started
            c = totals.setdefault(group, Counter())
            for r in results:
                jobs = len(r.jobs)
                pods = sum(j.pods for j in r.jobs)
                exp = sum(1 for j in r.jobs for d in j.differences if d.explained)
                unexp = r.unexplained
                errs = sum(1 for f in r.checks if f.level == ERROR)
                c.update(inputs=1, jobs=jobs, pods=pods, explained=exp, unexplained=unexp,
                         findings=len(r.findings), check_errors=errs, check_warnings=len(r.checks) - errs)
                rows.update(f.extra.get("row", f.rule) for f in r.findings)
                runtime = ", ".join(sorted({j.runtime for j in r.jobs})) or r.nothing
                print(f"{group:<26} {name:<58} {v:<4} {jobs:>4} {pods:>5} {exp:>5} {unexp:>5} {len(r.findings):>4} "
                      f"{errs:>3}/{len(r.checks) - errs:<3} {took:>5.1f}  {runtime}")
                if unexp and group == "this repository":
                    failed_own.append(f"{name} -> {v}")
                if args.show:
                    for j in r.jobs:
                        for d in j.unexplained:
                            print(f"    unexplained {d.where} {'.'.join(map(str, d.path))}: {d.before!r} -> {d.after!r}")
                    for f in r.findings:
                        print(f"    finding [{f.extra.get('row', f.rule)}] {f.path}: {f.message[:140]}")
    print()
    for group, c in totals.items():
        print(f"{group}: {c['inputs']} migration(s), {c['jobs']} job(s), {c['pods']} pod pairs compared, "
              f"{c['explained']} difference(s) explained, {c['unexplained']} unexplained, {c['findings']} finding(s); "
              f"migrated output: {c['check_errors']} error(s), {c['check_warnings']} warning(s) of validate and lint")
    print("findings by row: " + ", ".join(f"{row} {n}" for row, n in rows.most_common()))
    for c in crashed:
        print(f"crash: {c}")
    if failed_own:
        print("unexplained differences in this repository's targets: " + ", ".join(failed_own))
    return 1 if crashed or failed_own else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The queue and gang rules on the schedulers' own examples: joins made, findings, false errors.

Reads, at fixed tags (bench/repos.py finds them; `fetch github:<owner>/<name>` brings them):
- kubernetes-sigs/kueue v0.19.2 `site/static/examples` (the documentation's jobs and the queue setups
  they are applied with) and `config/samples`;
- volcano-sh/volcano v1.15.1 `example` (Volcano Jobs and PodGroups; `example/invalid_jobs` holds what
  its webhook refuses).
(kubernetes-sigs/scheduler-plugins v0.34.7 ships its coscheduling examples only inside Markdown.)

Each folder of examples is linted as one run (`kdt lint <folder>`, in process: the documents of all its
files join), then each tree as a whole. Printed per run: queued jobs, how many were joined to a
LocalQueue, to a ClusterQueue, admitted on an empty cluster, and the findings of the rules kueue-*,
gang-min-member and scheduling-min-available. Upstream ships its examples to be admitted and scheduled,
so an error of these rules on them is a false error, except where upstream says the example is refused
(Volcano's invalid_jobs): those are listed as expected. Tracebacks are counted (a crash is a failure).
"""
from __future__ import annotations

import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import repos  # noqa: E402
from kdt import kinds as K  # noqa: E402
from kdt import targets as T  # noqa: E402
from kdt.lint import lint_target  # noqa: E402
from kdt.lint.engine import Context  # noqa: E402
from kdt.lint.rules import _kueue  # noqa: E402
from kdt.render import render_all  # noqa: E402

RULES = ("kueue-local-queue", "kueue-quota", "kueue-flavor", "kueue-topology", "gang-min-member",
         "scheduling-min-available")
SOURCES = [("kubernetes-sigs/kueue", "v0.19.2", ["site/static/examples", "config/samples"]),
           ("volcano-sh/volcano", "v1.15.1", ["example"])]
EXPECTED_REFUSED = ("example/invalid_jobs/",)     # upstream: "this job will be rejected"


def run(paths: list[Path]) -> dict:
    """Lint `paths` as one run; the join figures of every queued job."""
    out = Counter()
    findings = []
    try:
        results = render_all(T.resolve([str(p) for p in paths]))
    except Exception:
        out["tracebacks"] += 1
        traceback.print_exc()
        return {"counts": out, "findings": findings}
    run_docs = [d for r in results for d in r.documents]
    for r in results:
        if not r.ok:
            out["unrendered"] += 1
            continue
        try:
            found = lint_target(r.target, r.documents, "2.3", run_docs=run_docs)
        except Exception:
            out["tracebacks"] += 1
            traceback.print_exc()
            continue
        findings += [f for f in found if f.rule in RULES]
        ctx = Context(run_docs=run_docs)
        objs = _kueue.queue_objects(r.documents, ctx)
        for d in r.documents:
            k = K.of(d)
            if k is None:
                continue
            w = _kueue.workload(d, r.documents, ctx)
            if w is None:
                continue
            out["queued"] += 1
            lqs = _kueue.local_queues_for(objs, w.queue, d.namespace)
            out["to a LocalQueue"] += bool(lqs)
            cqs = _kueue.cluster_queues_of(d, w, objs)
            out["to a ClusterQueue"] += bool(cqs)
            out["admitted on an empty cluster"] += any(not _kueue.admit(w, cq, objs) for cq in cqs)
    return {"counts": out, "findings": findings}


def main() -> int:
    started = time.perf_counter()
    total, false_errors, expected, tracebacks = Counter(), [], [], 0
    for repo, tag, folders in SOURCES:
        base = repos.checkout(repo, tag)
        if base is None:
            print(repos.missing(repo, tag))
            continue
        print(f"== {repo} {tag}")
        for folder in folders:
            top = base / folder
            if not top.is_dir():
                continue
            own = sorted({p.parent for p in [*top.rglob("*.yaml"), *top.rglob("*.yml")]})
            # each folder's own files as one run, then the whole tree as one run
            for sub, paths in [*((f, sorted([*f.glob("*.yaml"), *f.glob("*.yml")])) for f in own), (None, [top])]:
                res = run(paths)
                c = res["counts"]
                tracebacks += c["tracebacks"]
                if sub is not None:
                    total.update(c)
                label = f"{sub.relative_to(base)}" if sub is not None else f"{top.relative_to(base)} (whole tree)"
                for f in res["findings"]:
                    where = f"{f.file}:{f.line}"
                    line = f"   {f.level} [{f.rule}] {where}: {f.message[:160]}"
                    if f.level == "error":
                        rel = str(Path(f.file)).replace(str(base) + "/", "")
                        (expected if rel.startswith(EXPECTED_REFUSED) else false_errors).append(f"{label}: {line}")
                if c["queued"] or res["findings"]:
                    print(f"  {label}: queued {c['queued']}, joined to a LocalQueue {c['to a LocalQueue']}, "
                          f"to a ClusterQueue {c['to a ClusterQueue']}, admitted {c['admitted on an empty cluster']}; "
                          f"findings {dict(Counter(f.rule + ':' + f.level for f in res['findings']))}")
    print()
    print(f"per folder, in all: {dict(total)}")
    print(f"errors where upstream refuses (expected): {len(expected)}")
    for e in expected:
        print(e)
    print(f"false errors (upstream examples meant to run): {len(false_errors)}")
    for e in false_errors:
        print(e)
    print(f"tracebacks: {tracebacks}; {time.perf_counter() - started:.1f} s")
    return 1 if false_errors or tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`kdt merge-preview` on jobs of growing size: time and peak memory must not grow with the replicas.

For a PyTorchJob (Workers), a TrainJob (numNodes) and a StatefulSet (replicas) of 1,000, 100,000 and 2**70
replicas, written to a temporary folder, runs `python -m kdt merge-preview FILE` in a fresh process and
prints its wall time, peak resident memory (the child's rusage, as /usr/bin/time -v reports it) and the
objects it printed. Past 128 pods of a kind the preview builds the first 4 and last 2 and counts the rest
(kdt.expand.model.Limit), so the figures of a row stay those of the first. The target of issue #36: under
2 s and 300 MB at 100,000, an answer at 2**70. Exit 1 when a run fails or misses the target.

    .venv/bin/python bench/preview_scale.py

Reads no repository: the jobs are written here.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIZES = (1_000, 100_000, 2 ** 70)
LIMIT_S, LIMIT_MB = 2.0, 300.0

JOBS = {
    "PyTorchJob": """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: big}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: "img:1"}]}}}
    Worker: {replicas: REPLICAS, template: {spec: {containers: [{name: pytorch, image: "img:1"}]}}}
""",
    "TrainJob": """apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec: {template: {spec: {containers: [{name: node, image: "img:1"}]}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: big}
spec: {runtimeRef: {name: rt}, trainer: {numNodes: REPLICAS}}
""",
    "StatefulSet": """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: big}
spec:
  serviceName: big
  replicas: REPLICAS
  selector: {matchLabels: {app: big}}
  template: {metadata: {labels: {app: big}}, spec: {containers: [{name: c, image: "img:1"}]}}
""",
}


def measure(path: Path) -> tuple[int, float, float, int]:
    """(exit code, seconds, peak RSS in MB, objects printed) of one `kdt merge-preview` run."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "kdt", "merge-preview", str(path)], stdout=out,
                                stderr=subprocess.DEVNULL, env=env, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        out.seek(0)
        objects = out.read().count(b"\nkind: ")
    return os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss / 1024, objects


def main() -> int:
    failed = False
    print(f"kdt merge-preview, one process per run (target: < {LIMIT_S:g} s and < {LIMIT_MB:g} MB at 100,000)\n")
    print(f"{'kind':12} {'replicas':>26} {'exit':>4} {'seconds':>8} {'peak MB':>8} {'objects':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, text in JOBS.items():
            for n in SIZES:
                path = Path(tmp) / f"{kind}-{n}.yaml"
                path.write_text(text.replace("REPLICAS", str(n)))
                code, seconds, mb, objects = measure(path)
                miss = code != 0 or (n >= 100_000 and (seconds >= LIMIT_S or mb >= LIMIT_MB))
                failed |= miss
                print(f"{kind:12} {n:>26,} {code:>4} {seconds:>8.2f} {mb:>8.1f} {objects:>8}" + ("  MISSED" if miss else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

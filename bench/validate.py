#!/usr/bin/env python3
"""Benchmark: schema validation of a large generated stream, ours against the kubernetes-validate CLI.

    .venv/bin/python bench/validate.py [--documents 6000] [--kv-documents 400] [--kubernetes-version 1.35]

Generates a stream of the repository's own kinds (PyTorchJob, TrainJob,
ClusterTrainingRuntime, StatefulSet, Service, PersistentVolumeClaim; each
document varied, a few hundred bytes to a few KB) and measures, in one run:

1. `kdt validate FILE` end to end as a user runs it (interpreter start,
   imports, parse, schema compile, validation, text report), on the whole stream;
2. the same in-process (load_stream + validate_documents + report), to separate
   start-up from throughput, with its phases;
3. our CLI on the Kubernetes documents only;
4. `kubernetes-validate --strict -k X FILE` (its CLI) on a slice of those
   Kubernetes documents (it manages about a hundred a second, so a slice keeps
   the run short; documents/s is what is compared).

5. our CLI on streams of 1,000, 10,000 and 100,000 documents of the same kinds:
   documents/s and peak memory (the CLI validates a file as a stream, a window
   of documents at a time, so memory must not grow with the stream).

Prints documents/s for each and the ratio. Targets: >= 10,000 documents/s end
to end on 2 cores (on the benchmark's stream and on the 100,000-document one),
>= 50x the kubernetes-validate CLI, and peak memory at 100,000 documents within
1.5x of that at 1,000.
"""
from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the subprocesses run this checkout's kdt (python -m kdt), also from a worktree sharing another's .venv
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
sys.path.insert(0, str(ROOT / "src"))

PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ddp-{i}
  namespace: team-{ns}
  labels: {{app.kubernetes.io/name: ddp, app.kubernetes.io/instance: ddp-{i}}}
spec:
  nprocPerNode: "{gpus}"
  runPolicy: {{cleanPodPolicy: None, backoffLimit: 3}}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: ghcr.io/torch-k8s/trainer:0.1.{i}
              args: ["--epochs", "{i}", "--batch-size", "64"]
              env: [{{name: NCCL_DEBUG, value: WARN}}, {{name: OMP_NUM_THREADS, value: "4"}}]
              resources: {{limits: {{nvidia.com/gpu: {gpus}, memory: 32Gi, cpu: "8"}}}}
              volumeMounts: [{{name: ckpt, mountPath: /ckpt}}, {{name: dshm, mountPath: /dev/shm}}]
          volumes:
            - {{name: ckpt, persistentVolumeClaim: {{claimName: ckpt-{i}}}}}
            - {{name: dshm, emptyDir: {{medium: Memory, sizeLimit: 8Gi}}}}
    Worker:
      replicas: {workers}
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: ghcr.io/torch-k8s/trainer:0.1.{i}
              resources: {{limits: {{nvidia.com/gpu: {gpus}, memory: 32Gi, cpu: "8"}}}}
"""

TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: fsdp-{i}
  namespace: team-{ns}
spec:
  runtimeRef: {{name: torch-fsdp-{ns}, kind: ClusterTrainingRuntime, apiGroup: trainer.kubeflow.org}}
  trainer:
    numNodes: {workers}
    numProcPerNode: {gpus}
    image: ghcr.io/torch-k8s/trainer:0.1.{i}
    command: ["python", "-m", "t5_fsdp"]
    resourcesPerNode: {{limits: {{nvidia.com/gpu: {gpus}, memory: 64Gi}}}}
"""

RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: torch-fsdp-{i}
  labels: {{trainer.kubeflow.org/framework: torch}}
spec:
  mlPolicy: {{numNodes: {workers}, torch: {{}}}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {{labels: {{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}}}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: ghcr.io/torch-k8s/trainer:0.1.{i}
                      command: [torchrun, /workspace/train.py]
"""

STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: ranks-{i}
  namespace: team-{ns}
spec:
  serviceName: ranks-{i}
  replicas: {workers}
  podManagementPolicy: Parallel
  selector: {{matchLabels: {{app: ranks-{i}}}}}
  template:
    metadata: {{labels: {{app: ranks-{i}}}}}
    spec:
      containers:
        - name: trainer
          image: ghcr.io/torch-k8s/trainer:0.1.{i}
          command: [torchrun, --nnodes={workers}, --nproc-per-node={gpus}, train.py]
          ports: [{{name: rdzv, containerPort: 29500}}]
          env:
            - name: POD_NAME
              valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}
          readinessProbe: {{tcpSocket: {{port: rdzv}}, periodSeconds: 5}}
          resources: {{limits: {{nvidia.com/gpu: {gpus}, memory: 32Gi}}, requests: {{cpu: 500m}}}}
          volumeMounts: [{{name: data, mountPath: /data}}]
  volumeClaimTemplates:
    - metadata: {{name: data}}
      spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: {workers}0Gi}}}}}}
"""

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: ranks-{i}
  namespace: team-{ns}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {{app: ranks-{i}}}
  ports: [{{name: rdzv, port: 29500, targetPort: rdzv}}]
"""

PVC = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: ckpt-{i}
  namespace: team-{ns}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: shared
  resources: {{requests: {{storage: {workers}00Gi}}}}
"""

KINDS = [PYTORCHJOB, TRAINJOB, RUNTIME, STATEFULSET, SERVICE, PVC]
K8S = [STATEFULSET, SERVICE, PVC]


def stream(templates, n: int) -> str:
    docs = []
    for i in range(n):
        t = templates[i % len(templates)]
        docs.append(t.format(i=i, ns=i % 7, gpus=1 + i % 8, workers=1 + i % 4))
    return "---\n".join(docs)


def timed_cli(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t, proc


def peak_cli(cmd: list[str]) -> tuple[float, int, subprocess.CompletedProcess]:
    """(seconds, peak RSS in KB of the command and its workers, result)."""
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)")
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), int(out[1]), subprocess.CompletedProcess(cmd, int(out[2]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--documents", type=int, default=6000, help="documents in the generated stream (default 6000)")
    p.add_argument("--kv-documents", type=int, default=400,
                   help="Kubernetes documents given to the kubernetes-validate CLI (default 400)")
    p.add_argument("--kubernetes-version", default="1.35")
    p.add_argument("--repeat", type=int, default=3, help="runs of each of our measurements; the best is shown")
    args = p.parse_args()

    from kdt.documents import load_stream
    from kdt.report import write
    from kdt.validate import validate_documents

    py = sys.executable
    kv = str(Path(py).parent / "kubernetes-validate")
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "stream.yaml"
        k8s = Path(tmp) / "k8s.yaml"
        k8s_slice = Path(tmp) / "k8s-slice.yaml"
        full.write_text(stream(KINDS, args.documents))
        k8s.write_text(stream(K8S, args.documents))
        k8s_slice.write_text(stream(K8S, args.kv_documents))
        print(f"machine: {os.cpu_count()} CPU(s), Python {sys.version.split()[0]}; "
              f"stream: {args.documents} documents, {full.stat().st_size / 1e6:.1f} MB")

        cli = [py, "-m", "kdt", "validate", "--kubernetes-version", args.kubernetes_version]
        best = min(timed_cli(cli + [str(full)]) for _ in range(args.repeat))
        assert best[1].returncode == 0, best[1].stdout[-2000:] + best[1].stderr[-2000:]
        ours_cli = args.documents / best[0]
        print(f"ours, CLI end to end, all kinds:      {ours_cli:10,.0f} documents/s  ({best[0]:.2f} s)")

        text = full.read_text()
        runs = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            docs, problems = load_stream(text, "stream.yaml")
            t1 = time.perf_counter()
            findings = validate_documents(docs, kubernetes_version=args.kubernetes_version)
            t2 = time.perf_counter()
            write(problems + findings, "text", "validate", io.StringIO(), documents=len(docs))
            t3 = time.perf_counter()
            assert len(docs) == args.documents and not findings and not problems
            runs.append((t3 - t0, t1 - t0, t2 - t1, t3 - t2))
        total, parse, schema, rep = min(runs)
        print(f"ours, in-process, all kinds:          {args.documents / total:10,.0f} documents/s  "
              f"(parse {parse * 1e3:.0f} ms, schema {schema * 1e3:.0f} ms, report {rep * 1e3:.1f} ms)")

        best_k = min(timed_cli(cli + [str(k8s)]) for _ in range(args.repeat))
        assert best_k[1].returncode == 0, best_k[1].stdout[-2000:]
        ours_k8s = args.documents / best_k[0]
        print(f"ours, CLI end to end, Kubernetes only: {ours_k8s:9,.0f} documents/s  ({best_k[0]:.2f} s)")

        elapsed, proc = timed_cli([kv, "--strict", "--quiet", "-k", f"{args.kubernetes_version}.0", str(k8s_slice)])
        if proc.returncode != 0:
            print(f"kubernetes-validate failed ({proc.returncode}): {proc.stdout[-500:]} {proc.stderr[-500:]}")
            return 1
        theirs = args.kv_documents / elapsed
        print(f"kubernetes-validate CLI --strict:     {theirs:10,.0f} documents/s  "
              f"({args.kv_documents} documents in {elapsed:.2f} s)")
        print(f"ratio (ours CLI, Kubernetes only / kubernetes-validate CLI): {ours_k8s / theirs:.0f}x")
        print(f"ratio (ours CLI, all kinds / kubernetes-validate CLI):        {ours_cli / theirs:.0f}x")
        sizes = {}
        for n in (1_000, 10_000, 100_000):
            f = Path(tmp) / f"stream-{n}.yaml"
            f.write_text(stream(KINDS, n))
            elapsed, peak, proc = min(peak_cli(cli + [str(f)]) for _ in range(1 if n == 100_000 else args.repeat))
            assert proc.returncode == 0
            sizes[n] = (n / elapsed, peak)
            print(f"ours, CLI, {n:>7,} documents ({f.stat().st_size / 1e6:5.1f} MB): {n / elapsed:10,.0f} documents/s, "
                  f"peak memory {peak / 1024:5.0f} MB")
            f.unlink()
        flat = sizes[100_000][1] <= 1.5 * sizes[1_000][1]
        ok = ours_cli >= 10_000 and sizes[100_000][0] >= 10_000 and ours_k8s / theirs >= 50 and flat
        print(f"targets (>= 10,000 documents/s end to end on both streams, >= 50x, flat memory): "
              f"{'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

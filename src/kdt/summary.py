"""What a rendered target runs: kinds, nodes, GPUs per node, world size.

Derived from the documents alone (what the operator will read), so the table
in `make preview` and the summary lines of `diff` cannot disagree with the manifests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .documents import Document
from .errors import MALFORMED
from .operators import trainer_v2 as TV2

GPU = "nvidia.com/gpu"


def _int(v: Any) -> int | None:
    try:
        return int(str(v))
    except (TypeError, ValueError):
        return None


def quantity(v: Any) -> float:
    """A Kubernetes quantity as a number (cpu in cores, memory in bytes)."""
    if v is None:
        return 0.0
    s = str(v).strip()
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
    for suffix in sorted(units, key=len, reverse=True):
        if s.endswith(suffix):
            try:
                return float(s[: -len(suffix)]) * units[suffix]
            except ValueError:
                return 0.0
    try:
        return float(s)
    except ValueError:
        return 0.0


def container_gpus(container: dict) -> int:
    res = container.get("resources") or {}
    for section in ("limits", "requests"):
        n = _int((res.get(section) or {}).get(GPU))
        if n:
            return n
    return 0


def pod_gpus(pod_spec: dict, container_name: str | None = None) -> int:
    total = 0
    for c in pod_spec.get("containers") or []:
        if isinstance(c, dict) and (container_name is None or c.get("name") == container_name):
            total += container_gpus(c)
    return total


def pod_requests(pod_spec: dict) -> tuple[float, float]:
    cpu = mem = 0.0
    for c in pod_spec.get("containers") or []:
        if isinstance(c, dict):
            req = ((c.get("resources") or {}).get("requests") or {})
            cpu += quantity(req.get("cpu"))
            mem += quantity(req.get("memory"))
    return cpu, mem


@dataclass
class Workload:
    """One training job as a table row sees it."""

    kind: str
    name: str
    nodes: str = "-"             # "2", or "1-4" for elastic bounds
    max_nodes: int = 0
    gpus_per_node: int = 0
    procs_per_node: str = "-"    # from the manifest, or "auto" (= GPUs, or 1 on CPU)
    world_size: str = "-"
    cpu: float = 0.0             # requested per job, all nodes at max
    memory: float = 0.0


def _procs(value: Any, gpus: int) -> tuple[str, int]:
    n = _int(value)
    if n:
        return str(n), n
    if value in (None, "auto", "gpu"):
        return ("auto" if value != "gpu" else "gpu"), (gpus or 1)
    return str(value), 1


def _plain_ml(job: Document, docs) -> bool:
    """True when the TrainJob's runtime (among `docs`) has no ML policy source: one process per node (PlainML)."""
    rt = TV2.find_runtime(job, list(docs or []))
    ml = rt.data.get("spec", {}).get("mlPolicy") if rt is not None and isinstance(rt.data.get("spec"), dict) else None
    return isinstance(ml, dict) and not any(k != "numNodes" for k in ml)


def workload(doc: Document, docs: Iterable[Document] | None = None) -> Workload | None:
    d = doc.data
    spec = d.get("spec") or {}
    if not isinstance(spec, dict):
        return None
    if doc.kind == "PyTorchJob":
        replicas = spec.get("pytorchReplicaSpecs") or {}
        total = 0
        gpus = 0
        cpu = mem = 0.0
        for rtype, r in replicas.items():
            if not isinstance(r, dict):
                continue
            n = _int(r.get("replicas", 1)) or 0
            total += n
            pod = ((r.get("template") or {}).get("spec") or {})
            gpus = max(gpus, pod_gpus(pod, "pytorch"))
            c, m = pod_requests(pod)
            cpu += c * n
            mem += m * n
        elastic = spec.get("elasticPolicy") or {}
        label, maxn = str(total), total
        if elastic:
            lo = _int(elastic.get("minReplicas")) or total
            hi = _int(elastic.get("maxReplicas")) or total
            label, maxn = (f"{lo}-{hi}" if lo != hi else str(hi)), hi
        procs, p = _procs(spec.get("nprocPerNode", elastic.get("nProcPerNode")), gpus)
        world = f"{(_int(label) or maxn) * p}" if "-" not in label else f"{(_int(elastic.get('minReplicas')) or 0) * p}-{maxn * p}"
        return Workload(doc.kind, doc.name, label, maxn, gpus, procs, world, cpu, mem)
    if doc.kind == "TrainJob":
        trainer = spec.get("trainer") or {}
        nodes = _int(trainer.get("numNodes"))
        res = trainer.get("resourcesPerNode") or {}
        gpus = container_gpus({"resources": res})
        procs, p = _procs(trainer.get("numProcPerNode"), gpus)
        if docs is not None and _plain_ml(doc, docs):
            procs, p = "1", 1     # no launcher policy: the pod's own command is the one process
        req = res.get("requests") or {}
        n = nodes or 1
        return Workload(doc.kind, doc.name, str(nodes) if nodes else "runtime", n, gpus, procs,
                        str(n * p) if nodes else "-", quantity(req.get("cpu")) * n, quantity(req.get("memory")) * n)
    if doc.kind == "StatefulSet":
        n = _int(spec.get("replicas", 1)) or 0
        pod = ((spec.get("template") or {}).get("spec") or {})
        gpus = pod_gpus(pod)
        env = {e.get("name"): e.get("value") for c in pod.get("containers") or [] for e in (c.get("env") or []) if isinstance(e, dict)}
        procs, p = _procs(env.get("NPROC_PER_NODE") or env.get("PET_NPROC_PER_NODE"), gpus)
        c, m = pod_requests(pod)
        return Workload(doc.kind, doc.name, str(n), n, gpus, procs, str(n * p), c * n, m * n)
    return None


@dataclass
class TargetSummary:
    target: str
    kinds: list[str] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)


def summarize(target: str, docs: Iterable[Document]) -> TargetSummary:
    out = TargetSummary(target)
    docs = list(docs)
    for d in docs:
        if d.kind and d.kind not in out.kinds:
            out.kinds.append(d.kind)
        try:
            w = workload(d, docs)
        except MALFORMED:
            w = None    # a malformed workload (its schema findings say where): no row of its own
        if w:
            out.workloads.append(w)
    return out


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*map(str, r)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def summary_rows(summaries: list[TargetSummary]) -> list[list[str]]:
    rows = []
    for s in summaries:
        kinds = ",".join(s.kinds) or "-"
        if not s.workloads:
            rows.append([s.target, kinds, "-", "-", "-", "-"])
        for w in s.workloads:
            rows.append([s.target, kinds, w.nodes, str(w.gpus_per_node), w.procs_per_node, w.world_size])
    return rows


SUMMARY_HEADER = ["target", "kinds", "nodes", "GPUs/node", "procs/node", "world size"]

"""Where the pods are: pod templates and containers of every workload kind a rule looks at.

Paths are JSON paths inside the document (lists of keys and indexes), so a rule
can hand them to `Document.finding` unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ..documents import Document
from ..operators import trainer_v2 as TV2

GPU_SUFFIX = "/gpu"   # nvidia.com/gpu, amd.com/gpu, ...


@dataclass
class PodTemplate:
    doc: Document
    path: tuple          # path of the pod spec (the mapping with `containers`)
    spec: dict
    role: str = ""       # PyTorchJob replica type, replicated job name, ...
    replicas: int | None = None


def _d(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> list:
    return v if isinstance(v, list) else []


def as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    try:
        return int(str(v))
    except (TypeError, ValueError):
        return None


def pod_templates(doc: Document) -> Iterator[PodTemplate]:
    d = doc.data
    spec = _d(d.get("spec"))
    kind = doc.kind
    if kind == "PyTorchJob" or (kind.endswith("Job") and doc.group == "kubeflow.org"):
        for key, rs in _d(spec.get("pytorchReplicaSpecs") or spec.get(f"{kind[0].lower()}{kind[1:-3]}ReplicaSpecs")).items():
            ps = _d(_d(_d(rs).get("template")).get("spec"))
            yield PodTemplate(doc, ("spec", "pytorchReplicaSpecs", key, "template", "spec"), ps, key,
                              as_int(_d(rs).get("replicas", 1)))
    elif kind in ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job", "ReplicationController"):
        yield PodTemplate(doc, ("spec", "template", "spec"), _d(_d(spec.get("template")).get("spec")), kind,
                          as_int(spec.get("replicas", 1)) if kind != "DaemonSet" else None)
    elif kind == "CronJob":
        ps = _d(_d(_d(_d(spec.get("jobTemplate")).get("spec")).get("template")).get("spec"))
        yield PodTemplate(doc, ("spec", "jobTemplate", "spec", "template", "spec"), ps, kind, 1)
    elif kind == "Pod":
        yield PodTemplate(doc, ("spec",), spec, kind, 1)
    elif kind == "JobSet":
        yield from _replicated_jobs(doc, spec, ("spec",))
    elif kind in TV2.RUNTIME_KINDS:
        yield from _replicated_jobs(doc, _d(_d(spec.get("template")).get("spec")), ("spec", "template", "spec"))


def _replicated_jobs(doc: Document, js_spec: dict, base: tuple) -> Iterator[PodTemplate]:
    for i, rj in enumerate(_l(js_spec.get("replicatedJobs"))):
        rj = _d(rj)
        job = _d(_d(rj.get("template")).get("spec"))
        ps = _d(_d(job.get("template")).get("spec"))
        n = (as_int(rj.get("replicas", 1)) or 1) * (as_int(job.get("parallelism", 1)) or 1)
        yield PodTemplate(doc, base + ("replicatedJobs", i, "template", "spec", "template", "spec"), ps,
                          str(rj.get("name", "")), n)


def containers(pt: PodTemplate, init: bool = True) -> Iterator[tuple[tuple, dict]]:
    keys = ("containers", "initContainers") if init else ("containers",)
    for key in keys:
        for i, c in enumerate(_l(pt.spec.get(key))):
            if isinstance(c, dict):
                yield pt.path + (key, i), c


def all_containers(doc: Document, init: bool = True) -> Iterator[tuple[PodTemplate, tuple, dict]]:
    """Every container of the document, and TrainJob's spec.trainer as a container-like mapping."""
    for pt in pod_templates(doc):
        for path, c in containers(pt, init):
            yield pt, path, c
    if doc.kind == TV2.TRAINJOB:
        trainer = doc.get(("spec", "trainer"))
        if isinstance(trainer, dict):
            yield None, ("spec", "trainer"), trainer


def resources(c: dict) -> dict:
    """Container resources; TrainJob's trainer uses resourcesPerNode."""
    return _d(c.get("resources") or c.get("resourcesPerNode"))


def gpu_count(c: dict) -> int:
    res = resources(c)
    best = 0
    for section in ("limits", "requests"):
        for name, v in _d(res.get(section)).items():
            if str(name).endswith(GPU_SUFFIX):
                best = max(best, as_int(v) or 0)
    return best


def command_line(c: dict) -> list[str]:
    """command + args as a flat list of strings."""
    return [str(x) for x in _l(c.get("command")) + _l(c.get("args")) if x is not None]


def env_list(c: dict) -> list:
    return _l(c.get("env"))


def runtimes(docs: list[Document]) -> dict[tuple[str, str, str], Document]:
    """(kind, namespace, name) -> runtime document in the stream (namespace '' for cluster-scoped)."""
    out = {}
    for d in docs:
        if d.kind in TV2.RUNTIME_KINDS and d.group == TV2.GROUP:
            ns = d.namespace if d.kind == TV2.TRAINING_RUNTIME else ""
            out[(d.kind, ns, d.name)] = d
    return out


def runtime_for(job: Document, docs: list[Document]) -> Document | None:
    """The runtime a TrainJob refers to (kdt.operators.trainer_v2.find_runtime)."""
    return TV2.find_runtime(job, docs)


def runtime_jobs(runtime: Document) -> list[dict]:
    return [j for j in _l(runtime.get(("spec", "template", "spec", "replicatedJobs"))) if isinstance(j, dict)]


def job_containers(rjob: dict) -> list[str]:
    ps = _d(_d(_d(_d(rjob.get("template")).get("spec")).get("template")).get("spec"))
    return [str(_d(c).get("name")) for k in ("containers", "initContainers") for c in _l(ps.get(k))]


def is_workload(doc: Document) -> bool:
    return doc.kind in ("PyTorchJob", "TrainJob", "StatefulSet", "JobSet") or doc.kind in TV2.RUNTIME_KINDS


def trainer_pod(job: Document, runtime: Document) -> tuple[dict, dict] | None:
    """(pod spec, node container) of the trainer as the operator will run it.

    The merge preview's own expansion (kdt.expand.trainer_v2): the runtime's
    `node` job with the TrainJob's overrides or patches and spec.trainer applied.
    None when the TrainJob cannot be expanded (other rules report why).
    """
    from ..expand import trainer_v2 as expand_trainer
    from ..expand.model import Loader
    from ..errors import MALFORMED
    try:
        expanded, _ = expand_trainer.expand(job, [job, runtime], Loader())
    except MALFORMED:
        return None     # a malformed TrainJob or runtime: the schema findings say where
    for e in expanded:
        if e.kind != "JobSet":
            continue
        for rjob in _l(_d(e.obj.get("spec")).get("replicatedJobs")):
            if _d(rjob).get("name") != TV2.NODE:
                continue
            ps = _d(_d(_d(_d(rjob).get("template")).get("spec")).get("template")).get("spec")
            ps = _d(ps)
            node = next((c for c in _l(ps.get("containers")) if _d(c).get("name") == TV2.NODE), None)
            return (ps, node) if node is not None else None
    return None


def image_of(c: dict) -> str:
    """A container's image reference as written ('' when none)."""
    v = c.get("image")
    return v if isinstance(v, str) else ""

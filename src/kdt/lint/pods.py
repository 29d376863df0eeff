"""Where the pods are, for the rules: pod templates and containers of every kind the registry knows.

Each kind declares its own pod templates (kdt.kinds); this module is the rules' view of them plus
readers of containers. Paths are JSON paths inside the document (lists of keys and indexes), so a rule
can hand them to `Document.finding` unchanged.
"""
from __future__ import annotations

import collections
import json

from typing import Iterator

from .. import kinds as K
from ..documents import Document
from ..errors import MALFORMED
from ..expand.model import Loader
from ..fields import as_dict, as_int, as_list
from ..kinds import PodTemplate
from ..operators.trainer_v2 import facts as TV2
from ..resources import GPU_SUFFIX, container_gpus, resources

__all__ = ["PodTemplate", "GPU_SUFFIX", "as_int", "pod_templates", "containers", "all_containers", "resources",
           "gpu_count", "command_line", "env_list", "runtime_for", "runtime_jobs", "job_containers",
           "trainer_pod", "image_of"]


def pod_templates(doc: Document) -> Iterator[PodTemplate]:
    return K.pod_templates(doc)


def containers(pt: PodTemplate, init: bool = True) -> Iterator[tuple[tuple, dict]]:
    keys = ("containers", "initContainers") if init else ("containers",)
    for key in keys:
        for i, c in enumerate(as_list(pt.spec.get(key))):
            if isinstance(c, dict):
                yield pt.path + (key, i), c


def all_containers(doc: Document, init: bool = True) -> Iterator[tuple[PodTemplate | None, tuple, dict]]:
    """Every container of the document, and container-like fields outside pod templates (a TrainJob's
    spec.trainer) with no pod template."""
    return K.containers(doc, init)


def gpu_count(c: dict) -> int:
    return container_gpus(c)


def command_line(c: dict) -> list[str]:
    """command + args as a flat list of strings."""
    return [str(x) for x in as_list(c.get("command")) + as_list(c.get("args")) if x is not None]


def env_list(c: dict) -> list:
    return as_list(c.get("env"))


def runtime_for(job: Document, docs: list[Document]) -> Document | None:
    """The runtime a TrainJob refers to (kdt.operators.trainer_v2.facts.find_runtime)."""
    return TV2.find_runtime(job, docs)


def runtime_jobs(runtime: Document) -> list[dict]:
    return [j for j in as_list(runtime.get(("spec", "template", "spec", "replicatedJobs"))) if isinstance(j, dict)]


def job_containers(rjob: dict) -> list[str]:
    ps = as_dict(as_dict(as_dict(as_dict(rjob.get("template")).get("spec")).get("template")).get("spec"))
    return [str(as_dict(c).get("name")) for k in ("containers", "initContainers") for c in as_list(ps.get(k))]


_TRAINER_PODS: collections.OrderedDict = collections.OrderedDict()
_TRAINER_PODS_KEPT = 256


def trainer_pod(job: Document, runtime: Document) -> tuple[dict, dict] | None:
    """(pod spec, node container) of the trainer as the operator will run it.

    The merge preview's own expansion (the TrainJob kind's `expand`): the runtime's `node` job with the
    TrainJob's overrides or patches and spec.trainer applied. None when the TrainJob cannot be expanded
    (other rules report why). A function of the two objects' contents only: a run's rules ask for the same
    pair many times (about five times per TrainJob in `make preview`), so the last pairs' answers are kept,
    keyed by the objects' JSON (a few hundred microseconds, against milliseconds to expand). Read-only: the
    rules never change what they are given.
    """
    try:
        key = json.dumps([job.data, runtime.data], default=repr)
    except (TypeError, ValueError):
        return _trainer_pod(job, runtime)      # keys JSON cannot hold: the schema findings say so
    if key in _TRAINER_PODS:
        _TRAINER_PODS.move_to_end(key)
        return _TRAINER_PODS[key]
    out = _trainer_pod(job, runtime)
    _TRAINER_PODS[key] = out
    if len(_TRAINER_PODS) > _TRAINER_PODS_KEPT:
        _TRAINER_PODS.popitem(last=False)
    return out


def _trainer_pod(job: Document, runtime: Document) -> tuple[dict, dict] | None:
    try:
        expanded, _ = K.TRAINJOB.expand(job, K.ExpandContext([job, runtime], Loader()))
    except MALFORMED:
        return None     # a malformed TrainJob or runtime: the schema findings say where
    for e in expanded:
        if not K.JOBSET.matches(e.obj):
            continue
        for rjob in as_list(as_dict(e.obj.get("spec")).get("replicatedJobs")):
            if as_dict(rjob).get("name") != TV2.NODE:
                continue
            ps = as_dict(as_dict(as_dict(as_dict(rjob).get("template")).get("spec")).get("template")).get("spec")
            ps = as_dict(ps)
            node = next((c for c in as_list(ps.get("containers")) if as_dict(c).get("name") == TV2.NODE), None)
            return (ps, node) if node is not None else None
    return None


def image_of(c: dict) -> str:
    """A container's image reference as written ('' when none)."""
    v = c.get("image")
    return v if isinstance(v, str) else ""


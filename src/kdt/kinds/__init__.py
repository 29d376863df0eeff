"""The registry of kinds: every API kind the tooling knows, one module per kind (or per operator).

In the spirit of Trainer's plugin registry (pkg/runtime/framework/plugins/registry.go) and Kueue's
per-framework integrations (pkg/controller/jobframework): each module declares its kinds' identity,
schema source and releases, and the hooks the stages call (`kdt.operators.framework.kind.Kind`: pod templates for
lint and validation, expansion for the merge preview, rows for the summary, pods and controllers for
`kdt run`). The stages ask this module; none of them names a kind.

    from kdt import kinds as K
    k = K.of(doc)                 # the Kind of a Document (None when unknown)
    k.pod_templates(doc)
    K.PYTORCHJOB.matches(doc)     # a rule that is about one kind

Adding a kind: docs/architecture.md, "Adding a kind".
"""
from __future__ import annotations

from typing import Iterable, Iterator

from ..operators.jobset import facts as JS
from ..operators import scheduling as S
from ..operators.trainer_v2 import facts as TV2
from ..operators.training_operator_v1 import facts as TO1
from . import argocd, core, scheduling
from ..operators.framework.kind import (ANY, DATA, JOB, JOB_TIER, PODS, RUNTIME, ExpandContext, Kind, MigrateContext,
                                       PodTemplate, Workload)

# The operators' integrations, one line each (docs/architecture.md, "Adding an operator"): the kinds of
# kdt/operators/<operator>/kind.py, registered in this order after the built-in kinds.
from ..operators.statefulset.kind import KINDS as STATEFULSET_INTEGRATION
from ..operators.jobset.kind import KINDS as JOBSET_INTEGRATION
from ..operators.training_operator_v1.kind import KINDS as TRAINING_OPERATOR_V1_INTEGRATION
from ..operators.trainer_v2.kind import KINDS as TRAINER_V2_INTEGRATION

__all__ = ["ANY", "DATA", "JOB", "JOB_TIER", "PODS", "RUNTIME", "ExpandContext", "Kind", "MigrateContext", "PodTemplate", "Workload",
           "ALL", "of", "lookup", "of_object", "by_role", "pod_templates", "containers", "local_pods", "runtimes",
           "kueue_workload"]

# Every kind: the built-in ones, each integration's (in the order of the lines above), Argo CD's and the schedulers'.
ALL: tuple[Kind, ...] = (*core.KINDS,
                         *(k for name, kinds in list(globals().items()) if name.endswith("_INTEGRATION") for k in kinds),
                         *argocd.KINDS, *scheduling.KINDS)
_BY_ID: dict[tuple[str, str], Kind] = {}
for _k in ALL:
    if (_k.group, _k.kind) in _BY_ID:
        raise RuntimeError(f"kind {_k.id} is registered twice")
    _BY_ID[(_k.group, _k.kind)] = _k


def lookup(group: str, kind: str) -> Kind | None:
    return _BY_ID.get((group, kind))


def _named(kind: str, group: str) -> Kind:
    k = lookup(group, kind)
    assert k is not None, f"{group}/{kind} is not registered"
    return k


# The kinds stages and rules name (identity only: each is the registered object).
POD = _named("Pod", "")
SERVICE = _named("Service", "")
SECRET = _named("Secret", "")
CONFIGMAP = _named("ConfigMap", "")
NAMESPACE = _named("Namespace", "")
CRD = _named("CustomResourceDefinition", "apiextensions.k8s.io")
APPLICATION = _named("Application", "argoproj.io")
APPLICATIONSET = _named("ApplicationSet", "argoproj.io")
APPPROJECT = _named("AppProject", "argoproj.io")
STATEFULSET = _named("StatefulSet", "apps")
DEPLOYMENT = _named("Deployment", "apps")
JOBSET = _named(JS.KIND, JS.GROUP)
PYTORCHJOB = _named(TO1.KIND, TO1.GROUP)
TRAINJOB = _named(TV2.TRAINJOB, TV2.GROUP)
TRAINING_RUNTIME = _named(TV2.TRAINING_RUNTIME, TV2.GROUP)
CLUSTER_TRAINING_RUNTIME = _named(TV2.CLUSTER_TRAINING_RUNTIME, TV2.GROUP)
RUNTIMES = (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)
LOCAL_QUEUE = _named("LocalQueue", S.KUEUE_GROUP)
CLUSTER_QUEUE = _named("ClusterQueue", S.KUEUE_GROUP)
COHORT = _named("Cohort", S.KUEUE_GROUP)
RESOURCE_FLAVOR = _named("ResourceFlavor", S.KUEUE_GROUP)
TOPOLOGY = _named("Topology", S.KUEUE_GROUP)
WORKLOAD_PRIORITY_CLASS = _named("WorkloadPriorityClass", S.KUEUE_GROUP)
ADMISSION_CHECK = _named("AdmissionCheck", S.KUEUE_GROUP)
MULTIKUEUE_CONFIG = _named("MultiKueueConfig", S.KUEUE_GROUP)
MULTIKUEUE_CLUSTER = _named("MultiKueueCluster", S.KUEUE_GROUP)
VOLCANO_JOB = _named("Job", S.VOLCANO_BATCH_GROUP)
VOLCANO_POD_GROUP = _named("PodGroup", S.VOLCANO_SCHEDULING_GROUP)
COSCHEDULING_POD_GROUP = _named("PodGroup", S.COSCHEDULING_GROUP)


def of(doc) -> Kind | None:
    """The registered kind of a Document (by its API group and kind; any version of the group)."""
    return _BY_ID.get((doc.group, doc.kind))


def of_object(obj: dict) -> Kind | None:
    """The registered kind of an object mapping (an expanded object, a pod)."""
    av = str(obj.get("apiVersion") or "")
    return _BY_ID.get((av.rpartition("/")[0] if "/" in av else "", str(obj.get("kind") or "")))


def by_role(role: str) -> tuple[Kind, ...]:
    return tuple(k for k in ALL if k.role == role)


# ------------------------------------------------------------ dispatch helpers for the stages
def pod_templates(doc) -> Iterator[PodTemplate]:
    k = of(doc)
    return k.pod_templates(doc) if k is not None and isinstance(doc.data, dict) else iter(())


def containers(doc, init: bool = True) -> Iterator[tuple[PodTemplate | None, tuple, dict]]:
    """Every container of a document: (pod template, path, container) for each pod template, then the
    container-like fields outside them (a TrainJob's `trainer`) as (None, path, mapping)."""
    keys = ("containers", "initContainers") if init else ("containers",)
    for pt in pod_templates(doc):
        for key in keys:
            items = pt.spec.get(key)
            for i, c in enumerate(items if isinstance(items, list) else []):
                if isinstance(c, dict):
                    yield pt, pt.path + (key, i), c
    k = of(doc)
    if k is not None and isinstance(doc.data, dict):
        for path, c in k.extra_containers(doc):
            yield None, path, c


def runtimes(docs: Iterable) -> list:
    """The Trainer runtimes among `docs` (TrainingRuntime and ClusterTrainingRuntime)."""
    return [d for d in docs if any(k.matches(d) for k in RUNTIMES)]


def kueue_workload(doc, ctx: ExpandContext, expanded: list | None = None):
    """The Kueue Workload a job becomes (kdt.operators.kueue.expand.Workload) when its own labels queue it
    (kdt.operators.scheduling.queued); None for a job Kueue does not queue or a kind whose integration the
    tooling does not model (its kind's `kueue_workload` hook)."""
    k = of(doc)
    if k is None or not isinstance(doc.data, dict) or not S.queued(doc.get(("metadata", "labels"))):
        return None
    return k.kueue_workload(doc, ctx, expanded)


def local_pods(expanded: Iterable) -> list:
    """Every pod of the merge preview's objects, ready for `kdt run`: a pod is built by the kind of the
    document it came from (it knows the pod's group and index), any other object by its own kind (a
    JobSet makes its Jobs' pods). Stable order: as expanded (masters, node 0 first)."""
    out = []
    for e in expanded:
        k = of_object(e.obj)
        owner = of(e.source) if (k is None or k.role == PODS) else k
        if owner is not None:
            out.extend(owner.local_pods(e))
    return out

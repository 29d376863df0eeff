"""Kueue's queue label sits on the job object, not on its pod template or its runtime.

Kueue admits a PyTorchJob, TrainJob, JobSet or StatefulSet as one workload
when the job's own `metadata.labels` carry `kueue.x-k8s.io/queue-name`. The
label on the pod template instead is read by Kueue's plain-pod integration:
every pod becomes a workload of its own, admitted one by one, and the gang is
lost (pods start while others wait for quota). On a ClusterTrainingRuntime or
TrainingRuntime the label does nothing: Kueue reads the TrainJob's.

A pod template's label is quiet when the job itself carries the label (for a
runtime's templates: every TrainJob of the input that uses it): Kueue's pod
integration skips the pods of a job it manages, so the job is admitted as one.

Source: kdt.operators.scheduling (Kueue's integrations and workload docs; the pod
webhook's FindAncestorJobManagedByKueue, Kueue v0.19.2).
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators import scheduling as S
from ...operators.trainer_v2 import facts as TV2
from ..pods import pod_templates
from ._util import d

ID = "queue-label-placement"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("Kueue admits the job's pods one by one, or not the job at all: the gang it was queued for is lost.")
_JOBS = (K.PYTORCHJOB, K.JOBSET, K.STATEFULSET, *K.RUNTIMES)


def _template_labels_path(doc, pt) -> tuple:
    """Path of the pod template's metadata.labels (the pod spec's sibling)."""
    return pt.path[:-1] + ("metadata", "labels")


def _queued(doc) -> bool:
    return S.queued(doc.get(("metadata", "labels")))


def _owner_queued(doc, pool) -> bool:
    """Whether the pods of `doc`'s templates belong to a job Kueue manages (the job, or every TrainJob that uses
    the runtime, carries the queue label)."""
    if K.of(doc) not in K.RUNTIMES:
        return _queued(doc)
    users = [j for j in pool if K.TRAINJOB.matches(j) and TV2.find_runtime(j, [doc]) is doc]
    return bool(users) and all(_queued(j) for j in users)


def check(docs, ctx):
    for doc in docs:
        if K.of(doc) in K.RUNTIMES and _queued(doc):
            yield doc.finding(ID, f"{S.QUEUE_LABEL} on a {doc.kind} has no effect: Kueue reads it from each "
                                  "TrainJob's metadata.labels", ("metadata", "labels", S.QUEUE_LABEL), WARNING)
        if K.of(doc) not in _JOBS or _owner_queued(doc, ctx.pool(docs)):
            continue
        owner = "the TrainJob" if K.of(doc) in K.RUNTIMES else f"the {doc.kind}"
        for pt in pod_templates(doc):
            path = _template_labels_path(doc, pt)
            if S.QUEUE_LABEL in d(doc.get(path)):
                yield doc.finding(ID, f"{S.QUEUE_LABEL} on a pod template: Kueue's pod integration then admits "
                                      f"each pod on its own and the job starts piecemeal; put it on {owner}'s "
                                      "metadata.labels", path + (S.QUEUE_LABEL,))

"""Kueue's queue label sits on the job object, not on its pod template or its runtime.

Kueue admits a PyTorchJob, TrainJob, JobSet or StatefulSet as one workload
when the job's own `metadata.labels` carry `kueue.x-k8s.io/queue-name`. The
label on the pod template instead is read by Kueue's plain-pod integration:
every pod becomes a workload of its own, admitted one by one, and the gang is
lost (pods start while others wait for quota). On a ClusterTrainingRuntime or
TrainingRuntime the label does nothing: Kueue reads the TrainJob's.

Source: kdt.operators.scheduling (Kueue's integrations and workload docs).
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators import scheduling as S
from ..pods import pod_templates
from ._util import d

ID = "queue-label-placement"
LEVEL = ERROR
_JOBS = (K.PYTORCHJOB, K.JOBSET, K.STATEFULSET, *K.RUNTIMES)


def _template_labels_path(doc, pt) -> tuple:
    """Path of the pod template's metadata.labels (the pod spec's sibling)."""
    return pt.path[:-1] + ("metadata", "labels")


def check(docs, ctx):
    for doc in docs:
        if K.of(doc) in K.RUNTIMES and \
                S.QUEUE_LABEL in d(doc.get(("metadata", "labels"))):
            yield doc.finding(ID, f"{S.QUEUE_LABEL} on a {doc.kind} has no effect: Kueue reads it from each "
                                  "TrainJob's metadata.labels", ("metadata", "labels", S.QUEUE_LABEL), WARNING)
        if K.of(doc) not in _JOBS:
            continue
        owner = "the TrainJob" if K.of(doc) in K.RUNTIMES else f"the {doc.kind}"
        for pt in pod_templates(doc):
            path = _template_labels_path(doc, pt)
            if S.QUEUE_LABEL in d(doc.get(path)):
                yield doc.finding(ID, f"{S.QUEUE_LABEL} on a pod template: Kueue's pod integration then admits "
                                      f"each pod on its own and the job starts piecemeal; put it on {owner}'s "
                                      "metadata.labels", path + (S.QUEUE_LABEL,))

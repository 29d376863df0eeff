"""A job's own pods: the labels they will carry and whether a selector picks them (shared by the
rules that read pod (anti-)affinity and topology spread; not a rule).

Own pods carry the pod template's labels plus the operator's: PyTorchJob
`training.kubeflow.org/job-name`, `replica-type`, `operator-name`
(kdt.operators.injection); a JobSet's pods, and so a TrainJob's,
`jobset.sigs.k8s.io/jobset-name` and `replicatedjob-name`
(kdt.operators.jobset). In a runtime the JobSet is named after a TrainJob the
runtime cannot know: that value is ANY, which every selector value matches.
"""
from __future__ import annotations

from ...operators import injection as INJ
from ...operators import scheduling as S
from ._util import d, lst

ANY = object()      # a label whose value the manifest cannot know (the TrainJob's name in a runtime)


def labels_of(doc, pt, job_name=None) -> dict:
    """The labels of the pods of pod template `pt` (kdt.lint.pods.PodTemplate) of `doc`.

    `job_name`: the TrainJob whose JobSet runs a runtime's template (ANY when None)."""
    if doc.kind == "PyTorchJob":
        tmpl = d(d(d(d(doc.get(("spec", "pytorchReplicaSpecs"))).get(pt.role)).get("template")).get("metadata")).get("labels")
        extra = {INJ.V1_LABEL_JOB_NAME: doc.name, INJ.V1_LABEL_REPLICA_TYPE: str(pt.role).lower(),
                 INJ.V1_LABEL_OPERATOR: INJ.V1_OPERATOR_NAME}
    elif doc.kind in ("StatefulSet", "Deployment", "ReplicaSet", "Job", "DaemonSet"):
        tmpl = d(d(doc.get(("spec", "template"))).get("metadata")).get("labels")
        extra = {}
    else:   # JobSet, runtimes: the pod template sits two levels under the replicated job
        tmpl = d(d(doc.get(pt.path[:-1])).get("metadata")).get("labels")
        name = doc.name if doc.kind == "JobSet" else (job_name if job_name is not None else ANY)
        extra = {S.JOBSET_NAME_LABEL: name, S.JOBSET_RJOB_LABEL: pt.role}
    return {**{str(k): str(v) for k, v in d(tmpl).items()}, **extra}


def selects(selector: dict, labels: dict) -> bool:
    """Whether a LabelSelector picks pods with `labels` (an empty or absent selector picks none,
    as in affinity terms and spread constraints)."""
    if not selector:
        return False
    for k, v in d(selector.get("matchLabels")).items():
        if k not in labels or (labels[k] is not ANY and labels[k] != str(v)):
            return False
    for e in lst(selector.get("matchExpressions")):
        e = d(e)
        key, op, values = e.get("key"), e.get("operator"), [str(x) for x in lst(e.get("values"))]
        have = labels.get(key)
        if op == "In" and (have is None or (have is not ANY and have not in values)):
            return False
        if op == "NotIn" and have is not None and have is not ANY and have in values:
            return False
        if op == "Exists" and have is None:
            return False
        if op == "DoesNotExist" and have is not None:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False        # not a selector the API server accepts: other findings say so
    return True

"""A job's own pods: the labels they will carry and whether a selector picks them (shared by the
rules that read pod (anti-)affinity and topology spread; not a rule).

Own pods carry the pod template's labels plus those their controller adds, as each kind declares
(kdt.kinds `own_pod_labels`): a PyTorchJob's `training.kubeflow.org/job-name`, `replica-type`,
`operator-name`; a JobSet's pods, and so a TrainJob's, `jobset.sigs.k8s.io/jobset-name` and
`replicatedjob-name`. In a runtime the JobSet is named after a TrainJob the runtime cannot know: that
value is ANY, which every selector value matches.
"""
from __future__ import annotations

from ... import kinds as K
from ._util import d, lst

ANY = K.ANY      # a label whose value the manifest cannot know (the TrainJob's name in a runtime)


def labels_of(doc, pt, job_name=None) -> dict:
    """The labels of the pods of pod template `pt` (kdt.kinds.PodTemplate) of `doc`.

    `job_name`: the TrainJob whose JobSet runs a runtime's template (ANY when None)."""
    tmpl = d(doc.get(pt.metadata_path)).get("labels") if pt.metadata_path else None
    k = K.of(doc)
    extra = k.own_pod_labels(doc, pt) if k is not None else {}
    if job_name is not None:
        extra = {key: (job_name if v is ANY else v) for key, v in extra.items()}
    return {**{str(key): str(v) for key, v in d(tmpl).items()}, **extra}


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

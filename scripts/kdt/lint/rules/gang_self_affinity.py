"""A job's pods do not require (anti-)affinity to each other without gang scheduling.

A required podAntiAffinity against the job's own pods (one pod per node,
`topologyKey: kubernetes.io/hostname`) needs as many free domains as the job
has pods; a required podAffinity to them needs one domain that fits them all.
At scale the cluster rarely has that at once: the pods that fit start, hold
their GPUs and wait in the rendezvous, the others stay Pending, and nothing
ends it (the half-started job of 40 of 64 pods). Gang scheduling
(PyTorchJob `runPolicy.schedulingPolicy`, a runtime's `podGroupPolicy`) admits
all pods or none; without it, use `preferred` terms or topology spread with
`whenUnsatisfiable: ScheduleAnyway`. Only jobs of more than one pod are checked.

Own pods are those a term's labelSelector matches: the pod template's labels
plus the operator's (PyTorchJob `training.kubeflow.org/job-name`, JobSet
`jobset.sigs.k8s.io/jobset-name`).

Source: kubernetes scheduler InterPodAffinity (required terms are filters);
gnosia93/training-on-eks (the deadlock described); kdt.operators.scheduling.
"""
from __future__ import annotations

from ...findings import WARNING
from ...operators import injection as INJ
from ...operators import scheduling as S
from ..pods import pod_templates
from ._util import d, lst

ID = "gang-self-affinity"
LEVEL = WARNING
_ANY = object()     # a label whose value the manifest cannot know (the TrainJob's name in a runtime)


def _pod_labels(doc, pt) -> dict:
    tmpl = {}
    if doc.kind == "PyTorchJob":
        tmpl = d(d(d(d(doc.get(("spec", "pytorchReplicaSpecs"))).get(pt.role)).get("template")).get("metadata")).get("labels")
        extra = {INJ.V1_LABEL_JOB_NAME: doc.name, INJ.V1_LABEL_REPLICA_TYPE: str(pt.role).lower(),
                 INJ.V1_LABEL_OPERATOR: INJ.V1_OPERATOR_NAME}
    elif doc.kind == "StatefulSet":
        tmpl = d(d(doc.get(("spec", "template"))).get("metadata")).get("labels")
        extra = {}
    else:   # JobSet, runtimes: the pod template sits two levels under the replicated job
        parent = doc.get(pt.path[:-1])
        tmpl = d(d(parent).get("metadata")).get("labels")
        extra = {S.JOBSET_NAME_LABEL: doc.name if doc.kind == "JobSet" else _ANY, S.JOBSET_RJOB_LABEL: pt.role}
    return {**{str(k): str(v) for k, v in d(tmpl).items()}, **extra}


def _matches(selector: dict, labels: dict) -> bool:
    if not selector:
        return False            # an empty selector in an affinity term matches no pod
    for k, v in d(selector.get("matchLabels")).items():
        if k not in labels or (labels[k] is not _ANY and labels[k] != str(v)):
            return False
    for e in lst(selector.get("matchExpressions")):
        e = d(e)
        key, op, values = e.get("key"), e.get("operator"), [str(x) for x in lst(e.get("values"))]
        have = labels.get(key)
        if op == "In" and (have is None or (have is not _ANY and have not in values)):
            return False
        if op == "NotIn" and have is not None and have is not _ANY and have in values:
            return False
        if op == "Exists" and have is None:
            return False
        if op == "DoesNotExist" and have is not None:
            return False
    return True


def check(docs, ctx):
    for doc in docs:
        if doc.kind not in ("PyTorchJob", "StatefulSet", "JobSet", "ClusterTrainingRuntime", "TrainingRuntime"):
            continue
        if S.gang_scheduled(doc):
            continue
        templates = list(pod_templates(doc))
        total = sum(pt.replicas or 1 for pt in templates)
        if doc.kind in ("ClusterTrainingRuntime", "TrainingRuntime"):
            nodes = doc.get(("spec", "mlPolicy", "numNodes"))
            total = max(total, int(nodes) if isinstance(nodes, int) else 2)   # a TrainJob sets the node count
        if total < 2:
            continue
        for pt in templates:
            labels = _pod_labels(doc, pt)
            aff = d(pt.spec.get("affinity"))
            for kind, what in (("podAntiAffinity", "distinct"), ("podAffinity", "one")):
                terms = lst(d(aff.get(kind)).get("requiredDuringSchedulingIgnoredDuringExecution"))
                for i, term in enumerate(terms):
                    term = d(term)
                    if not _matches(d(term.get("labelSelector")), labels):
                        continue
                    key = term.get("topologyKey", "?")
                    need = (f"its {total} pods need {total} distinct {key} domains free at once" if what == "distinct"
                            else f"all {total} pods must fit one {key} domain")
                    yield doc.finding(ID, f"required {kind} against the job's own pods: {need}; without gang "
                                          "scheduling the pods that fit start and hold their GPUs while the rest "
                                          "stay Pending (use preferred terms, or gang scheduling)",
                                      pt.path + ("affinity", kind, "requiredDuringSchedulingIgnoredDuringExecution", i))

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

from ... import kinds as K
from ...findings import WARNING
from ...operators import scheduling as S
from ..pods import pod_templates
from ._own_pods import labels_of, selects
from ._util import d, lst

ID = "gang-self-affinity"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job runs while the cluster has enough free domains; it half-starts only when it does not, which "
       "the manifests cannot show.")


def check(docs, ctx):
    for doc in docs:
        if K.of(doc) not in (K.PYTORCHJOB, K.STATEFULSET, K.JOBSET, *K.RUNTIMES):
            continue
        if S.gang_scheduled(doc):
            continue
        templates = list(pod_templates(doc))
        total = sum(pt.replicas or 1 for pt in templates)
        if K.of(doc) in K.RUNTIMES:
            nodes = doc.get(("spec", "mlPolicy", "numNodes"))
            total = max(total, int(nodes) if isinstance(nodes, int) else 2)   # a TrainJob sets the node count
        if total < 2:
            continue
        for pt in templates:
            labels = labels_of(doc, pt)
            aff = d(pt.spec.get("affinity"))
            for kind, what in (("podAntiAffinity", "distinct"), ("podAffinity", "one")):
                terms = lst(d(aff.get(kind)).get("requiredDuringSchedulingIgnoredDuringExecution"))
                for i, term in enumerate(terms):
                    term = d(term)
                    if not selects(d(term.get("labelSelector")), labels):
                        continue
                    key = term.get("topologyKey", "?")
                    need = (f"its {total} pods need {total} distinct {key} domains free at once" if what == "distinct"
                            else f"all {total} pods must fit one {key} domain")
                    yield doc.finding(ID, f"required {kind} against the job's own pods: {need}; without gang "
                                          "scheduling the pods that fit start and hold their GPUs while the rest "
                                          "stay Pending (use preferred terms, or gang scheduling)",
                                      pt.path + ("affinity", kind, "requiredDuringSchedulingIgnoredDuringExecution", i))

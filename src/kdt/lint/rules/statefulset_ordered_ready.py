"""A training StatefulSet uses `podManagementPolicy: Parallel`.

The default, OrderedReady, starts pod N+1 only when pod N is Ready: a
rendezvous that needs every rank before any becomes ready deadlocks (or with
a readiness probe on training progress, never starts), and a restart of one
pod waits for the others in order. Training ranks start together.

Only StatefulSets that run distributed training are checked (a container
that launches torchrun or reads its environment: PET_*, MASTER_ADDR,
WORLD_SIZE); databases and other ordered services keep their default.

Source: kubernetes apps/v1 StatefulSetSpec.podManagementPolicy (default OrderedReady).
"""
from ... import kinds as K
from ...findings import WARNING
from ..pods import containers, pod_templates
from ._torchrun import launches_distributed

ID = "statefulset-ordered-ready"
LEVEL = WARNING
BASIS = "risk"
WHY = ("OrderedReady deadlocks only when readiness waits for the rendezvous; otherwise pods start one by "
       "one.")


def check(docs, ctx):
    for doc in docs:
        if not K.STATEFULSET.matches(doc):
            continue
        if not any(launches_distributed(c) for pt in pod_templates(doc) for _, c in containers(pt)):
            continue
        v = doc.get(("spec", "podManagementPolicy"))
        if v in (None, "OrderedReady"):
            what = "is not set (OrderedReady)" if v is None else "is OrderedReady"
            yield doc.finding(ID, f"podManagementPolicy {what}: ranks start one by one; use Parallel",
                              ("spec", "podManagementPolicy") if v else ("spec",))

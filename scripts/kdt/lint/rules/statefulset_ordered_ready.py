"""A training StatefulSet uses `podManagementPolicy: Parallel`.

The default, OrderedReady, starts pod N+1 only when pod N is Ready: a
rendezvous that needs every rank before any becomes ready deadlocks (or with
a readiness probe on training progress, never starts), and a restart of one
pod waits for the others in order. Training ranks start together.

Source: kubernetes apps/v1 StatefulSetSpec.podManagementPolicy (default OrderedReady).
"""
from ...findings import WARNING

ID = "statefulset-ordered-ready"
LEVEL = WARNING


def check(docs, ctx):
    for doc in docs:
        if doc.kind != "StatefulSet":
            continue
        v = doc.get(("spec", "podManagementPolicy"))
        if v in (None, "OrderedReady"):
            what = "is not set (OrderedReady)" if v is None else "is OrderedReady"
            yield doc.finding(ID, f"podManagementPolicy {what}: ranks start one by one; use Parallel",
                              ("spec", "podManagementPolicy") if v else ("spec",))

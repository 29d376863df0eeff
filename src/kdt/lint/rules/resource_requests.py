"""Training containers request cpu and memory.

Without requests the scheduler packs training pods onto busy nodes, and the
pod is BestEffort/Burstable: first to be evicted under memory pressure, which
kills the whole distributed job. Initializer and sidecar init containers are
not checked.
"""
from ... import kinds as K
from ...findings import WARNING
from ..pods import containers, pod_templates, resources
from ._util import d

ID = "resource-requests"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The pod runs; without requests it is packed onto busy nodes and evicted first under memory pressure.")


def check(docs, ctx):
    for doc in docs:
        if K.of(doc) in K.RUNTIMES:
            continue   # the TrainJob's resourcesPerNode fills them in
        for pt in pod_templates(doc):
            for path, c in containers(pt, init=False):
                req = d(resources(c).get("requests"))
                missing = [r for r in ("cpu", "memory") if r not in req]
                if missing:
                    yield doc.finding(ID, f"container {c.get('name')!r} requests no {' or '.join(missing)}", path + ("resources",))
        if K.TRAINJOB.matches(doc):
            rpn = doc.get(("spec", "trainer", "resourcesPerNode"))
            req = d(d(rpn).get("requests")) or d(d(rpn).get("limits"))
            missing = [r for r in ("cpu", "memory") if r not in req]
            if isinstance(rpn, dict) and missing:
                yield doc.finding(ID, f"trainer.resourcesPerNode requests no {' or '.join(missing)}",
                                  ("spec", "trainer", "resourcesPerNode"))

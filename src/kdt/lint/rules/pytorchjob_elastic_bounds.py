"""`elasticPolicy.minReplicas <= maxReplicas`, and the Worker replicas lie between them.

The operator passes `PET_NNODES=min:max` to torchrun and builds an HPA from the
bounds; min above max is an impossible range.

Source: training-operator v1.8/v1.9 pkg/controller.v1/pytorch/elastic.go generateEnvNNodes, hpa.go.
"""
from ...findings import ERROR, WARNING
from ...operators.training_operator_v1 import facts as TO
from ..pods import as_int
from ._util import d, pytorchjobs, replica_specs

ID = "pytorchjob-elastic-bounds"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("torchrun and the operator's HPA get an impossible range: the job cannot form.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        ep = doc.get(("spec", "elasticPolicy"))
        if not isinstance(ep, dict):
            continue
        lo, hi = as_int(ep.get("minReplicas")), as_int(ep.get("maxReplicas"))
        if lo is not None and hi is not None and lo > hi:
            yield doc.finding(ID, f"minReplicas {lo} is greater than maxReplicas {hi}", ("spec", "elasticPolicy", "minReplicas"))
            continue
        w = as_int(d(replica_specs(doc).get(TO.WORKER)).get("replicas"))
        if w is not None and ((lo is not None and w < lo) or (hi is not None and w > hi)):
            yield doc.finding(ID, f"Worker replicas {w} is outside [{lo}, {hi}]",
                              ("spec", "pytorchReplicaSpecs", TO.WORKER, "replicas"), WARNING)

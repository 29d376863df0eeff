"""A PyTorchJob Worker has `replicas >= 1`.

The webhook rejects a Worker with fewer than one replica ("must be at least 1").

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchReplicaSpecs.
"""
from ...findings import ERROR
from ...operators import training_operator_v1 as TO
from ..pods import as_int
from ._util import d, pytorchjobs, replica_specs

ID = "pytorchjob-worker-replicas"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        rs = replica_specs(doc).get(TO.WORKER)
        if rs is None or "replicas" not in d(rs):
            continue
        n = as_int(d(rs).get("replicas"))
        if n is None or n < 1:
            yield doc.finding(ID, f"Worker replicas is {d(rs).get('replicas')!r}: it must be at least 1",
                              ("spec", "pytorchReplicaSpecs", TO.WORKER, "replicas"))

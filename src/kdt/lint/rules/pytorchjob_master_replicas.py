"""A PyTorchJob Master has `replicas: 1`, written out.

The webhook rejects a Master whose `replicas` is unset or not 1 ("must be 1"):
rank 0 and MASTER_ADDR `<job>-master-0` assume exactly one master.

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchReplicaSpecs.
"""
from ...findings import ERROR
from ...operators import training_operator_v1 as TO
from ..pods import as_int
from ._util import d, pytorchjobs, replica_specs

ID = "pytorchjob-master-replicas"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        rs = replica_specs(doc).get(TO.MASTER)
        if rs is None:
            continue
        path = ("spec", "pytorchReplicaSpecs", TO.MASTER, "replicas")
        if "replicas" not in d(rs):
            yield doc.finding(ID, "Master replicas is not set: write `replicas: 1` (the webhook rejects an unset value)", path)
        elif as_int(d(rs).get("replicas")) != 1:
            yield doc.finding(ID, f"Master replicas is {d(rs).get('replicas')!r}: it must be 1", path)

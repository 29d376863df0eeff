"""A PyTorchJob Master has `replicas: 1`, written out.

The webhook rejects a Master whose `replicas` is unset or not 1 ("must be 1"):
rank 0 and MASTER_ADDR `<job>-master-0` assume exactly one master.

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchReplicaSpecs.
"""
from ...findings import ERROR
from ._util import pytorchjob_rejections

ID = "pytorchjob-master-replicas"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    yield from pytorchjob_rejections(docs, ID)

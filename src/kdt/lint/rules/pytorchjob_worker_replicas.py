"""A PyTorchJob Worker has `replicas >= 1`.

The webhook rejects a Worker with fewer than one replica ("must be at least 1").

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchReplicaSpecs.
"""
from ...findings import ERROR
from ._util import pytorchjob_rejections

ID = "pytorchjob-worker-replicas"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    yield from pytorchjob_rejections(docs, ID)

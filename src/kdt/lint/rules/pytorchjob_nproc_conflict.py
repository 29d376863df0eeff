"""`elasticPolicy.nProcPerNode` and `spec.nprocPerNode` are not set together.

The webhook rejects it: "must not be used with spec.nprocPerNode".

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validateSpec.
"""
from ...findings import ERROR
from ._util import pytorchjob_rejections

ID = "pytorchjob-nproc-conflict"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    yield from pytorchjob_rejections(docs, ID)

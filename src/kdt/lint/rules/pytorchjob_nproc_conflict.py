"""`elasticPolicy.nProcPerNode` and `spec.nprocPerNode` are not set together.

The webhook rejects it: "must not be used with spec.nprocPerNode".

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validateSpec.
"""
from ...findings import ERROR
from ._util import pytorchjobs

ID = "pytorchjob-nproc-conflict"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        if doc.get(("spec", "elasticPolicy", "nProcPerNode")) is not None and doc.get(("spec", "nprocPerNode")) is not None:
            yield doc.finding(ID, "elasticPolicy.nProcPerNode must not be used with spec.nprocPerNode",
                              ("spec", "elasticPolicy", "nProcPerNode"))

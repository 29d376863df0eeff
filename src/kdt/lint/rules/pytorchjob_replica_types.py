"""`pytorchReplicaSpecs` is set, with only the keys `Master` and `Worker`.

The webhook rejects a PyTorchJob without `pytorchReplicaSpecs` ("must be required") and any other key
(`master`, `Workers`, `Chief`) as not supported: the keys are case-sensitive (the controller's
defaulting would camel-case `master`, but the webhook sees the object first). An empty mapping is
accepted by the webhook and creates no pod: said too.

Source: training-operator v1.9.4 pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchReplicaSpecs.
"""
from ...findings import ERROR
from ._util import pytorchjob_rejections, pytorchjobs

ID = "pytorchjob-replica-types"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    yield from pytorchjob_rejections(docs, ID)
    for doc in pytorchjobs(docs):
        if doc.get(("spec", "pytorchReplicaSpecs")) == {}:
            yield doc.finding(ID, "spec.pytorchReplicaSpecs is empty: the operator creates no pod",
                              ("spec", "pytorchReplicaSpecs"))

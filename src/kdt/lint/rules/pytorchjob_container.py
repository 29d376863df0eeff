"""Every PyTorchJob replica has a container named `pytorch`, and every container an image.

The Training Operator's webhook rejects a replica without containers, one without a container named
`pytorch` ("must have at least one container with name pytorch") and a container without `image`. The
operator injects MASTER_ADDR, RANK, WORLD_SIZE and the `pytorchjob-port` port into the `pytorch`
container only. The merge preview reports the same refusal (kdt.operators.training_operator_v1.facts
webhook_rejections).

Source: training-operator v1.9.4 pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchReplicaSpecs.
"""
from ...findings import ERROR
from ._util import pytorchjob_rejections

ID = "pytorchjob-container"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    yield from pytorchjob_rejections(docs, ID)

"""An elastic PyTorchJob (`elasticPolicy`) has a Worker replica spec.

The webhook rejects elasticPolicy without a Worker ("must be configured if
elastic policy is used"): the rendezvous endpoint defaults to `<job>-worker-0`.

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validateSpec.
"""
from ...findings import ERROR
from ._util import pytorchjob_rejections

ID = "pytorchjob-elastic-worker"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    yield from pytorchjob_rejections(docs, ID)

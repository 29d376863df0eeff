"""An elastic PyTorchJob (`elasticPolicy`) has a Worker replica spec.

The webhook rejects elasticPolicy without a Worker ("must be configured if
elastic policy is used"): the rendezvous endpoint defaults to `<job>-worker-0`.

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validateSpec.
"""
from ...findings import ERROR
from ...operators import training_operator_v1 as TO
from ._util import pytorchjobs, replica_specs

ID = "pytorchjob-elastic-worker"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        if doc.get(("spec", "elasticPolicy")) is not None and TO.WORKER not in replica_specs(doc):
            yield doc.finding(ID, "elasticPolicy needs a Worker replica spec", ("spec", "pytorchReplicaSpecs"))

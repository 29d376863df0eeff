"""`pytorchReplicaSpecs` has only the keys `Master` and `Worker`, and at least one of them.

Any other key (`master`, `Workers`, `Chief`) is rejected by the webhook as not
supported; the keys are case-sensitive.

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go (validReplicaTypes),
pkg/webhooks/utils/utils.go ValidateReplicaSpecs.
"""
from ...findings import ERROR
from ...operators import training_operator_v1 as TO
from ._util import pytorchjobs

ID = "pytorchjob-replica-types"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        rs = doc.get(("spec", "pytorchReplicaSpecs"))
        if not isinstance(rs, dict) or not rs:
            yield doc.finding(ID, "spec.pytorchReplicaSpecs is missing or empty", ("spec", "pytorchReplicaSpecs"))
            continue
        for key in rs:
            if key not in TO.REPLICA_TYPES:
                yield doc.finding(ID, f"replica type {key!r} is not supported: use {' or '.join(TO.REPLICA_TYPES)}",
                                  ("spec", "pytorchReplicaSpecs", key))

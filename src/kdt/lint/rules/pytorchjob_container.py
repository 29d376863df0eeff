"""Every PyTorchJob replica has a container named `pytorch`, and every container an image.

The Training Operator's webhook rejects a replica without a container named
`pytorch` ("must have at least one container with name pytorch") and a container
without `image`. The operator injects MASTER_ADDR, RANK, WORLD_SIZE and the
`pytorchjob-port` port into the `pytorch` container only.

Source: training-operator v1.8/v1.9 pkg/webhooks/utils/utils.go ValidateReplicaSpecs.
"""
from ...findings import ERROR
from ...operators import training_operator_v1 as TO
from ._util import d, lst, pytorchjobs, replica_specs

ID = "pytorchjob-container"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        for rtype, rs in replica_specs(doc).items():
            base = ("spec", "pytorchReplicaSpecs", rtype, "template", "spec", "containers")
            cs = lst(d(d(d(rs).get("template")).get("spec")).get("containers"))
            if not cs:
                yield doc.finding(ID, f"replica {rtype} has no containers", base[:-1])
                continue
            if not any(d(c).get("name") == TO.CONTAINER_NAME for c in cs):
                yield doc.finding(ID, f"replica {rtype} has no container named {TO.CONTAINER_NAME!r} "
                                      "(the operator rejects it and injects its env only into that container)", base)
            for i, c in enumerate(cs):
                if not d(c).get("image"):
                    yield doc.finding(ID, f"container {d(c).get('name', i)!r} of replica {rtype} has no image", base + (i,))

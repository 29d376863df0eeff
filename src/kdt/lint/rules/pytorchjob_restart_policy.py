"""A PyTorchJob replica's `restartPolicy` is one of Always, OnFailure, Never, ExitCode.

Source: training-operator v1.8/v1.9 pkg/apis/kubeflow.org/v1/common_types.go RestartPolicy.
"""
from ...findings import ERROR
from ...operators.training_operator_v1 import facts as TO
from ._util import d, pytorchjobs, replica_specs

ID = "pytorchjob-restart-policy"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The API server refuses the pods the operator creates with an unknown restartPolicy.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        for rtype, rs in replica_specs(doc).items():
            v = d(rs).get("restartPolicy")
            if v is not None and v not in TO.RESTART_POLICIES:
                yield doc.finding(ID, f"restartPolicy {v!r} is not one of {', '.join(TO.RESTART_POLICIES)}",
                                  ("spec", "pytorchReplicaSpecs", rtype, "restartPolicy"))

"""`runPolicy.cleanPodPolicy` is All, Running or None; `elasticPolicy.rdzvBackend` is c10d, etcd or etcd-v2.

Source: training-operator v1.8/v1.9 pkg/apis/kubeflow.org/v1/common_types.go CleanPodPolicy,
pkg/apis/kubeflow.org/v1/pytorch_types.go RDZVBackend.
"""
from ...findings import ERROR
from ...operators.training_operator_v1 import facts as TO
from ._util import pytorchjobs

ID = "pytorchjob-enums"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("No webhook refuses it: torchrun refuses an unknown rendezvous backend at start, and an unknown "
       "cleanPodPolicy acts as All (pkg/controller.v1/common/job.go).")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        for path, allowed in ((("spec", "runPolicy", "cleanPodPolicy"), TO.CLEAN_POD_POLICIES),
                              (("spec", "elasticPolicy", "rdzvBackend"), TO.RDZV_BACKENDS)):
            v = doc.get(path)
            if v is not None and v not in allowed:
                yield doc.finding(ID, f"{path[-1]} {v!r} is not one of {', '.join(allowed)}", path)

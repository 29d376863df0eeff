"""`elasticPolicy.nProcPerNode` is deprecated: use `spec.nprocPerNode`.

The webhook warns "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead".

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validateSpec;
pkg/apis/kubeflow.org/v1/pytorch_types.go ("Deprecated: This API is deprecated in v1.7+").
"""
from ...findings import WARNING
from ._util import pytorchjobs

ID = "pytorchjob-nproc-deprecated"
LEVEL = WARNING
BASIS = "policy"
WHY = ("The deprecated field still works; the webhook only warns.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        if doc.get(("spec", "elasticPolicy", "nProcPerNode")) is not None and doc.get(("spec", "nprocPerNode")) is None:
            yield doc.finding(ID, "elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode",
                              ("spec", "elasticPolicy", "nProcPerNode"))

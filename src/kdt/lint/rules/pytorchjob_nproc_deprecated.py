"""`elasticPolicy.nProcPerNode` is deprecated: use `spec.nprocPerNode`.

The webhook warns "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead".

Source: training-operator v1.8/v1.9 pkg/webhooks/pytorch/pytorchjob_webhook.go validateSpec;
pkg/apis/kubeflow.org/v1/pytorch_types.go ("Deprecated: This API is deprecated in v1.7+").
"""
from ...findings import WARNING
from ._util import pytorchjob_rejections

ID = "pytorchjob-nproc-deprecated"
LEVEL = WARNING
BASIS = "policy"
WHY = ("The deprecated field still works; the webhook only warns.")


def check(docs, ctx):
    yield from pytorchjob_rejections(docs, ID)

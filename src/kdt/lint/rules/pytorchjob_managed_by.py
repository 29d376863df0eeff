"""`runPolicy.managedBy` names the Training Operator or MultiKueue.

The webhook rejects any other controller name; with `kueue.x-k8s.io/multikueue` the operator leaves the
job to Kueue and creates nothing itself (the merge preview says so).

Source: training-operator v1.9.4 pkg/common/util/webhooks.go ValidateRunPolicy (KubeflowJobsController,
MultiKueueController), pkg/controller.v1/common/job.go ManagedByExternalController.
"""
from ...findings import ERROR
from ._util import pytorchjob_rejections

ID = "pytorchjob-managed-by"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    yield from pytorchjob_rejections(docs, ID)

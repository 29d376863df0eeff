"""A runtime carries the `trainer.kubeflow.org/framework` label.

The Kubeflow SDK and the runtime list select runtimes by this label (every
upstream runtime has it); without it the runtime is invisible to them.

Source: trainer v2.1/v2.3 manifests/base/runtimes/*.yaml (label on every runtime),
pkg/constants (framework label used by the SDK's list_runtimes).
"""
from ...findings import WARNING
from ...operators.trainer_v2 import facts as TV2
from ._util import runtimes

ID = "runtime-framework-label"
LEVEL = WARNING
BASIS = "policy"
WHY = ("The runtime works; the label only makes it visible to the SDK's runtime list.")


def check(docs, ctx):
    for rt in runtimes(docs):
        labels = rt.get(("metadata", "labels"))
        if not isinstance(labels, dict) or not labels.get(TV2.FRAMEWORK_LABEL):
            yield rt.finding(ID, f"runtime has no {TV2.FRAMEWORK_LABEL} label", ("metadata", "labels"))

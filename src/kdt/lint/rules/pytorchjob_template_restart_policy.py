"""No `restartPolicy` inside a PyTorchJob pod template: the operator overwrites it.

The operator sets the pod's restartPolicy from the replica's `restartPolicy`
(ExitCode becomes Never), so a value in `template.spec` never takes effect. Set
it on the replica (`pytorchReplicaSpecs.<type>.restartPolicy`).

Source: training-operator v1.8/v1.9 pkg/controller.v1/common/pod.go createNewPod, which calls
pkg/core/pod.go SetRestartPolicy (ExitCode becomes Never on the pod) and records a warning event.
"""
from ...findings import WARNING
from ._util import d, pytorchjobs, replica_specs

ID = "pytorchjob-template-restart-policy"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job runs; the value written has no effect (the operator overwrites it).")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        for rtype, rs in replica_specs(doc).items():
            v = d(d(d(rs).get("template")).get("spec")).get("restartPolicy")
            if v is not None:
                replica = d(rs).get("restartPolicy", "OnFailure (default)")
                yield doc.finding(ID, f"template restartPolicy {v!r} is overwritten by the replica's ({replica}); "
                                      "set restartPolicy on the replica instead",
                                  ("spec", "pytorchReplicaSpecs", rtype, "template", "spec", "restartPolicy"))

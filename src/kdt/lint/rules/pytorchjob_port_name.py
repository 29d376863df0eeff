"""A custom port on the `pytorch` container is named `pytorchjob-port`.

The operator reads MASTER_PORT (and the elastic rendezvous port) from the port
named `pytorchjob-port` only; when none has that name it adds `pytorchjob-port:
23456`. A port under another name leaves the job on 23456 while the script or
Service expects the custom one.

Source: training-operator v1.8/v1.9 pkg/apis/kubeflow.org/v1/pytorch_types.go (PytorchJobDefaultPortName,
PytorchJobDefaultPort), pytorch_defaults.go setPytorchDefaultPort, pkg/controller.v1/pytorch/envvar.go.
"""
from ...findings import WARNING
from ...operators.training_operator_v1 import facts as TO
from ._util import d, lst, pytorchjobs, replica_specs

ID = "pytorchjob-port-name"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job runs on port 23456; it breaks only if the script or a Service relies on the custom port.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        for rtype, rs in replica_specs(doc).items():
            cs = lst(d(d(d(rs).get("template")).get("spec")).get("containers"))
            for i, c in enumerate(cs):
                if d(c).get("name") != TO.CONTAINER_NAME:
                    continue
                ports = [d(p) for p in lst(d(c).get("ports"))]
                if ports and not any(p.get("name") == TO.PORT_NAME for p in ports):
                    names = ", ".join(f"{p.get('name', '(unnamed)')}:{p.get('containerPort')}" for p in ports)
                    yield doc.finding(ID, f"ports {names} of the pytorch container: none is named {TO.PORT_NAME!r}, "
                                          f"so the operator adds {TO.PORT_NAME}:{TO.DEFAULT_PORT} and uses that as MASTER_PORT",
                                      ("spec", "pytorchReplicaSpecs", rtype, "template", "spec", "containers", i, "ports"))

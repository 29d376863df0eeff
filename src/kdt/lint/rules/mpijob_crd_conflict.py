"""The MPI Operator v2's MPIJob CRD meets the Training Operator's MPIJob v1 on the cluster.

Both operators define `mpijobs.kubeflow.org`: the Training Operator (v1.8, v1.9) its MPIJob `v1`, the MPI
Operator v2 (kubeflow/mpi-operator v0.4.0 and later) its `v2beta1` with no `v1`. On a cluster that runs the
Training Operator, the stored CRD's `status.storedVersions` holds `v1`, and the API server refuses an update
whose `spec.versions` lacks a stored version ("status.storedVersions[0]: Invalid value: \"v1\": missing from
spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration
ensures no data remains persisted in v1 and removes v1 from status.storedVersions": apiextensions-apiserver
v0.36.3 pkg/apis/apiextensions/validation/validation.go ValidateCustomResourceDefinitionStoredVersions). True
only where both are installed: a warning, which the cluster file settles (`.kdt-cluster.yaml` `operators`
without `training-operator`: no conflict, no finding).
"""
from ... import kinds as K
from ...findings import WARNING
from ...operators.training_operator_v1 import facts as TO

ID = "mpijob-crd-conflict"
LEVEL = WARNING
BASIS = "risk"
WHY = ("Refused only on a cluster that runs the Training Operator's MPIJob v1 (its stored version); the cluster "
       "file says which operators the cluster runs.")

CRD_NAME = f"mpijobs.{TO.GROUP}"


def check(docs, ctx):
    operators = getattr(ctx.cluster, "operators", None) if ctx.cluster is not None else None
    if operators is not None and "training-operator" not in operators:
        return
    for doc in docs:
        if not K.CRD.matches(doc) or not isinstance(doc.data, dict) or doc.name != CRD_NAME:
            continue
        spec = doc.data.get("spec") if isinstance(doc.data.get("spec"), dict) else {}
        versions = [v.get("name") for v in spec.get("versions") or [] if isinstance(v, dict)]
        if "v1" in versions:
            continue
        yield doc.finding(ID, f"{CRD_NAME} without v1 ({', '.join(map(str, versions)) or 'no versions'}): on a "
                              "cluster that runs the Training Operator, whose MPIJob v1 is a stored version, the API "
                              "server refuses it (status.storedVersions: v1 must remain in spec.versions); set "
                              "`operators` in .kdt-cluster.yaml when the cluster runs the MPI Operator alone",
                          ("spec", "versions"))

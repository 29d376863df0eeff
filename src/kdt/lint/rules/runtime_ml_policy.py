"""A runtime's `mlPolicy` sets exactly one policy source (torch, mpi, ...).

The API rejects more than one ("only one of the policy can be configured"); with
none, no launcher env is injected.

Source: trainer v2.1/v2.3 pkg/apis/trainer/v1alpha1/trainingruntime_types.go MLPolicy (CEL rule).
"""
from ...findings import ERROR
from ._util import d, runtimes

ID = "runtime-ml-policy"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The runtime CRD's CEL rule refuses more than one policy; with none the launcher env is missing.")


def check(docs, ctx):
    for rt in runtimes(docs):
        ml = rt.get(("spec", "mlPolicy"))
        if not isinstance(ml, dict):
            continue
        sources = [k for k in d(ml) if k != "numNodes"]
        if len(sources) > 1:
            yield rt.finding(ID, f"mlPolicy sets {', '.join(sources)}: only one policy may be set", ("spec", "mlPolicy", sources[1]))

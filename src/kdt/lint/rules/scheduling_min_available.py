"""A PyTorchJob's gang (`runPolicy.schedulingPolicy.minAvailable`) is not smaller than its world.

With gang scheduling the PodGroup starts the job once `minAvailable` pods can
run. Below the number of pods the job needs (all replicas; an elastic job's
`minReplicas`), part of the job starts, takes its GPUs and waits in the
rendezvous for pods the scheduler never promised: the half-start gang
scheduling is there to prevent. Left out, the operator uses all replicas. A job
of torchft replica groups needs only its fewest groups (`TRAINKIT_FT_MIN_GROUPS`,
default 1): the others join, and heal, when they are scheduled.

Source: training-operator pkg/controller.v1/common/scheduling.go (MinMember from
minAvailable, else the sum of replicas); kdt.operators.scheduling.
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import WARNING
from ...operators import torchft as TFT
from ..pods import as_int
from ._torchft import group_pods, setting
from ._util import d, replica_specs

ID = "scheduling-min-available"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job starts when the cluster has room for all of it; the half-start happens only when it has not.")


def check(docs, ctx):
    for doc in docs:
        if not K.PYTORCHJOB.matches(doc):
            continue
        sp = doc.get(("spec", "runPolicy", "schedulingPolicy"))
        if not isinstance(sp, dict) or sp.get("minAvailable") is None:
            continue
        have = as_int(sp.get("minAvailable"))
        total = sum(as_int(d(r).get("replicas", 1)) or 0 for r in replica_specs(doc).values())
        elastic = d(doc.get(("spec", "elasticPolicy")))
        need = as_int(elastic.get("minReplicas")) if elastic.get("minReplicas") is not None else total
        what = "the elasticPolicy's minReplicas" if elastic.get("minReplicas") is not None else "the sum of the replicas"
        groups = [gp for gp in group_pods([doc], [doc])]
        if groups:
            low = as_int(setting(groups[0].container, TFT.ENV_MIN_GROUPS, ("--min-replica-groups",))[0])
            need, what = (low if low is not None else 1), f"the fewest replica groups ({TFT.ENV_MIN_GROUPS})"
        if have is not None and need is not None and have < need:
            yield doc.finding(ID, f"minAvailable {have} is below {what} ({need}): {need - have} pod(s) the job "
                                  "needs may never be scheduled while the others hold their GPUs",
                              ("spec", "runPolicy", "schedulingPolicy", "minAvailable"))

"""A gang (minAvailable, minMember) is not smaller than the world its job needs.

With gang scheduling the scheduler starts the group once its size of pods can run. Below the number of
pods the job needs (all replicas; an elastic job's `minReplicas`), part of the job starts, takes its
GPUs and waits in the rendezvous for pods the scheduler never promised: the half-start gang scheduling
is there to prevent. Checked: a PyTorchJob's runPolicy.schedulingPolicy.minAvailable (left out, the
operator uses all replicas), a hand-written PodGroup's minMember against the pods of the run that name it,
a StatefulSet's scheduling.volcano.sh/group-min-member (Volcano's pod-group controller uses 1 when it is
unset). Not a Volcano Job's: its tasks may be elastic by design (Volcano's own examples start part of
them first). Trainer's podGroupPolicy always asks for every pod. A gang larger than its pods is
gang-min-member. A job of torchft replica groups needs only its fewest groups
(`TRAINKIT_FT_MIN_GROUPS`, default 1): the others join, and heal, when they are scheduled.

Source: training-operator pkg/controller.v1/common/job.go (MinMember from minAvailable, else the sum of
replicas); volcano-sh/volcano v1.15.1 (kdt.operators.volcano.facts); kdt.operators.scheduling.
"""
from __future__ import annotations

from ...findings import WARNING
from ._gang import gangs

ID = "scheduling-min-available"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job starts when the cluster has room for all of it; the half-start happens only when it has not.")


def check(docs, ctx):
    for g in gangs(docs, ctx.pool(docs)):
        if g.world is not None and g.size < g.world <= g.pods:
            yield g.doc.finding(ID, f"{g.what} {g.size} is below {g.world_what} ({g.world}): {g.world - g.size} "
                                    "pod(s) the job needs may never be scheduled while the others hold their GPUs",
                                g.path)

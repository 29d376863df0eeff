"""A gang never waits for more pods than can ever join it.

A gang scheduler starts none of a group's pods until its size (minAvailable, minMember) of them can be
placed. A size above the pods that exist never is: the pods stay Pending for good (Volcano, and the
scheduler-plugins coscheduling: "cannot find enough sibling pods"), or the object is refused (Volcano's
job webhook: "job 'minAvailable' should not be greater than total replicas in tasks"). Checked: a
PyTorchJob's runPolicy.schedulingPolicy.minAvailable against its replicas (the operator's PodGroup takes
it as minMember); a Volcano Job's minAvailable against its tasks' replicas, and each task's against its
own; a PodGroup's minMember against the pods of the run that name it (Volcano: the annotation
scheduling.k8s.io/group-name; coscheduling: the label scheduling.x-k8s.io/pod-group); a StatefulSet's
scheduling.volcano.sh/group-min-member against its replicas. A PodGroup no pod of the run names is left
alone (its pods may come from elsewhere). The gang below the job's world is scheduling-min-available.

Source: kubeflow/trainer v1.9.4 pkg/controller.v1/common/job.go (MinMember = minAvailable);
volcano-sh/volcano v1.15.1 pkg/webhooks/admission/jobs/validate/admit_job.go, pkg/controllers/podgroup/
pg_controller_handler.go; kubernetes-sigs/scheduler-plugins v0.34.7 pkg/coscheduling/core/core.go
(PreFilter); kdt.operators.volcano.facts.
"""
from __future__ import annotations

from ...findings import ERROR
from ._gang import gangs

ID = "gang-min-member"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("The scheduler waits for pods that never exist: none of the job's pods ever starts (a Volcano Job so "
       "written is refused).")


def check(docs, ctx):
    for g in gangs(docs, ctx.pool(docs)):
        if g.size > g.pods:
            yield g.doc.finding(ID, f"{g.what} {g.size} is above {g.world_what} ({g.pods}): the gang waits for "
                                    f"{g.size - g.pods} pod(s) that never exist, and none of its pods starts", g.path)

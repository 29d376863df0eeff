"""One failed torchft replica group does not restart (or end) every group.

The point of replica groups is that a failed pod restarts alone while the others
train on. That is undone when the first failure of one group takes the others
with it: a PyTorchJob whose replicas do not restart (`restartPolicy: Never`, or
`ExitCode`, which fails the job on exit codes 1-127: a torchrun agent whose
workers failed exits 1) or whose `runPolicy.backoffLimit` is 0; a JobSet or
runtime Job whose `backoffLimit` is 0, so the Job fails at its first pod failure
and the JobSet's failurePolicy restarts every Job (every group) or fails. A Job
left at the default `backoffLimit` (6) is a warning: the seventh group failure of
the job restarts every group.

Source: training-operator v1.8/v1.9 pkg/controller.v1/common (restart policies, backoffLimit
over the job's restarts); kubernetes pkg/apis/batch/v1/defaults.go (backoffLimit 6) and the
Job controller (a pod restarted in place counts as a failure); jobset
pkg/controllers/jobset_controller.go (a failed Job triggers the failurePolicy).
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators.jobset import facts as JS
from ..pods import as_int
from ._torchft import group_pods
from ._util import d

ID = "torchft-failure-policy"
LEVEL = ERROR
BASIS = "breaks"
WHY = ('The job runs, but the first failure of one group restarts or ends every group: what replica groups are for is silently undone. A warning for the default backoffLimit, which only does so after six failures.')


def check(docs, ctx):
    seen = set()
    for gp in group_pods(docs, ctx.pool(docs)):
        if gp.owner is K.PYTORCHJOB:
            rs = d(d(gp.doc.get(("spec", "pytorchReplicaSpecs"))).get(gp.role))
            policy = rs.get("restartPolicy")
            if policy in ("Never", "ExitCode") and (gp.doc.name, gp.role) not in seen:
                seen.add((gp.doc.name, gp.role))
                yield gp.doc.finding(ID, f"restartPolicy {policy} on replica groups: "
                                         + ("a failed pod fails the job" if policy == "Never" else
                                            "exit codes 1-127 fail the job (a torchrun whose workers failed exits 1)")
                                         + "; use OnFailure: the pod restarts alone",
                                     ("spec", "pytorchReplicaSpecs", gp.role, "restartPolicy"), level=LEVEL)
            if as_int(gp.doc.get(("spec", "runPolicy", "backoffLimit"))) == 0 and (gp.doc.name, "bl") not in seen:
                seen.add((gp.doc.name, "bl"))
                yield gp.doc.finding(ID, "runPolicy.backoffLimit 0 on replica groups: the first pod restart fails the "
                                         "job", ("spec", "runPolicy", "backoffLimit"), level=LEVEL)
            continue
        if gp.job_spec is None or gp.job_doc is None:
            continue
        key = (id(gp.job_doc), gp.job_path)
        if key in seen:
            continue
        seen.add(key)
        limit = as_int(gp.job_spec.get("backoffLimit"))
        path = gp.job_path + ("backoffLimit",) if "backoffLimit" in gp.job_spec else gp.job_path
        if limit == 0:
            yield gp.job_doc.finding(ID, f"backoffLimit 0 on the Job of replica groups {gp.role!r}: the first pod "
                                         "failure fails the Job, and the JobSet's failurePolicy restarts every group "
                                         "(or fails)", path, level=LEVEL)
        elif limit is None:
            yield gp.job_doc.finding(ID, f"the Job of replica groups {gp.role!r} keeps the default backoffLimit "
                                         f"({JS.JOB_DEFAULT_BACKOFF_LIMIT}): its pods' restarts count against it, and "
                                         "past it the JobSet restarts every group; set it for the failures the run "
                                         "should ride out (components/torchft/trainjob: 100)", path, level=WARNING)

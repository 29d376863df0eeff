"""A runtime's JobSet sets no `ttlSecondsAfterFinished` that Trainer would undo.

The TrainJob owns its JobSet and recreates it when it is missing. When
JobSet's TTL deletes a finished JobSet while the TrainJob still exists:

* with a `failurePolicy`, a JobSet that failed after its last restart is
  recreated with its restart count at zero: the job retries forever instead
  of failing (kubeflow/trainer#3779; fixed by kubeflow/trainer#3891, which no
  release named in kdt.versions is known to carry);
* on Trainer 2.1, a JobSet that succeeded is recreated too: the training runs
  again, every TTL seconds (kubeflow/trainer#2981; fixed by
  kubeflow/trainer#3013 after 2.1).

Let the TrainJob's own lifecycle clean up instead (delete the TrainJob, or use
its own TTL where the release has one).

Source: trainer pkg/controller/trainjob_controller.go Reconcile (recreates a missing
JobSet unless the TrainJob is finished; `removeFailedCondition` before that check until
#3891); jobset v0.8 api/jobset/v1alpha2/jobset_types.go TTLSecondsAfterFinished (the
JobSet controller deletes finished JobSets after it).
"""
from ...findings import WARNING
from ._util import runtimes

ID = "runtime-ttl-failure-policy"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job runs; the retry loop or the rerun happens only when the TTL deletes a finished JobSet.")


def check(docs, ctx):
    for rt in runtimes(docs):
        base = ("spec", "template", "spec")
        if rt.get(base + ("ttlSecondsAfterFinished",)) is None:
            continue
        where = base + ("ttlSecondsAfterFinished",)
        if rt.get(base + ("failurePolicy",)) is not None:
            yield rt.finding(ID, "ttlSecondsAfterFinished with a failurePolicy: a JobSet that failed for good is "
                                 "deleted and recreated with its restart count reset, so the job retries forever "
                                 "(kubeflow/trainer#3779)", where)
        elif ctx.trainer_version == "2.1":
            yield rt.finding(ID, "ttlSecondsAfterFinished on Trainer 2.1: a JobSet that succeeded is deleted and "
                                 "recreated, so the training runs again every TTL seconds (kubeflow/trainer#2981)",
                             where)

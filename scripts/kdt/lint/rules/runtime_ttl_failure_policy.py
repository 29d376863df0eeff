"""A runtime does not combine `ttlSecondsAfterFinished` with a `failurePolicy`.

Upstream, a finished JobSet that is garbage-collected by its TTL while the
TrainJob still exists is recreated by the Trainer controller, and with a
failure policy that restarts it the run starts over again in a loop. Let the
TrainJob's own lifecycle clean up instead.

Source: trainer v2.x pkg/runtime/framework/plugins/jobset (the TrainJob owns and recreates its
JobSet); jobset v0.8 api/jobset/v1alpha2/jobset_types.go TTLSecondsAfterFinished.
"""
from ...findings import WARNING
from ._util import runtimes

ID = "runtime-ttl-failure-policy"
LEVEL = WARNING


def check(docs, ctx):
    for rt in runtimes(docs):
        base = ("spec", "template", "spec")
        if rt.get(base + ("ttlSecondsAfterFinished",)) is not None and rt.get(base + ("failurePolicy",)) is not None:
            yield rt.finding(ID, "ttlSecondsAfterFinished with a failurePolicy: the JobSet can be deleted and "
                                 "recreated in a loop", base + ("ttlSecondsAfterFinished",))

"""A TrainJob's `runtimeRef` names a runtime of the right kind in the same stream.

`runtimeRef.kind` defaults to ClusterTrainingRuntime; a TrainingRuntime must be
in the TrainJob's namespace. References resolve across every file and target
of the run. A runtime the run has under the other kind is an error (the
TrainJob never starts). A name found nowhere in the run, nor among the cluster
file's `objects` (.kdt-cluster.yaml: what the cluster has installed), is a
warning: it works only where that runtime is installed on the cluster; its one
line names the runtime and how to provide it (the same line `--live` adds to
the webhook's refusal; it says when the name is one upstream ships, such as
torch-distributed).

Source: trainer v2.1/v2.3 pkg/apis/trainer/v1alpha1/trainjob_types.go RuntimeRef;
manifests/base/runtimes (upstream runtime names).
"""
from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators.trainer_v2 import facts as TV2
from ..pods import runtime_for
from ._util import d, runtimes, trainjobs

ID = "trainjob-runtime-ref"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("A runtime of the wrong kind is never found: the TrainJob never starts (a name the run lacks is a "
       "warning: it may be installed).")


def check(docs, ctx):
    jobs = list(trainjobs(docs))
    pool = runtimes(ctx.pool(docs)) if jobs else []
    for job in jobs:
        ref = d(job.get(("spec", "runtimeRef")))
        name = ref.get("name")
        kind = ref.get("kind") or TV2.DEFAULT_RUNTIME_KIND
        path = ("spec", "runtimeRef", "name")
        if not name:
            yield job.finding(ID, "runtimeRef.name is missing", ("spec", "runtimeRef"))
            continue
        wanted = K.lookup(TV2.GROUP, kind) if isinstance(kind, str) else None
        if wanted not in K.RUNTIMES:
            yield job.finding(ID, f"runtimeRef.kind {kind!r} is not one of {', '.join(TV2.RUNTIME_KINDS)}",
                              ("spec", "runtimeRef", "kind"))
            continue
        if runtime_for(job, ctx.pool(docs)) is not None:
            continue
        cluster = getattr(ctx.cluster, "objects", None) if ctx.cluster is not None and ctx.cluster.object_paths else None
        if cluster and runtime_for(job, cluster) is not None:
            continue
        other = [rt.kind for rt in pool if rt.name == name and not wanted.matches(rt)]
        if other:
            yield job.finding(ID, f"runtimeRef names {kind} {name!r}, but the stream has it as a {other[0]} "
                                  "(set runtimeRef.kind)", path)
        else:
            yield job.finding(ID, TV2.missing_runtime(kind, name, getattr(ctx.cluster, "file", "") or ""), path,
                              WARNING)

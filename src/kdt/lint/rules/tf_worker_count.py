"""A hand-kept TensorFlow worker count agrees with the TrainJob's `numNodes`.

Trainer v2 has no TensorFlow policy: a TensorFlow runtime builds TF_CONFIG in the
pods, and a worker count typed beside `numNodes` (TF_NUM_WORKERS, NUM_WORKERS as
seed 004's init container reads it, or the worker list of a literal TF_CONFIG)
goes stale when one of them changes. Too many workers: MultiWorkerMirroredStrategy
waits forever for a peer that does not exist. Too few: pods past the count have no
place in the cluster. Derive the count from `numNodes` (overlays/tensorflow copies
it with a kustomize replacement; the chart writes both from `nodes`).

Source: kubeflow/trainer pkg/runtime/framework/plugins/plainml/plainml.go (the
pod count is numNodes, nothing else is injected); TensorFlow
tfconfig_cluster_resolver.py (the cluster is exactly the TF_CONFIG lists).
"""
from ...findings import ERROR
from ...operators import tensorflow as TF
from ..pods import as_int
from ._tf import env_of, runtime_env_path, trainjob_views
from ._util import d

ID = "tf-worker-count"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("MultiWorkerMirroredStrategy waits forever for a missing worker, or pods past the count have no "
       "place.")


def _counts(container: dict):
    """(env name, count it states) for each hand-kept count in a container."""
    env = env_of(container)
    for name in TF.COUNT_ENV:
        n = as_int(env.get(name))
        if n is not None:
            yield name, n
    cfg = TF.parse_tf_config(env.get(TF.TF_CONFIG)) if env.get(TF.TF_CONFIG) else None
    if cfg is not None and TF.worker_count(cfg):
        yield TF.TF_CONFIG, TF.worker_count(cfg)


def check(docs, ctx):
    seen = set()
    for v in trainjob_views(docs, ctx):
        if v.nodes is None:
            continue
        trainer_env = {d(e).get("name"): i for i, e in enumerate(d(v.job.get(("spec", "trainer"))).get("env") or [])
                       if isinstance(e, dict)}
        for c in [v.node] + [x for x in v.pod.get("initContainers") or [] if isinstance(x, dict)]:
            for name, n in _counts(c):
                if n == v.nodes:
                    continue
                what = f"TF_CONFIG lists {n} training task(s)" if name == TF.TF_CONFIG else f"{name}={n}"
                msg = (f"{what} but numNodes is {v.nodes}: the JobSet runs "
                       f"{v.nodes} pod(s); derive the worker count from numNodes instead of typing it again")
                if c is v.node and name in trainer_env:
                    key = (v.job.file, v.job.index, name)
                    if key not in seen:
                        seen.add(key)
                        yield v.job.finding(ID, msg, ("spec", "trainer", "env", trainer_env[name], "value"))
                    continue
                path = runtime_env_path(v.runtime, str(c.get("name")), name)
                key = (v.runtime.file, v.runtime.index, name, c.get("name"), v.job.name)
                if key in seen:
                    continue
                seen.add(key)
                if path is not None:
                    yield v.runtime.finding(ID, msg + f" (TrainJob {v.job.name!r})", path)
                else:
                    yield v.job.finding(ID, msg + f" (container {c.get('name')!r} of runtime {v.runtime.name!r})",
                                        ("spec", "trainer", "numNodes"))

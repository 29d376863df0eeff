"""The chief convention and the worker-only convention are not mixed.

TensorFlow's multi-worker cluster either has a `chief` task (which does the
chief's work: checkpoints, summaries) plus workers, or workers only, where
worker 0 does that work. Mixed, the tasks disagree on who is in the cluster:
- a TF_CONFIG that lists one address as both chief and worker starts two tasks
  on one port;
- a JobSet or runtime whose trainer pods build a worker-only TF_CONFIG (this
  project's convention: TF_NUM_WORKERS, TF_TASK_INDEX...) beside a replicated
  job named `chief`, or a TF_CONFIG whose task is the chief: the workers never
  list that chief, so it waits forever for a cluster that does not include it.

Source: tensorflow/python/distribute/multi_worker_util.py (_validate_cluster_spec,
is_chief: worker 0 is the chief when the cluster has none).
"""
from ... import kinds as K
from ...findings import ERROR
from ...operators import tensorflow as TF
from ..pods import containers, pod_templates
from ._tf import env_of, env_sites

ID = "tf-config-chief"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("The tasks disagree on who is in the cluster: the job hangs or starts two tasks on one port.")


def check(docs, ctx):
    for s in env_sites(docs, (TF.TF_CONFIG,)):
        cfg = TF.parse_tf_config(s.value)
        cluster = cfg.get("cluster") if cfg and isinstance(cfg.get("cluster"), dict) else {}
        chiefs = cluster.get("chief") if isinstance(cluster.get("chief"), list) else []
        workers = cluster.get("worker") if isinstance(cluster.get("worker"), list) else []
        both = sorted(set(map(str, chiefs)) & set(map(str, workers)))
        if both:
            yield s.doc.finding(ID, f"TF_CONFIG lists {', '.join(both)} as both chief and worker: two tasks on one "
                                    "address; with a chief, the workers are the other pods", s.path)
    for doc in docs:
        if K.of(doc) not in (K.JOBSET, *K.RUNTIMES):
            continue
        worker_only, chief_jobs = [], []
        for pt in pod_templates(doc):
            for path, c in containers(pt, init=False):
                env = env_of(c)
                if set(TF.RUNTIME_CONVENTION_ENV) <= set(env):
                    worker_only.append(pt.role)
                cfg = TF.parse_tf_config(env.get(TF.TF_CONFIG)) if env.get(TF.TF_CONFIG) else None
                if pt.role == "chief" or (cfg and (cfg.get("task") or {}).get("type") == "chief"):
                    chief_jobs.append((pt.role, pt.path))
        if worker_only:
            for role, path in chief_jobs:
                yield doc.finding(ID, f"replicated job {role!r} runs a TensorFlow chief, but job "
                                      f"{worker_only[0]!r} builds a worker-only TF_CONFIG (worker 0 is the chief) "
                                      "that never lists it", path)

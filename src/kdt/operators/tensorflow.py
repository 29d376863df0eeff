"""TensorFlow multi-worker training on Kubeflow Trainer v2: what breaks a TF_CONFIG.

Trainer v2 has no TensorFlow policy. A TensorFlow runtime has no ML policy at
all: Trainer's PlainML plugin (kubeflow/trainer pkg/runtime/framework/plugins/
plainml/plainml.go) sets the trainer job's pod count to numNodes and applies
trainer.env, nothing else. The pods build TF_CONFIG themselves.

Two sources of facts:
- TF_CONFIG as TensorFlow reads it (tensorflow/python/distribute/cluster_resolver/
  tfconfig_cluster_resolver.py; multi_worker_util.py _validate_cluster_spec):
  `cluster` maps task types to lists of `host:port`, at most one `chief`, and
  `task` names a type of the cluster and an index inside its list. Without a
  chief, worker 0 does the chief's work (multi_worker_util.is_chief).
- The convention of this project's runtime (overlays/tensorflow, the chart's
  tensorflow mode), implemented by training/tfkit/cluster.py in the pod: the env
  names below, and worker i = `<jobset>-<rjob>-<jobIdx>-<i>.<subdomain>:<TF_PORT>`.
  A test checks these against tfkit (kdt imports nothing from training/).
"""
from __future__ import annotations

import json

from .jobset import facts as JS

# training/tfkit/cluster.py: the env a pod builds its TF_CONFIG from.
ENV_JOBSET = "TF_JOBSET_NAME"
ENV_RJOB = "TF_REPLICATED_JOB"
ENV_JOB_INDEX = "TF_JOB_INDEX"
ENV_TASK_INDEX = "TF_TASK_INDEX"
ENV_NUM_WORKERS = "TF_NUM_WORKERS"
ENV_PORT = "TF_PORT"
ENV_SUBDOMAIN = "TF_SUBDOMAIN"
CONVENTION_ENV = (ENV_JOBSET, ENV_RJOB, ENV_JOB_INDEX, ENV_TASK_INDEX, ENV_NUM_WORKERS, ENV_PORT)
# The part a runtime writes (TF_NUM_WORKERS comes with the TrainJob's trainer.env).
RUNTIME_CONVENTION_ENV = tuple(k for k in CONVENTION_ENV if k != ENV_NUM_WORKERS)
# Hand-kept worker counts seen beside TF_CONFIG builders (seed 004's init container reads NUM_WORKERS).
COUNT_ENV = (ENV_NUM_WORKERS, "NUM_WORKERS")
TF_CONFIG = "TF_CONFIG"
FRAMEWORK = "tensorflow"

# The label each convention variable is read from (downward API), and what JobSet puts there.
DOWNWARD = {
    ENV_JOBSET: f"metadata.labels['{JS.LABEL_JOBSET_NAME}']",
    ENV_RJOB: f"metadata.labels['{JS.LABEL_REPLICATED_JOB}']",
    ENV_JOB_INDEX: f"metadata.labels['{JS.LABEL_JOB_INDEX}']",
}


def worker_hosts(jobset: str, rjob: str, job_index: int, workers: int, port: int | str, subdomain: str = "") -> list[str]:
    """`<jobset>-<rjob>-<jobIdx>-<i>.<subdomain>:<port>` for i in 0..workers-1 (tfkit.cluster.worker_hosts)."""
    sub = subdomain or jobset
    return [f"{jobset}-{rjob}-{job_index}-{i}.{sub}:{port}" for i in range(workers)]


def parse_tf_config(value) -> dict | None:
    """A literal TF_CONFIG value as a dict, or None when it is not a JSON object."""
    try:
        cfg = json.loads(str(value))
    except ValueError:
        return None
    return cfg if isinstance(cfg, dict) else None


def address_problems(cfg: dict) -> list[tuple[tuple, str]]:
    """(path inside TF_CONFIG, problem) for each address without host:port and each misplaced task."""
    out = []
    cluster = cfg.get("cluster") if isinstance(cfg.get("cluster"), dict) else {}
    for kind, hosts in cluster.items():
        if not isinstance(hosts, list):
            out.append((("cluster", kind), f"cluster.{kind} is not a list of host:port"))
            continue
        for i, h in enumerate(hosts):
            host, _, port = str(h).rpartition(":")
            if not host or not port.isdigit():
                out.append((("cluster", kind, i), f"address {h!r} has no port: TensorFlow's gRPC server needs host:port"))
    if len(cluster.get("chief") or []) > 1:
        out.append((("cluster", "chief"), "more than one chief: TensorFlow allows at most one"))
    return out


def worker_count(cfg: dict) -> int:
    """Tasks that train in a TF_CONFIG: the chief (if any) plus the workers."""
    cluster = cfg.get("cluster") if isinstance(cfg.get("cluster"), dict) else {}
    return sum(len(v) for k, v in cluster.items() if k in ("chief", "worker") and isinstance(v, list))


# Past this many workers a TF_CONFIG is longer than the 128 KiB the kernel takes for one environment
# string (execve MAX_ARG_STRLEN; the pod-env-size rule): no pod could start with it, none is built.
MAX_WORKERS = 10_000


def pod_tf_configs(env: dict, jobset: str, rjob: str, job_index: int, pods, subdomain: str) -> list[dict] | None:
    """TF_CONFIG of each pod of the trainer job as tfkit.cluster builds it, or None when `env` is not the convention.

    `env` maps names to literal values (valueFrom entries map to None): the
    downward-API names resolve to the pod's labels, the task index to the pod's
    completion index. `pods`: the pod count, or the completion indices to build.
    """
    if not all(k in env for k in CONVENTION_ENV):
        return None
    try:
        workers = int(str(env[ENV_NUM_WORKERS]))
        port = int(str(env[ENV_PORT]))
    except ValueError:
        return None
    if workers > MAX_WORKERS:
        return None
    sub = env.get(ENV_SUBDOMAIN) or subdomain
    hosts = worker_hosts(jobset, rjob, job_index, workers, port, sub)
    indices = range(pods) if isinstance(pods, int) else pods
    return [{"cluster": {"worker": hosts}, "task": {"type": "worker", "index": i}} for i in indices]

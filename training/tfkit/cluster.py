"""TF_CONFIG for MultiWorkerMirroredStrategy, built by each pod from facts it can read.

Kubeflow Trainer v2 has no TensorFlow policy: a runtime with no ML policy
(Trainer's PlainML plugin) sets the trainer job's pod count to `numNodes` and
applies `trainer.env`, nothing else. So the pod builds its own TF_CONFIG from:

  TF_JOBSET_NAME     the pod's label jobset.sigs.k8s.io/jobset-name (downward API)
  TF_REPLICATED_JOB  the pod's label jobset.sigs.k8s.io/replicatedjob-name
  TF_JOB_INDEX       the pod's label jobset.sigs.k8s.io/job-index
  TF_TASK_INDEX      the Job completion index (annotation batch.kubernetes.io/job-completion-index)
  TF_NUM_WORKERS     the worker count: TrainJob trainer.env, copied from trainer.numNodes at
                     render time (kustomize replacement, or the chart's one `nodes` value)
  TF_PORT            the port every worker listens on (the container port of the runtime)
  TF_SUBDOMAIN       optional: the JobSet's network.subdomain (default: the JobSet's name)

Worker i is `<jobset>-<rjob>-<jobIdx>-<i>.<subdomain>:<port>`: the hostname an
Indexed Job gives pod i, resolved by the JobSet's headless Service.

A TF_CONFIG already in the environment is used as it is (it wins), after the
same checks. What the pod cannot read is the Job's pod count: if `numNodes` is
changed by another tool without TF_NUM_WORKERS, a pod whose index is past the
count stops at once with one line, and a count larger than the pods that exist
shows as a peer that never resolves (`wait_for_peers`), never as a silent
smaller cluster.

Local runs: TFKIT_ADDRESS_MAP (JSON, {"host:port": "127.0.0.1:port"}) rewrites
addresses after TF_CONFIG is built, so several workers can run on one machine.

Standard library only: `python3 -m tfkit.cluster` prints the TF_CONFIG of this pod.
"""
from __future__ import annotations

import json
import os
import re
import socket
import sys
import time

ENV_JOBSET = "TF_JOBSET_NAME"
ENV_RJOB = "TF_REPLICATED_JOB"
ENV_JOB_INDEX = "TF_JOB_INDEX"
ENV_TASK_INDEX = "TF_TASK_INDEX"
ENV_NUM_WORKERS = "TF_NUM_WORKERS"
ENV_PORT = "TF_PORT"
ENV_SUBDOMAIN = "TF_SUBDOMAIN"
ENV_ADDRESS_MAP = "TFKIT_ADDRESS_MAP"
ENV_PEER_TIMEOUT = "TFKIT_PEER_TIMEOUT"
REQUIRED = (ENV_JOBSET, ENV_RJOB, ENV_JOB_INDEX, ENV_TASK_INDEX, ENV_NUM_WORKERS, ENV_PORT)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class ClusterError(ValueError):
    """A TF_CONFIG that cannot be built or would be wrong; its text is one line for the log."""


def _int(env: dict, key: str, low: int) -> int:
    raw = env.get(key)
    try:
        v = int(str(raw).strip())
    except (TypeError, ValueError):
        raise ClusterError(f"{key}={raw!r}: expected an integer") from None
    if v < low:
        raise ClusterError(f"{key}={v}: expected at least {low}")
    return v


def worker_hosts(jobset: str, rjob: str, job_index: int, workers: int, port: int, subdomain: str = "") -> list[str]:
    """`<jobset>-<rjob>-<jobIdx>-<i>.<subdomain>:<port>` for i in 0..workers-1."""
    sub = subdomain or jobset
    return [f"{jobset}-{rjob}-{job_index}-{i}.{sub}:{port}" for i in range(workers)]


def build(env: dict | None = None) -> dict:
    """The TF_CONFIG (as a dict) of the pod whose environment is `env`."""
    env = dict(os.environ if env is None else env)
    if env.get("TF_CONFIG"):
        try:
            cfg = json.loads(env["TF_CONFIG"])
        except ValueError as e:
            raise ClusterError(f"TF_CONFIG is not JSON: {e}") from None
        check(cfg)
        return cfg
    missing = [k for k in REQUIRED if not str(env.get(k) or "").strip()]
    if missing:
        raise ClusterError(f"cannot build TF_CONFIG: {', '.join(missing)} not set (the runtime's env sets them; "
                           "or set TF_CONFIG)")
    workers = _int(env, ENV_NUM_WORKERS, 1)
    index = _int(env, ENV_TASK_INDEX, 0)
    job_index = _int(env, ENV_JOB_INDEX, 0)
    port = _int(env, ENV_PORT, 1)
    if port > 65535:
        raise ClusterError(f"{ENV_PORT}={port}: expected a port (1-65535)")
    if index >= workers:
        raise ClusterError(f"this pod is worker {index} but {ENV_NUM_WORKERS}={workers}: the TrainJob's numNodes was "
                           f"changed without {ENV_NUM_WORKERS} (they must be equal; the overlay and the chart copy one "
                           "into the other)")
    for key in (ENV_JOBSET, ENV_RJOB):
        if not DNS_LABEL.match(env[key]):
            raise ClusterError(f"{key}={env[key]!r}: expected a DNS label")
    cfg = {"cluster": {"worker": worker_hosts(env[ENV_JOBSET], env[ENV_RJOB], job_index, workers, port,
                                              env.get(ENV_SUBDOMAIN, ""))},
           "task": {"type": "worker", "index": index}}
    check(cfg)
    return cfg


def check(cfg: dict) -> None:
    """What MultiWorkerMirroredStrategy needs of a TF_CONFIG, each a ClusterError."""
    if not isinstance(cfg, dict) or not isinstance(cfg.get("cluster"), dict):
        raise ClusterError("TF_CONFIG has no cluster")
    cluster, task = cfg["cluster"], cfg.get("task") or {}
    for kind, hosts in cluster.items():
        if not isinstance(hosts, list) or not hosts:
            raise ClusterError(f"TF_CONFIG cluster.{kind} must be a non-empty list of host:port")
        for h in hosts:
            host, _, port = str(h).rpartition(":")
            if not host or not port.isdigit():
                raise ClusterError(f"TF_CONFIG cluster.{kind} address {h!r} has no port (host:port)")
    if "chief" in cluster and len(cluster["chief"]) != 1:
        raise ClusterError("TF_CONFIG cluster.chief must hold exactly one address")
    kind, index = task.get("type"), task.get("index")
    if kind not in cluster:
        raise ClusterError(f"TF_CONFIG task.type {kind!r} is not in the cluster ({', '.join(cluster)})")
    if not isinstance(index, int) or not 0 <= index < len(cluster[kind]):
        raise ClusterError(f"TF_CONFIG task.index {index!r} is not an index of cluster.{kind} "
                           f"({len(cluster[kind])} address(es))")


def apply_address_map(cfg: dict, env: dict | None = None) -> dict:
    """Rewrite addresses by TFKIT_ADDRESS_MAP (local runs); an unmapped address stays."""
    env = os.environ if env is None else env
    raw = env.get(ENV_ADDRESS_MAP)
    if not raw:
        return cfg
    try:
        mapping = json.loads(raw)
        assert isinstance(mapping, dict)
    except (ValueError, AssertionError):
        raise ClusterError(f"{ENV_ADDRESS_MAP} must be a JSON object of host:port -> host:port") from None
    out = json.loads(json.dumps(cfg))
    out["cluster"] = {k: [mapping.get(h, h) for h in v] for k, v in out["cluster"].items()}
    return out


def is_chief(cfg: dict) -> bool:
    """The task that writes checkpoints: `chief` if the cluster has one, else worker 0."""
    task = cfg.get("task") or {}
    if "chief" in cfg.get("cluster", {}):
        return task.get("type") == "chief"
    return task.get("type") == "worker" and task.get("index") == 0


def wait_for_peers(cfg: dict, timeout: float, poll: float = 2.0, resolve=socket.getaddrinfo) -> None:
    """Block until every address of the cluster resolves; a ClusterError naming the missing ones after `timeout`.

    A pod that is not scheduled has no DNS record yet; a worker that never appears
    means TF_NUM_WORKERS is larger than the pods the JobSet runs.
    """
    deadline = time.monotonic() + timeout
    pending = [h for hosts in cfg["cluster"].values() for h in hosts]
    while True:
        still = []
        for h in pending:
            host = h.rpartition(":")[0].strip("[]")
            try:
                resolve(host, None)
            except OSError:
                still.append(h)
        if not still:
            return
        if time.monotonic() >= deadline:
            raise ClusterError(f"peer(s) {', '.join(still)} did not appear in {timeout:.0f} s: is {ENV_NUM_WORKERS} "
                               "larger than the pods the JobSet runs (numNodes changed by another tool)?")
        pending = still
        time.sleep(poll)


def setup(env: dict | None = None) -> dict:
    """Build, map, check and export TF_CONFIG (before TensorFlow is imported); returns it."""
    env = os.environ if env is None else env
    cfg = apply_address_map(build(env), env)
    timeout = float(env.get(ENV_PEER_TIMEOUT) or 600)
    wait_for_peers(cfg, timeout)
    os.environ["TF_CONFIG"] = json.dumps(cfg, separators=(",", ":"))
    return cfg


def main(argv=None) -> int:
    try:
        cfg = apply_address_map(build())
    except ClusterError as e:
        print(f"tfkit.cluster: {e}", file=sys.stderr)
        return 2
    print(json.dumps(cfg, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

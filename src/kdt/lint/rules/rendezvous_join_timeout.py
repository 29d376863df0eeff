"""The rendezvous waits long enough for every node of the job to arrive.

An agent that joins torchrun's rendezvous gives up when the group is not
complete within the join timeout (c10d `join_timeout`, torch's default 600 s;
the static rendezvous' `timeout`, also 600 s), and its pod fails. The first
pod to start waits for the last one: the spread of the pods' start times
(scheduling, pulling a large image on a node that does not have it, starting
the container) plus the time the rendezvous itself takes, which grows with
the number of nodes. After a lost pod, the survivors wait the same way for its
replacement. A timeout that is enough for 2 nodes fails at 64, and the job
restarts over and over without ever forming.

Warns when the timeout is shorter than the time the rendezvous took for that
many agents (`bench/rendezvous.py`, the worst trial, interpolated between the
measured counts and extrapolated past them) plus an allowance for the pods'
start spread (option `pod_start_allowance_seconds`, default 180 s; raise it for
images that take longer to pull, lower it for pre-pulled images and gang
scheduling that starts every pod at once).

Where the settings are read, as torchrun reads them: `--rdzv-conf` of the
command line, else `PET_RDZV_CONF`, else a PyTorchJob's
`elasticPolicy.rdzvConf` (the operator passes it as PET_RDZV_CONF); the
number of nodes from `--nnodes` (the maximum of MIN:MAX), `PET_NNODES`, else
the replicas of the workload (a PyTorchJob's sum of replicas or
elasticPolicy.maxReplicas, a StatefulSet's replicas, a TrainJob's numNodes).
Values the manifest does not spell out (shell or `$(VAR)` references) are not
guessed.

Source: torch 2.13 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py
(join_timeout bounds next_rendezvous; default 600 s), static_tcp_rendezvous.py
(`timeout`, default 600 s, the TCPStore's wait for every node).
"""
from __future__ import annotations

from ...findings import WARNING
from ..pods import all_containers, as_int
from ._torchrun import launches_distributed, node_count, rdzv_backend, rdzv_settings, setting_path

ID = "rendezvous-join-timeout"
LEVEL = WARNING
BASIS = "risk"
WHY = ("Whether every node arrives in time depends on the cluster's scheduling and image pulls, measured "
       "here, not shown by the manifests.")
OPTIONS = {"pod_start_allowance_seconds": 180}

DEFAULT_TIMEOUT = 600          # torch: dynamic_rendezvous _DEFAULT_TIMEOUTS["join"], static _default_timeout_seconds
# Seconds from starting N agents at once until all N workers were in one group: the slowest trial
# that formed, with the keep-alive that let it form (bench/rendezvous.py on 2 cores; the manifests'
# launcher, at 64 torch's, the one that fits in memory; README "Rendezvous at scale"). Past the
# largest count: extrapolated by the last slope.
MEASURED = {8: 29.8, 16: 62.2, 32: 143.7, 64: 169.1}


def formation_seconds(nodes: int) -> float:
    """The measured rendezvous time for `nodes` agents: linear between measured counts and beyond them."""
    points = sorted(MEASURED.items())
    if nodes <= points[0][0]:
        return points[0][1] * nodes / points[0][0]
    for (n0, t0), (n1, t1) in zip(points, points[1:]):
        if nodes <= n1:
            return t0 + (t1 - t0) * (nodes - n0) / (n1 - n0)
    (n0, t0), (n1, t1) = points[-2], points[-1]
    return t1 + (t1 - t0) * (nodes - n1) / (n1 - n0)


def check(docs, ctx):
    allowance = float(ctx.opt("pod_start_allowance_seconds") or 0)
    pool = ctx.pool(docs)
    for doc in docs:
        for pt, path, c in all_containers(doc, init=False):
            backend = rdzv_backend(doc, c)
            if backend not in ("c10d", "static"):
                continue
            if pt is not None and not launches_distributed(c):
                continue                         # no torchrun in this container
            settings, where = rdzv_settings(doc, c)
            key = "join_timeout" if backend == "c10d" else "timeout"
            if key not in settings:
                continue                         # torch's 600 s
            timeout = as_int(settings[key])
            nodes = node_count(doc, c, pt.replicas if pt is not None else None, pool)
            if timeout is None or not nodes or nodes < 2:
                continue
            need = formation_seconds(nodes) + allowance
            if timeout < need:
                field = setting_path(path, c, key, where)
                yield doc.finding(ID, f"{key}={timeout} ({where}) is shorter than {nodes} nodes need: the "
                                      f"rendezvous of {nodes} agents took up to {formation_seconds(nodes):.0f} s "
                                      f"(bench/rendezvous.py) plus {allowance:.0f} s for the pods to start after the "
                                      f"first; agents that wait longer fail their pods and the group never forms "
                                      f"(use {key}={int(need // 60 + 1) * 60} or more)", field)
                break                            # one finding a job: its replica types share the setting

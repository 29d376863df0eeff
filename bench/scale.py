#!/usr/bin/env python3
"""The real schedulers at scale: Kueue admits, kube-scheduler places, KWOK runs a job of one pod per node on
64, 256 and 1,024 simulated nodes x 8 GPUs (kdt.live.schedulers, kdt.live.scalerun).

For each size: a fresh control plane with Kueue, coscheduling and KWOK (its start and the nodes' creation
printed apart), the ClusterQueue `training`'s quota set to the whole cluster (deploy/cluster/kueue holds it
at 64 nodes), and overlays/scale-512-statefulset with one replica per node (8 GPUs each, the topology request
preferred at the block, as shipped). Printed: seconds from apply to Kueue's admission, to every pod bound,
to every pod Running (KWOK's pod-ready stage), pods bound per second (first to last bound), the nodes and
blocks used, and the control plane's resident memory (every component's process group, after all are
Running), then whether time and memory grow linearly with the size (per-node figures side by side).

    .venv/bin/python bench/scale.py                       # 64, 256, 1024
    .venv/bin/python bench/scale.py --sizes 64,256 --runs 2
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from kdt.live import scalerun as SR  # noqa: E402
from kdt.live import schedulers as S  # noqa: E402

TARGET = "overlays/scale-512-statefulset"


def _replicas(n: int):
    def edit(d: dict) -> None:
        if d.get("kind") == "StatefulSet":
            d["spec"]["replicas"] = n
    return edit


def _quota(cluster, shape) -> None:
    cq = cluster.get_json("clusterqueue", "training")
    res = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    per = cluster.facts.per_node
    values = {"nvidia.com/gpu": shape.nodes * shape.gpus, "cpu": int(per["cpu"]) * shape.nodes,
              "memory": f"{int(per['memory'].removesuffix('Gi')) * shape.nodes}Gi"}
    patch = [{"op": "replace", "path": f"/spec/resourceGroups/0/flavors/0/resources/{i}/nominalQuota",
              "value": values[r["name"]]} for i, r in enumerate(res) if r["name"] in values]
    cluster.kubectl("patch", "clusterqueue", "training", "--type=json", "-p", json.dumps(patch))


def one(n: int, runs: int) -> list[dict]:
    shape = S.Shape(nodes=n, gpus=8, block=64, rack=16)
    t0 = time.monotonic()
    cluster = SR.start_cluster(shape, sys.stderr)
    started = time.monotonic() - t0
    rows = []
    try:
        _quota(cluster, shape)
        for _ in range(runs):
            obs, docs, applied, findings = SR.submit(cluster, TARGET, timeout=1800, edit=_replicas(n),
                                                     say=lambda m: print(m, file=sys.stderr, flush=True))
            mem = SR.memory(cluster)
            rows.append({"nodes": n, "start_s": started, "admitted_s": obs.admitted_s, "bound_s": obs.all_bound_s,
                         "running_s": obs.all_running_s, "pods": obs.bound, "distinct_nodes": len(obs.nodes),
                         "blocks": len(obs.blocks),
                         "rate": obs.bound / max((obs.all_bound_s or 0) - (obs.first_bound_s or 0), 0.1),
                         "mem": mem, "findings": [f.message for f in findings]})
            SR.delete(cluster, applied, SR.NAMESPACE, getattr(cluster, "scale_pvs", []), timeout=600)
            cluster.scale_pvs = []
    finally:
        cluster.stop()
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="64,256,1024", help="node counts (default 64,256,1024)")
    p.add_argument("--runs", type=int, default=1, help="jobs per size, one after another (default 1)")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = p.parse_args()
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        S.check_fits(S.Shape(nodes=n))
        rows += one(n, args.runs)
    print(f"# bench/scale.py on {os.cpu_count()} cores: {TARGET} with one replica per node, Kueue "
          f"{S.versions.KUEUE}, KWOK {S.versions.KWOK}")
    print(f"{'nodes':>6} {'start s':>8} {'admit s':>8} {'bound s':>8} {'Running s':>10} {'pods/s':>7} "
          f"{'nodes used':>10} {'blocks':>6} {'memory MiB':>10}  per component")
    for r in rows:
        mem = sum(r["mem"].values()) / 2**20
        parts = ", ".join(f"{k} {v / 2**20:.0f}" for k, v in sorted(r["mem"].items(), key=lambda kv: -kv[1])[:5])
        f = lambda v: f"{v:.1f}" if v is not None else "-"   # noqa: E731
        print(f"{r['nodes']:>6} {r['start_s']:>8.1f} {f(r['admitted_s']):>8} {f(r['bound_s']):>8} "
              f"{f(r['running_s']):>10} {r['rate']:>7.1f} {r['distinct_nodes']:>10} {r['blocks']:>6} {mem:>10.0f}  {parts}")
        for m in r["findings"]:
            print(f"   {m}")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        k = b["nodes"] / a["nodes"]
        if a["bound_s"] and b["bound_s"]:
            print(f"x{k:.0f} nodes: all bound x{b['bound_s'] / a['bound_s']:.1f}, memory "
                  f"x{sum(b['mem'].values()) / max(sum(a['mem'].values()), 1):.2f} "
                  f"({(sum(b['mem'].values()) - sum(a['mem'].values())) / (b['nodes'] - a['nodes']) / 2**20:.2f} MiB "
                  f"per node and pod)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    bad = [r for r in rows if r["pods"] != r["nodes"] or r["running_s"] is None]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

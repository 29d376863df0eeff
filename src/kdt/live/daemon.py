"""The process `kdt cluster up` leaves running: it owns one control plane and stops it on SIGTERM.

    python -m kdt.live.daemon FOLDER TRAINER TRAINING_OPERATOR [--control-plane-only] [--real-nodes N]
                              [--image ARCHIVE ...]

It starts the control plane in FOLDER/run (every component its child, killed by the kernel if this
process dies: kdt.live.controlplane), with N real nodes (kdt.live.realnodes: the kubelet, containerd and
runc, each ARCHIVE's image imported into every node) when asked, writes FOLDER/state.json once ready, and on
SIGTERM or SIGINT (or when the
process KDT_LIVE_OWNER_PID names is gone: a test session that owns it) stops every component, removes the state and exits 0. A component that dies ends the daemon (exit 1) with its
name in FOLDER/daemon.log, so `kdt cluster status` reports it and the next `up` starts clean.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from .kept import alive


def main(argv: list[str]) -> int:
    from ..errors import UsageError
    from .. import cluster_file
    from . import releases as R
    from .controlplane import Cluster
    folder, trainer, to = Path(argv[0]), argv[1], argv[2]
    operators = "--control-plane-only" not in argv[3:]
    real = int(argv[argv.index("--real-nodes") + 1]) if "--real-nodes" in argv else 0
    images = [Path(argv[i + 1]) for i, a in enumerate(argv) if a == "--image"]
    state = folder / "state.json"
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    from .realnodes import SERVICE_CIDR, RealNodes
    nodes = None
    try:
        cfile = cluster_file.load()
        c = Cluster.start(R.ReleaseSet(trainer, to), folder=folder / "run", stream=sys.stderr,
                          cluster_file=cfile, operators=operators,
                          service_cidr=SERVICE_CIDR if real else None)
    except UsageError as exc:
        print(f"live: error: {exc}", file=sys.stderr, flush=True)
        return 1
    try:
        if real:
            nodes = RealNodes(c, real, images, stream=sys.stderr)
            nodes.start()
        tmp = state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": os.getpid(), "kubeconfig": str(c.kubeconfig), "server": c.server,
                                   "trainer": trainer if operators else None,
                                   "training_operator": to if operators else None, "ports": c.ports,
                                   "components": {p.name: p.popen.pid for p in c.procs + (nodes.procs if nodes else [])},
                                   "real_nodes": [n.name for n in nodes.nodes] if nodes else [],
                                   "cluster_file": cfile.fingerprint,
                                   "owner": int(os.environ.get("KDT_LIVE_OWNER_PID") or 0) or None,
                                   "installed": sorted(list(k) for k in c.installed),
                                   "started_s": round(c.started_s, 1), "timeline": c.timeline}, indent=1))
        os.replace(tmp, state)
        owner = int(os.environ.get("KDT_LIVE_OWNER_PID") or 0)
        swept = 0.0
        while not stop:
            if time.monotonic() - swept >= 5:
                swept = time.monotonic()
                _sweep(c)
            if owner and not alive(owner):
                print(f"live: the owner (pid {owner}) is gone: stopping", file=sys.stderr, flush=True)
                return 0
            try:
                c.check()
                if nodes:
                    nodes.check()
            except UsageError as exc:
                print(f"live: error: {exc}", file=sys.stderr, flush=True)
                return 1
            time.sleep(0.5)
        return 0
    except UsageError as exc:
        print(f"live: error: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        state.unlink(missing_ok=True)
        if nodes:
            nodes.stop()
        c.stop()


def _sweep(c) -> None:
    """Nodes, volumes and namespaces of `kdt run --live` runs whose kdt died (kdt.live.node.sweep_orphans)."""
    from .api import Api
    from .node import sweep_orphans
    try:
        api = Api.from_kubeconfig(c.kubeconfig)
        for what in sweep_orphans(api):
            print(f"live: removed what a dead run left: {what}", file=sys.stderr, flush=True)
        api.close()
    except Exception as exc:       # the sweep is housekeeping: a failure is said, never the daemon's end
        print(f"live: sweep: {exc}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

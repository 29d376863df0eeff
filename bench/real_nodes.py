#!/usr/bin/env python3
"""Real nodes (kdt.live.realnodes): what they cost, measured.

    python bench/real_nodes.py            # warm: the node binaries' check, `up` with two real nodes, a pod's run
    python bench/real_nodes.py --cold     # also a cold build of every node binary (empty Go build cache and
                                          # kdt cache in a temporary folder; the module cache is kept): many minutes

Prints one line per figure: the build (cold, or the check that every binary is there), the control plane's
start, two real nodes' start (networks, containerd, images imported, kubelets Ready, CoreDNS, kube-proxy),
a busybox pod from apply to Succeeded on a real node, and the stop (everything removed).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kdt.live import build, oci, realnodes  # noqa: E402
from kdt.live.controlplane import Cluster  # noqa: E402


def _cold() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GOCACHE"] = str(Path(tmp) / "go-build")
        os.environ["KDT_LIVE_DIR"] = str(Path(tmp) / "live")
        t0 = time.monotonic()
        build.node()
        took = time.monotonic() - t0
        del os.environ["GOCACHE"], os.environ["KDT_LIVE_DIR"]
    return took


def _pod_run(c) -> float:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bench", "namespace": "default"},
           "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "kdt.local/busybox:bench",
                                                              "imagePullPolicy": "Never", "command": ["true"]}]}}
    t0 = time.monotonic()
    c.kubectl("apply", "-f", "-", input=json.dumps(pod))
    while c.get_json("pod", "bench").get("status", {}).get("phase") != "Succeeded":
        if time.monotonic() - t0 > 120:
            raise SystemExit("bench: the pod did not succeed in 120 s")
        time.sleep(0.1)
    return time.monotonic() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cold", action="store_true", help="also build every node binary from an empty Go build cache")
    p.add_argument("--nodes", type=int, default=2)
    args = p.parse_args()
    lack = realnodes.missing()
    if lack:
        print("real nodes cannot start on this host: no " + "; no ".join(lack) + " (nothing measured)")
        return 0
    if args.cold:
        print(f"cold build of the node binaries (kubelet, kube-proxy, containerd + shim + ctr, 4 CNI plugins, "
              f"CoreDNS, crictl): {_cold():.0f} s")
    t0 = time.monotonic()
    build.node(open(os.devnull, "w"))
    print(f"node binaries present (warm check): {time.monotonic() - t0:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        img = oci.write(oci.busybox("kdt.local/busybox:bench", user="1000:1000"), Path(tmp) / "bb.tar")
        t0 = time.monotonic()
        c = Cluster.start(folder=Path(tmp) / "cp", operators=False, service_cidr=realnodes.SERVICE_CIDR,
                          stream=open(os.devnull, "w"))
        print(f"control plane start (no operators): {time.monotonic() - t0:.1f} s")
        try:
            t0 = time.monotonic()
            n = realnodes.RealNodes(c, args.nodes, [img], stream=open(os.devnull, "w")).start()
            print(f"{args.nodes} real nodes up (Ready, GPUs declared, CoreDNS, kube-proxy): {time.monotonic() - t0:.1f} s")
            try:
                print(f"a busybox pod, apply to Succeeded on a real node: {_pod_run(c):.1f} s")
            finally:
                t0 = time.monotonic()
                n.stop()
                print(f"real nodes stopped, everything removed: {time.monotonic() - t0:.1f} s")
        finally:
            c.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

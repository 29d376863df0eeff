"""Real nodes' setup without starting one: each node binary set pinned by a committed module at its release,
the kubelet and kube-proxy at the control plane's own Kubernetes pin, the images written without an engine,
a host that cannot run a node said in one line, a kubelet reason located at its manifest field."""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from kdt.errors import UsageError
from kdt.live import build, oci, realnodes
from kdt.live import releases as R
from kdt.live.nodereasons import locate

ROOT = Path(__file__).resolve().parents[2]
KDT = [sys.executable, "-m", "kdt"]


def test_each_node_set_is_pinned_by_a_committed_module_with_its_release():
    assert {s.name for s in R.NODE_SETS} == {"containerd", "cni-plugins", "coredns", "cri-tools"}
    for s in R.NODE_SETS:
        mod = R.node_module(s)
        assert f"\t{s.module} {s.version}\n" in (mod / "go.mod").read_text()
        assert (mod / "go.sum").read_text().count(f"{s.module} {s.version}") >= 1
    names = {b for s in R.NODE_SETS for b in s.binaries}
    assert {"containerd", "containerd-shim-runc-v2", "ctr", "bridge", "host-local", "loopback", "portmap",
            "coredns", "crictl"} <= names
    proc = subprocess.run([sys.executable, "scripts/gen_live_modules.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_kubelet_and_kube_proxy_come_from_the_control_planes_module():
    tools = (R.CONTROL_PLANE_MODULE / "tools.go").read_text()
    for c in R.NODE_KUBERNETES:
        assert c.package.startswith("k8s.io/kubernetes/cmd/")
        assert f'"{c.package}/app"' in tools


def test_an_oci_archive_names_its_image_and_is_reproducible(tmp_path):
    a = oci.write(oci.busybox("kdt.local/busybox:user", user="1000:1000"), tmp_path / "a.tar")
    b = oci.write(oci.busybox("kdt.local/busybox:user", user="1000:1000"), tmp_path / "b.tar")
    assert a.read_bytes() == b.read_bytes()
    with tarfile.open(a) as t:
        index = json.loads(t.extractfile("index.json").read())
        man = index["manifests"][0]
        assert man["annotations"]["io.containerd.image.name"] == "kdt.local/busybox:user"
        manifest = json.loads(t.extractfile("blobs/sha256/" + man["digest"].split(":")[1]).read())
        config = json.loads(t.extractfile("blobs/sha256/" + manifest["config"]["digest"].split(":")[1]).read())
    assert config["config"]["User"] == "1000:1000"


def test_a_host_without_what_a_node_needs_is_one_line(monkeypatch):
    monkeypatch.setattr(realnodes.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(realnodes.shutil, "which", lambda name: None if name == "runc" else "/bin/" + name)
    with pytest.raises(UsageError) as exc:
        realnodes.preflight()
    msg = str(exc.value)
    assert "\n" not in msg and "no root" in msg and "no `runc` on PATH" in msg
    assert "the process path, kdt run --live without --real-nodes, still runs" in msg


def test_the_kubelets_reasons_are_located_at_the_manifest_field():
    spec = {"securityContext": {"runAsNonRoot": True},
            "initContainers": [{"name": "sync", "image": "a", "imagePullPolicy": "Never"}],
            "containers": [{"name": "main", "image": "b", "securityContext": {"runAsNonRoot": True}}]}
    msg = 'container has runAsNonRoot and image will run as root (pod: "p_default(1)", container: main)'
    assert locate(spec, "main", "CreateContainerConfigError", msg) == "spec.containers[0].securityContext.runAsNonRoot"
    del spec["containers"][0]["securityContext"]
    assert locate(spec, "main", "CreateContainerConfigError", msg) == "spec.securityContext.runAsNonRoot"
    assert locate(spec, "sync", "ErrImageNeverPull") == "spec.initContainers[0].imagePullPolicy"
    assert locate(spec, "main", "ErrImagePull") == "spec.containers[0].image"


def test_real_node_addresses_stay_in_the_shared_address_space():
    import ipaddress
    shared = ipaddress.ip_network(realnodes.ALL)
    for net in (realnodes.SERVICE_CIDR, realnodes.CLUSTER_CIDR, realnodes.POD_CIDR.format(i=1),
                realnodes.DNS_IP + "/32"):
        assert ipaddress.ip_network(net).subnet_of(shared), net
    assert not ipaddress.ip_network(realnodes.SERVICE_CIDR).overlaps(ipaddress.ip_network(realnodes.CLUSTER_CIDR))


def test_build_keys_name_the_release_and_module(monkeypatch, tmp_path):
    monkeypatch.setenv("KDT_LIVE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "go_version", lambda: "go1.26.8")
    monkeypatch.setattr(build, "_go", lambda *a, **k: (_ for _ in ()).throw(UsageError("built")))
    s = next(s for s in R.NODE_SETS if s.name == "containerd")
    with pytest.raises(UsageError, match="built"):
        build.node_set(s)
    (tmp_dir,) = (tmp_path / "bin").iterdir()
    assert tmp_dir.name.startswith("containerd-v2.4.2-") and ".tmp" in tmp_dir.name

"""The scale setup without a control plane: the pins in their one place, the nodes read from the cluster's
own Kueue objects, bad shapes as one line (exit 2, nothing started)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kdt import cluster_file as CF
from kdt import versions
from kdt.errors import UsageError
from kdt.live import releases as R
from kdt.live import schedulers as S

ROOT = Path(__file__).resolve().parents[2]
KDT = [sys.executable, "-m", "kdt"]


def test_each_scheduler_is_pinned_by_a_committed_module_at_its_version():
    names = {c.name: c for c in R.schedulers()}
    assert {n: c.version for n, c in names.items()} == {
        "kueue": versions.KUEUE, "scheduler-plugins": versions.SCHEDULER_PLUGINS, "kwok": versions.KWOK}
    for c in names.values():
        gomod = (R.operator_module(c) / "go.mod").read_text()
        assert f"\t{c.module} {c.version}\n" in gomod
        assert (R.operator_module(c) / "go.sum").stat().st_size > 1000
    # scheduler-plugins pins k8s.io's staging modules by replace directives: the module keeps them
    sp = (R.operator_module(names["scheduler-plugins"]) / "go.mod").read_text()
    assert "k8s.io/kubernetes => k8s.io/kubernetes v1.34.7" in sp
    check = subprocess.run([sys.executable, "scripts/gen_live_modules.py", "--check"], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    assert check.returncode == 0, check.stderr


def test_nodes_carry_the_flavors_labels_taints_topology_and_the_quota_per_node():
    f = S.facts(CF.load().objects)
    nodes = S.node_docs(S.Shape(nodes=64, gpus=8, block=32, rack=16), f)
    assert len(nodes) == 64 and len({n["metadata"]["name"] for n in nodes}) == 64
    n = nodes[40]
    labels = n["metadata"]["labels"]
    # deploy/cluster/kueue/resourceflavor.yaml and topology.yaml
    assert labels["node.kubernetes.io/instance-type"] == "g6e.48xlarge"
    assert labels["topology.k8s.aws/network-node-layer-2"] == "block-1"
    assert labels["topology.k8s.aws/network-node-layer-3"] == "block-1-rack-2"
    assert labels["kubernetes.io/hostname"] == n["metadata"]["name"]
    assert n["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    # clusterqueue.yaml: 11776 CPUs, 92160Gi, 512 GPUs over 64 nodes
    assert n["status"]["allocatable"] == {"cpu": "184", "memory": "1440Gi", "nvidia.com/gpu": "8", "pods": "110"}
    assert n["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}


def test_kueue_runs_with_the_integrations_the_targets_need():
    import json
    cfg = json.loads(S.kueue_config(9443, Path("/certs")))
    assert set(cfg["integrations"]["frameworks"]) >= {"kubeflow.org/pytorchjob", "trainer.kubeflow.org/trainjob",
                                                      "jobset.x-k8s.io/jobset", "pod", "statefulset"}
    assert cfg["internalCertManagement"] == {"enable": False} and cfg["webhook"]["host"] == "127.0.0.1"


@pytest.mark.parametrize("text", ["64", "0x8", "64x", "axb", ""])
def test_a_bad_shape_is_one_line(text):
    with pytest.raises(UsageError, match="expected NODESxGPUS"):
        S.parse_shape(text)


def test_simulate_without_live_or_with_a_bad_shape_exits_2_with_one_line():
    for args in (["--simulate", "64x8"], ["--live", "--simulate", "64by8"]):
        proc = subprocess.run([*KDT, "run", "overlays/scale-512-statefulset", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_a_cluster_too_big_for_this_machine_names_the_largest_that_fits():
    with pytest.raises(UsageError) as e:
        S.check_fits(S.parse_shape("100000x8"), available=8 * 2**30)
    most = S.largest_that_fits(8 * 2**30)
    assert f"the largest that fits is {most}x8" in str(e.value) and 64 < most < 100000
    S.check_fits(S.parse_shape("64x8"), available=8 * 2**30)     # fits: no error

"""The node agent's pure parts (kdt.live.node, kdt.live.liverun): how a live pod is named, what its node is
given, the address the API server is told. The agent itself runs on the real control plane in
tests/live/test_live_run.py."""
from __future__ import annotations

import pytest

from kdt.cli import run as R
from kdt.errors import UsageError
from kdt.live.liverun import node_capacity
from kdt.live.node import api_address, logical_name, selected_labels
from kdt.operators.framework.pods import Container, LocalPod


def _pod(name: str, labels: dict) -> dict:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}}


def test_a_job_pod_is_named_by_its_completion_index_every_other_by_its_name():
    job_pod = _pod("t5-fsdp-node-0-1-x7k2p", {"batch.kubernetes.io/job-name": "t5-fsdp-node-0",
                                              "batch.kubernetes.io/job-completion-index": "1"})
    assert logical_name(job_pod) == "t5-fsdp-node-0-1"
    assert logical_name(_pod("mnist-ddp-worker-0", {"training.kubeflow.org/replica-index": "0"})) == "mnist-ddp-worker-0"
    assert logical_name(_pod("train-llm-1", {"statefulset.kubernetes.io/pod-name": "train-llm-1"})) == "train-llm-1"


def test_nodes_carry_what_the_pod_selects():
    spec = {"nodeSelector": {"pool": "gpu"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                                      {"key": "nvidia", "operator": "Exists"},
                                      {"key": "spot", "operator": "NotIn", "values": ["true"]}]},
                {"matchExpressions": [{"key": "other", "operator": "In", "values": ["x"]}]}]}}}}
    assert selected_labels(spec) == {"pool": "gpu", "zone": "a", "nvidia": ""}
    assert selected_labels({}) == {}


def test_the_api_server_is_told_an_address_it_accepts_one_to_one_with_the_local_one():
    seen = {api_address(f"127.{net}.{hi}.{lo}") for net in (64, 100, 127, 254) for hi in (0, 3) for lo in (1, 250)}
    assert len(seen) == 16 and all(a.startswith("100.") and 64 <= int(a.split(".")[1]) < 128 for a in seen)
    assert api_address("127.77.0.2") == "100.77.0.2"


def _local(requests: dict, init: dict | None = None) -> LocalPod:
    p = LocalPod("p", {"spec": {}}, None, "", "", 0, None)
    p.containers = [Container("c", {"resources": {"requests": requests}}, (), None)]
    if init:
        p.init_containers = [Container("i", {"resources": {"requests": init}}, (), None, init=True)]
    return p


def test_a_node_holds_the_largest_pod_unless_the_user_sizes_it():
    cap = node_capacity([_local({"cpu": "500m", "memory": "2Gi"}), _local({"cpu": "3", "nvidia.com/gpu": "2"},
                                                                            init={"cpu": "6"})], {})
    assert cap["cpu"] == "6" and cap["memory"] == str(2 * 2 ** 30) and cap["nvidia.com/gpu"] == "2"
    assert node_capacity([_local({})], {})["cpu"] == "1" and "nvidia.com/gpu" not in node_capacity([_local({})], {})
    assert node_capacity([_local({"cpu": "8"})], {"cpu": "2"})["cpu"] == "2"
    assert R._node_size("cpu=2, memory=4Gi,nvidia.com/gpu=1") == {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}
    for bad in ("cpu", "cpu=lots", "=2"):
        with pytest.raises(UsageError, match="--node-size"):
            R._node_size(bad)

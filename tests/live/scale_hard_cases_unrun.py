# NOT RUN (branch scale only, not collected by pytest): the PyTorchJob, TrainJob and coscheduling cases, to be checked and renamed test_*.py
"""The scale targets on the real schedulers: Kueue v0.19.2's manager admits them, kube-scheduler and
scheduler-plugins v0.34.7's coscheduling place them on 64 simulated nodes x 8 GPUs (KWOK v0.8.0), and the
hard cases are observed, each with the real components' own message (kdt.live.schedulers, kdt.live.scalerun).

One control plane for the module; each test deletes what it applied (and waits until its pods are gone).
The offline verdict (kdt lint's Kueue rules, src/kdt/lint/rules/_kueue.py) is set beside each live one.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kdt.live import scalerun as SR
from kdt.live import schedulers as S

ROOT = Path(__file__).resolve().parents[2]
KDT = [sys.executable, "-m", "kdt"]
SHAPE = S.Shape(nodes=64, gpus=8, block=64, rack=16)

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def cluster():
    c = SR.start_cluster(SHAPE, sys.stderr)
    try:
        yield c
    finally:
        c.stop()


def _submit(cluster, target: str, namespace: str = SR.NAMESPACE, timeout: float = 300, **kw):
    obs, docs, applied, findings = SR.submit(cluster, target, namespace=namespace, timeout=timeout,
                                             say=lambda m: print(m, file=sys.stderr), **kw)
    return obs, docs, applied, findings


def _clean(cluster, applied, namespace: str = SR.NAMESPACE):
    SR.delete(cluster, applied, namespace, [])
    left = cluster.get_json("pods", "-n", namespace)["items"]
    assert not left, [p["metadata"]["name"] for p in left]


def _lint_kueue(target: str) -> list[dict]:
    """kdt lint's Kueue findings on `target` (the offline verdict: src/kdt/lint/rules/_kueue.py)."""
    proc = subprocess.run([*KDT, "lint", "-o", "json", target], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-1000:]
    return [f for f in json.loads(proc.stdout)["findings"] if str(f.get("rule", "")).startswith("kueue")]


@pytest.mark.parametrize("target", ["overlays/scale-512-pytorchjob", "overlays/scale-512-trainjob",
                                    "overlays/scale-512-statefulset", "charts/trainer/ci/scale-512-statefulset.yaml"])
def test_a_scale_target_is_admitted_and_placed_in_one_block(cluster, target):
    obs, docs, applied, findings = _submit(cluster, target)
    try:
        assert not findings, [f.message for f in findings]
        _same_pod_sets_as_the_model(docs, obs.workloads)
        assert obs.admitted, obs.workloads
        w = obs.workloads[0]
        assert w["cluster_queue"] == "training"
        flavors = {f for ps in w["pod_sets"] for f in ps["flavors"].values()}
        assert flavors == {"gpu-g6e-48xlarge"}, w
        assert all(ps["levels"] for ps in w["pod_sets"]), w      # a topology assignment for every pod set
        assert obs.expected == 64 and obs.bound == 64 and obs.running == 64, obs
        assert len(obs.nodes) == 64                               # one pod per node
        assert list(obs.blocks) == ["block-0"]                     # one block
    finally:
        _clean(cluster, applied)
    # the offline verdict agrees: no Kueue rule refuses it
    refused = [f for f in _lint_kueue(target) if f.get("level") == "error"]
    assert not refused, refused


def _same_pod_sets_as_the_model(docs, live: list) -> None:
    """The Workload Kueue made holds the pod sets the merge preview's model of Kueue says (names, counts, the
    topology request): src/kdt/operators/kueue/expand.py against the live Workload's spec.podSets."""
    from kdt.merge_preview import Limit, expand_documents, kueue_workloads
    expanded, _ = expand_documents(docs, options={"limit": Limit(None)})
    model = kueue_workloads(docs, expanded)
    assert len(model) == len(live) == 1, (model, live)
    want = {(ps.name, ps.count, ps.topology.preferred if ps.topology else None) for ps in model[0][1].pod_sets}
    got = {(ps["name"], ps["count"], ps["topology"].get("preferred")) for ps in live[0]["spec_pod_sets"]}
    assert want == got


def test_a_second_512_gpu_job_waits_whole_with_kueues_reason(cluster):
    first, _, applied1, f1 = _submit(cluster, "overlays/scale-512-statefulset")
    try:
        assert SR.running(first), first
        second, docs, applied2, f2 = _submit(cluster, "charts/trainer/ci/scale-512-statefulset.yaml",
                                             namespace="training-chart", timeout=60)
        try:
            assert not second.admitted and second.bound == 0, second     # not one pod bound
            assert "insufficient unused quota" in second.pending_message or "quota" in second.pending_message, second
            assert f2 and f2[0].path.endswith("kueue.x-k8s.io/queue-name"), f2
        finally:
            _clean(cluster, applied2, "training-chart")
    finally:
        _clean(cluster, applied1)


def test_a_quota_one_node_short_is_kueues_verdict_and_lints(cluster, tmp_path):
    cq = cluster.get_json("clusterqueue", "training")
    res = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    gpu = next(i for i, r in enumerate(res) if r["name"] == "nvidia.com/gpu")
    patch = [{"op": "replace", "path": f"/spec/resourceGroups/0/flavors/0/resources/{gpu}/nominalQuota", "value": 504}]
    cluster.kubectl("patch", "clusterqueue", "training", "--type=json", "-p", json.dumps(patch))
    try:
        obs, docs, applied, findings = _submit(cluster, "overlays/scale-512-statefulset", timeout=60)
        try:
            assert not obs.admitted and obs.bound == 0, obs
            assert "nvidia.com/gpu" in obs.pending_message, obs.pending_message
            assert findings and "Kueue:" in findings[0].message
        finally:
            _clean(cluster, applied)
    finally:
        patch[0]["value"] = 512
        cluster.kubectl("patch", "clusterqueue", "training", "--type=json", "-p", json.dumps(patch))


def test_a_queue_that_does_not_exist_is_located_at_the_queue_label(cluster, tmp_path):
    def no_queue(d):
        labels = (d.get("metadata") or {}).get("labels") or {}
        if SR.QUEUE_LABEL in labels:
            labels[SR.QUEUE_LABEL] = "no-such-queue"
    target = _rewritten(tmp_path, "overlays/scale-512-statefulset", "noqueue.yaml", no_queue)
    obs, docs, applied, findings = _submit(cluster, target, timeout=60)
    try:
        assert not obs.admitted and obs.bound == 0
        assert "no-such-queue" in obs.pending_message, obs.pending_message
        assert findings and findings[0].path.endswith("kueue.x-k8s.io/queue-name")
    finally:
        _clean(cluster, applied)
    # the offline verdict agrees: lint's kueue-local-queue refuses it
    assert any(f["rule"] == "kueue-local-queue" for f in _lint_kueue(target))


def _rewritten(tmp_path: Path, target: str, name: str, edit) -> str:
    """The target's rendered documents, each passed through `edit`, as one file."""
    import yaml
    _, docs = SR.target_documents(target)
    datas = [d.data for d in docs]
    for d in datas:
        edit(d)
    out = tmp_path / name
    out.write_text(yaml.safe_dump_all(datas))
    return str(out)


def test_a_gang_with_one_pod_unschedulable_binds_none(cluster, tmp_path):
    """Coscheduling holds a PyTorchJob's gang (the Training Operator's PodGroup, minMember 64) when one node of
    the 64 is cordoned: no pod is bound while 63 could be. The job is not queued here (no queue label: Kueue
    leaves it alone, manageJobsWithoutQueueName false), so what holds it is the scheduler alone."""
    def unqueued(d):
        ((d.get("metadata") or {}).get("labels") or {}).pop(SR.QUEUE_LABEL, None)
    target = _rewritten(tmp_path, "overlays/scale-512-pytorchjob", "unqueued.yaml", unqueued)
    cluster.kubectl("cordon", "gpu-0063")
    try:
        obs, docs, applied, findings = _submit(cluster, target, namespace="default", timeout=25)
        try:
            assert not obs.workloads, obs.workloads       # not Kueue's
            assert obs.pods == 64 and obs.bound == 0, obs
            pg = cluster.get_json("podgroups.scheduling.x-k8s.io", "-n", "default")["items"]
            assert pg and pg[0]["spec"]["minMember"] == 64, pg
            pods = cluster.get_json("pods", "-n", "default")["items"]
            assert {p["spec"]["schedulerName"] for p in pods} == {S.SECOND_SCHEDULER}
        finally:
            _clean(cluster, applied, "default")
    finally:
        cluster.kubectl("uncordon", "gpu-0063")


def test_a_topology_block_too_small_is_tas_verdict_and_preferred_spreads(cluster, tmp_path):
    """Blocks of 32 nodes (the upper half relabelled): a pod set that requires one block of 64 is not admitted,
    with Kueue's topology-aware scheduling's message located at the topology annotation; the shipped
    `preferred` request is admitted across two blocks. The offline model cannot say either: a block's size is
    the cluster's nodes, in no manifest."""
    level = cluster.facts.levels[0]
    upper = [f"gpu-{i:04d}" for i in range(32, 64)]
    cluster.kubectl("label", "nodes", *upper, f"{level}=block-1", "--overwrite")
    try:
        def required(d):
            ann = (((d.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("annotations") or {}
            if "kueue.x-k8s.io/podset-preferred-topology" in ann:
                ann["kueue.x-k8s.io/podset-required-topology"] = ann.pop("kueue.x-k8s.io/podset-preferred-topology")
        target = _rewritten(tmp_path, "overlays/scale-512-statefulset", "required.yaml", required)
        obs, docs, applied, findings = _submit(cluster, target, timeout=60)
        try:
            assert not obs.admitted and obs.bound == 0, obs
            assert findings and "podset-required-topology" in findings[0].path, findings
            print("Kueue:", obs.pending_message, file=sys.stderr)
        finally:
            _clean(cluster, applied)
        obs, docs, applied, findings = _submit(cluster, "overlays/scale-512-statefulset")
        try:
            assert obs.admitted and obs.running == 64 and len(obs.nodes) == 64, obs
            assert sorted(obs.blocks) == ["block-0", "block-1"] and sorted(obs.blocks.values()) == [32, 32], obs.blocks
        finally:
            _clean(cluster, applied)
    finally:
        cluster.kubectl("label", "nodes", *upper, f"{level}=block-0", "--overwrite")

"""The scale targets on the real schedulers: Kueue v0.19.2's manager admits them, kube-scheduler and
scheduler-plugins v0.34.7's coscheduling place them on 64 simulated nodes x 8 GPUs (KWOK v0.8.0), and the
hard cases are observed, each with the real components' own message (kdt.live.schedulers, kdt.live.scalerun).

One control plane for the module; each test deletes what it applied (and waits until its pods are gone).
The offline verdict (kdt lint's Kueue rules, src/kdt/lint/rules/_kueue.py; the merge preview's Workload,
src/kdt/operators/kueue/expand.py) is set beside each live one. Here: the StatefulSet targets (overlay and
chart twin), a second 512-GPU job, a queue that does not exist.
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
    # the StatefulSet targets need no operator; coscheduling is not what admits or places them
    c = SR.start_cluster(SHAPE, sys.stderr, coscheduling=False, operators=False)
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


@pytest.mark.parametrize("target", ["overlays/scale-512-statefulset"])
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


def test_a_second_512_gpu_job_waits_whole_and_a_missing_queue_is_located(cluster, tmp_path):
    first, _, applied1, f1 = _submit(cluster, "overlays/scale-512-statefulset")
    try:
        assert SR.running(first), first
        second, docs, applied2, f2 = _submit(cluster, "charts/trainer/ci/scale-512-statefulset.yaml",
                                             namespace="training-chart", timeout=90)
        try:
            assert not second.admitted and second.bound == 0, second     # not one pod bound
            assert "quota" in second.pending_message, second.pending_message
            assert f2 and "kueue.x-k8s.io/queue-name" in f2[0].path and "Kueue:" in f2[0].message, f2
        finally:
            _clean(cluster, applied2, "training-chart")
    finally:
        _clean(cluster, applied1)

    def no_queue(d):
        labels = (d.get("metadata") or {}).get("labels") or {}
        if SR.QUEUE_LABEL in labels:
            labels[SR.QUEUE_LABEL] = "no-such-queue"
    target = _rewritten(tmp_path, "overlays/scale-512-statefulset", "noqueue.yaml", no_queue)
    obs, docs, applied, findings = _submit(cluster, target, timeout=90)
    try:
        assert not obs.admitted and obs.bound == 0, obs
        assert "no-such-queue" in obs.pending_message, obs.pending_message
        assert findings and "kueue.x-k8s.io/queue-name" in findings[0].path, findings
    finally:
        _clean(cluster, applied)
    # the offline verdict agrees: lint's kueue-local-queue refuses it
    assert any(f["rule"] == "kueue-local-queue" for f in _lint_kueue(target))

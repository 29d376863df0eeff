"""The topology request and the Volcano gang (#28) on each path: the components and the chart's values make
the same objects, which validate, lint clean against the shipped queues (.kdt-cluster.yaml) and become a
Kueue Workload that asks for the Topology's block level."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kdt import cluster_file as cluster, kinds as K
from kdt import targets as T
from kdt.expand.model import Loader
from kdt.findings import ERROR
from kdt.lint import lint_target
from kdt.render import render
from kdt.validate import validate_documents

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chart"))
from chart_support import CI, CHART, differences, keyed, strip_helm_own  # noqa: E402

REPO = cluster.load()
BLOCK = "topology.k8s.aws/network-node-layer-2"       # deploy/cluster/kueue/topology.yaml
PREFERRED, GROUP = "kueue.x-k8s.io/podset-preferred-topology", "kueue.x-k8s.io/podset-group-name"
TOPOLOGY = ("scheduling.queueName=training", "scheduling.topology.mode=preferred")
VOLCANO = ("scheduling.gang.enabled=true", "scheduling.gang.scheduler=volcano")

CASES = [
    ("ddp", ["kueue/pytorchjob", "topology/pytorchjob", "gang-scheduling/pytorchjob-volcano"], (*TOPOLOGY, *VOLCANO)),
    ("elastic", ["kueue/pytorchjob", "topology/pytorchjob-workers"], TOPOLOGY),
    ("fsdp-trainer-2.3", ["kueue/trainjob", "topology/trainjob", "gang-scheduling/trainjob-volcano"],
     (*TOPOLOGY, *VOLCANO)),
    ("statefulset", ["kueue/statefulset", "topology/statefulset"], TOPOLOGY),
]


@pytest.mark.parametrize("overlay,components,values", CASES, ids=[c[0] for c in CASES])
def test_components_and_chart_values_make_the_same_queued_topology_aware_job(overlay_with, overlay, components, values):
    t, r = overlay_with(overlay, components)
    assert r.ok, r.findings
    ci = CI / f"{overlay}.yaml"
    chart = render(T.Target(f"charts/trainer/ci/{overlay}.yaml", T.HELM, ci, CHART), helm_set=values)
    assert chart.ok, chart.findings
    want, got = keyed(d.data for d in r.documents), keyed(strip_helm_own(d.data) for d in chart.documents)
    assert sorted(want, key=str) == sorted(got, key=str)
    assert [f"{k[1]}{d}" for k in want for d in differences(want[k], got[k])] == []

    trainer = "2.3"
    assert validate_documents(r.documents, trainer_version=trainer) == []
    assert [f for f in lint_target(t, r.documents, trainer, cluster=REPO) if f.level == ERROR] == []
    ctx = K.ExpandContext(r.documents, Loader(), trainer, REPO.options)
    (w,) = [w for d in r.documents if (w := K.kueue_workload(d, ctx)) is not None]
    assert w.queue == "training"
    for ps in w.pod_sets:
        assert ps.topology is not None and ps.topology.preferred == BLOCK, ps.name
        assert ps.topology.group == "training-job"        # the same annotations on every path
    by_kind = {d.kind: d for d in r.documents}
    if "gang-scheduling/pytorchjob-volcano" in components:
        assert by_kind["PyTorchJob"].data["spec"]["runPolicy"]["schedulingPolicy"] == {"queue": "training"}
    if "gang-scheduling/trainjob-volcano" in components:
        rt = by_kind["ClusterTrainingRuntime"].data["spec"]
        assert rt["podGroupPolicy"] == {"volcano": {}}
        assert rt["template"]["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "training"}
        assert rt["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["schedulerName"] \
            == "volcano"
    if any("volcano" in c for c in components):      # the Volcano Queue the gang names is the cluster's
        assert [d.name for d in REPO.objects if d.group == "scheduling.volcano.sh"] == ["training"]


def test_the_master_and_worker_topology_component_refuses_a_job_without_a_master(overlay_with):
    _, r = overlay_with("elastic", ["topology/pytorchjob"])
    assert not r.ok and any("missing path: /spec/pytorchReplicaSpecs/Master" in f.message for f in r.findings), r.findings


def test_the_runtime_keeps_its_pod_metadata_when_the_request_is_copied_in(overlay_with):
    _, r = overlay_with("fsdp-trainer-2.3", ["topology/trainjob", "spread/trainjob"])
    rt = next(d for d in r.documents if d.kind == "ClusterTrainingRuntime").data
    job = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]
    assert job["metadata"]["labels"] == {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    assert job["spec"]["template"]["metadata"] == {"annotations": {PREFERRED: BLOCK, GROUP: "training-job"}}
    assert rt["metadata"]["annotations"] == {PREFERRED: BLOCK, GROUP: "training-job"}   # written once, on the runtime

"""The optional Kueue and gang-scheduling components (#17): each lands on the right object of its path,
and an overlay with them renders, validates and lints clean."""
from __future__ import annotations

import pytest

from kdt.lint import lint_target
from kdt.validate import validate_documents

QUEUE = "kueue.x-k8s.io/queue-name"


@pytest.mark.parametrize("overlay,components,trainer", [
    ("ddp", ["kueue/pytorchjob", "gang-scheduling/pytorchjob"], "2.3"),
    ("elastic", ["kueue/pytorchjob", "gang-scheduling/pytorchjob"], "2.3"),
    ("fsdp-trainer-2.3", ["kueue/trainjob", "gang-scheduling/trainjob"], "2.3"),
    ("fsdp", ["kueue/trainjob", "gang-scheduling/trainjob"], "2.1"),
    ("statefulset", ["kueue/statefulset"], "2.3"),
])
def test_components_land_on_the_job_and_keep_the_overlay_clean(overlay_with, overlay, components, trainer):
    t, r = overlay_with(overlay, components)
    assert r.ok, r.findings
    by_kind = {d.kind: d for d in r.documents}
    job = by_kind.get("PyTorchJob") or by_kind.get("TrainJob") or by_kind["StatefulSet"]
    assert job.data["metadata"]["labels"][QUEUE] == "training"
    labelled = [d.kind for d in r.documents if QUEUE in (d.data["metadata"].get("labels") or {})]
    assert labelled == [job.kind]            # on the job only: never its PVCs, Service or runtime
    if "PyTorchJob" in by_kind:
        assert by_kind["PyTorchJob"].data["spec"]["runPolicy"]["schedulingPolicy"] == {"scheduleTimeoutSeconds": 600}
    if "ClusterTrainingRuntime" in by_kind:
        assert by_kind["ClusterTrainingRuntime"].data["spec"]["podGroupPolicy"] == {
            "coscheduling": {"scheduleTimeoutSeconds": 600}}
    assert validate_documents(r.documents, trainer_version=trainer) == []
    assert lint_target(t, r.documents, trainer) == []


# ------------------------------------------------------- the 512-rank targets (64 nodes x 8 GPUs)

def _scale(name):
    from kdt import targets as T
    from kdt.expand import expand_documents
    from kdt.render import render
    t = T.Target(f"overlays/{name}", T.KUSTOMIZE, T.ROOT / "overlays" / name)
    r = render(t)
    assert r.ok, r.findings
    expanded, findings = expand_documents(r.documents)
    assert findings == []
    return t, r, expanded


@pytest.mark.parametrize("name", ["scale-512-pytorchjob", "scale-512-trainjob", "scale-512-statefulset"])
def test_512_rank_targets_are_clean_queued_and_sized_once(name):
    from kdt import summary as S
    t, r, expanded = _scale(name)
    assert validate_documents(r.documents, trainer_version="2.3") == []
    assert lint_target(t, r.documents, "2.3") == []
    (w,) = S.summarize(t.name, r.documents).workloads
    assert (w.max_nodes, w.gpus_per_node, w.world_size) == (64, 8, "512")
    job = next(d for d in r.documents if d.kind in ("PyTorchJob", "TrainJob", "StatefulSet"))
    assert job.data["metadata"]["labels"][QUEUE] == "training"
    if job.kind == "StatefulSet":   # NNODES re-derived after the resize (components/statefulset-nnodes)
        env = {e["name"]: e.get("value") for e in job.data["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["NNODES"] == "64"
        assert len([e for e in expanded if e.kind == "Pod"]) == 64
    if job.kind == "PyTorchJob":
        assert job.data["spec"]["runPolicy"]["schedulingPolicy"] == {"scheduleTimeoutSeconds": 600}
        assert len([e for e in expanded if e.kind == "Pod"]) == 64


def test_512_rank_trainjob_preview_has_64_pods_ranked_0_to_63_with_8_processes_each():
    from kdt.expand import pod_notes
    _, r, expanded = _scale("scale-512-trainjob")
    (js,) = [e for e in expanded if e.kind == "JobSet"]
    assert js.facts["pods"] == [f"t5-fsdp-node-0-{i}" for i in range(64)]
    assert js.facts["nproc_effective"] == 8 and js.facts["world_size"] == 512
    rjob = js.obj["spec"]["replicatedJobs"][0]
    assert rjob["template"]["spec"]["parallelism"] == 64
    notes = pod_notes(js)
    assert notes[0].startswith("PET_NODE_RANK is each pod's completion index; 8 processes per node")
    assert notes[1:] == [f"  pod t5-fsdp-node-0-{i}: PET_NODE_RANK={i}, ranks {8 * i}-{8 * i + 7}" for i in range(64)]
    runtime = next(d for d in r.documents if d.kind == "ClusterTrainingRuntime")
    assert runtime.data["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 600}}

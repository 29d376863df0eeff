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

"""The optional scheduling components (#17: Kueue, gang scheduling, priority, one pod per node): each
lands on the right object of its path, and an overlay with them renders, validates and lints clean."""
from __future__ import annotations

import pytest
import yaml

from kdt import cluster_file as cluster
from kdt.lint import lint_target
from kdt.lint.pods import pod_templates
from kdt.lint.rules._own_pods import selects
from kdt.validate import validate_documents

QUEUE = "kueue.x-k8s.io/queue-name"
CLASS = "training-large"      # deploy/cluster/priorityclass.yaml
REPO = cluster.load()         # the clusters this repository deploys to (.kdt-cluster.yaml), as make preview reads them


PLACEMENT = {"pytorchjob": ["priority/pytorchjob", "spread/pytorchjob", "zone/pytorchjob"],
             "elastic": ["priority/pytorchjob-workers", "spread/pytorchjob-workers", "zone/pytorchjob-workers"],
             "trainjob": ["priority/trainjob", "spread/trainjob"],      # the zone: in components/trainer-2.x
             "statefulset": ["priority/statefulset", "spread/statefulset", "zone/statefulset"]}
ZONE = "topology.kubernetes.io/zone"


@pytest.mark.parametrize("overlay,components,trainer", [
    ("ddp", ["kueue/pytorchjob", "gang-scheduling/pytorchjob", *PLACEMENT["pytorchjob"]], "2.3"),
    ("elastic", ["kueue/pytorchjob", "gang-scheduling/pytorchjob", *PLACEMENT["elastic"]], "2.3"),
    ("fsdp-trainer-2.3", ["kueue/trainjob", "gang-scheduling/trainjob", *PLACEMENT["trainjob"]], "2.3"),
    ("fsdp", ["kueue/trainjob", "gang-scheduling/trainjob", *PLACEMENT["trainjob"]], "2.1"),
    ("statefulset", ["kueue/statefulset", *PLACEMENT["statefulset"]], "2.3"),
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
    placed = by_kind.get("ClusterTrainingRuntime") or job     # a TrainJob's pods: in the runtime
    for pt in pod_templates(placed):
        assert pt.spec["priorityClassName"] == CLASS, pt.role
        assert [c["topologyKey"] for c in pt.spec["topologySpreadConstraints"]] == ["kubernetes.io/hostname"]
    if job.kind != "TrainJob":
        for pt in pod_templates(job):
            assert pt.spec["nodeSelector"][ZONE] == "ap-northeast-2a", pt.role
            assert pt.spec["nodeSelector"]["karpenter.sh/nodepool"] == "gpu"     # added to, not replaced
    assert validate_documents(r.documents, trainer_version=trainer) == []
    assert lint_target(t, r.documents, trainer, cluster=REPO) == []


def test_a_pytorchjob_without_a_master_fails_the_master_and_worker_components(overlay_with):
    _, r = overlay_with("elastic", ["priority/pytorchjob"])
    assert not r.ok and any("Master" in f.message for f in r.findings), r.findings


def test_the_priority_class_is_applied_once_per_cluster_and_named_as_the_components_name_it():
    from kdt import targets as T
    from kdt.render import render
    t = T.Target("deploy/cluster", T.KUSTOMIZE, T.ROOT / "deploy" / "cluster")
    r = render(t)
    assert r.ok, r.findings
    (pc,) = r.documents
    assert (pc.kind, pc.name, pc.data["preemptionPolicy"]) == ("PriorityClass", CLASS, "Never")
    assert validate_documents(r.documents) == [] and lint_target(t, r.documents, "2.3") == []
    named = []
    for k in sorted((T.ROOT / "components" / "priority").glob("*/kustomization.yaml")):
        for patch in yaml.safe_load(k.read_text())["patches"]:
            body = yaml.safe_load(patch["patch"])
            named += ([op["value"] for op in body if op["path"].endswith("/priorityClassName") and "value" in op]
                      if isinstance(body, list) else [body["spec"]["template"]["spec"]["priorityClassName"]])
    assert len(named) == 3 and set(named) == {CLASS}      # pytorchjob/ copies pytorchjob-workers/


# ------------------------------------------------------- the 512-rank targets (64 nodes x 8 GPUs)

def _scale(name):
    from kdt import targets as T
    from kdt.merge_preview import expand_documents
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
    assert lint_target(t, r.documents, "2.3", cluster=REPO) == []
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
    from kdt.merge_preview import pod_notes
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


@pytest.mark.parametrize("name", ["scale-512-pytorchjob", "scale-512-trainjob", "scale-512-statefulset"])
def test_512_rank_pods_have_the_priority_and_a_spread_that_picks_exactly_the_jobs_own_pods(name):
    """The spread's selector, with matchLabelKeys read from each pod as the scheduler reads them, picks
    the 64 pods the operator makes of this job (labels as the merge preview gives them) and no pod of a
    second copy of the job under another name."""
    from kdt.kinds import local_pods
    _, r, expanded = _scale(name)
    pods = [p.obj for p in local_pods(expanded)]
    assert len(pods) == 64
    other = []
    for p in pods:   # the same job under another name: its pods carry the other job's name
        labels = dict(p["metadata"]["labels"])
        for k in ("training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name", "app.kubernetes.io/instance"):
            if k in labels:
                labels[k] = "other-" + labels[k]
        other.append(labels)
    for p in pods:
        spec, labels = p["spec"], p["metadata"]["labels"]
        assert spec["priorityClassName"] == CLASS
        (c,) = spec["topologySpreadConstraints"]
        hard = "ScheduleAnyway" if name.endswith("statefulset") else "DoNotSchedule"   # no gang: a preference
        assert (c["topologyKey"], c["maxSkew"], c["whenUnsatisfiable"]) == ("kubernetes.io/hostname", 1, hard)
        sel = dict(c["labelSelector"])
        sel["matchExpressions"] = list(sel.get("matchExpressions", [])) + [
            {"key": k, "operator": "In", "values": [labels[k]]} for k in c["matchLabelKeys"]]   # each key on the pod
        assert all(selects(sel, q["metadata"]["labels"]) for q in pods)
        assert not any(selects(sel, q) for q in other)

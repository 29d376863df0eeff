"""Every shipped pod meets Pod Security "restricted" as the operators create it, and mounts no API token (#26);
the namespace labels that enforce it; the optional NetworkPolicy (#13)."""
from __future__ import annotations

import subprocess

import pytest

from kdt import cluster_file as cluster
from kdt import podsecurity as PS
from kdt import targets
from kdt.merge_preview import expand_documents
from kdt.findings import ERROR
from kdt.lint import lint_target
from kdt.lint.pods import pod_templates
from kdt.operators import injection as INJ
from kdt.render import render

TARGETS = targets.discover()
ROOT = targets.ROOT
REPO = cluster.load()          # .kdt-cluster.yaml: the Training Operator gets deploy/cluster's template


def created_pods(docs, with_cluster=REPO):
    """(name, metadata, spec) of every pod the merge preview says the operators create."""
    expanded, findings = expand_documents(docs, options=with_cluster.options if with_cluster else None)
    assert findings == []
    for e in expanded:
        if e.kind == "Pod":
            yield e.name, e.obj.get("metadata") or {}, e.obj["spec"]
        for rj in (e.obj["spec"].get("replicatedJobs") or []) if e.kind == "JobSet" else []:
            t = rj["template"]["spec"]["template"]
            yield f"{e.name}/{rj['name']}", t.get("metadata") or {}, t["spec"]


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_every_shipped_pod_is_restricted_and_mounts_no_token(target):
    r = render(target)
    assert r.ok, r.findings
    pods = [pt for d in r.documents for pt in pod_templates(d)]
    assert pods, "a target with no pod template"
    for pt in pods:
        assert pt.spec.get("automountServiceAccountToken") is False, (pt.doc.kind, pt.path)
        assert pt.spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for c in pt.spec["containers"]:
            assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    created = list(created_pods(r.documents))
    assert created
    for name, meta, spec in created:
        assert PS.evaluate(meta, spec, PS.RESTRICTED, PS.NEWEST) == [], name
    workers = [spec for name, _, spec in created if "-worker-" in name]
    if any(d.kind == "PyTorchJob" and "Master" in d.data["spec"]["pytorchReplicaSpecs"] for d in r.documents):
        # the operator's init container after the pod's own (components/git-code's clone, where a target has it)
        assert workers and all([c["name"] for c in s["initContainers"] if c["name"] != "git-sync"]
                               == [INJ.V1_INIT_CONTAINER_NAME] for s in workers)
    assert [f for f in lint_target(target, r.documents, cluster=REPO) if f.rule == "pod-security"] == []


def test_the_operators_built_in_init_container_fails_restricted_in_the_worker_pods():
    """The issue's finding: with the operator's own template, the Worker pods of overlays/ddp are rejected."""
    r = render(targets.Target("overlays/ddp", targets.KUSTOMIZE, ROOT / "overlays" / "ddp"))
    judged = {name: {b.check for b in PS.evaluate(meta, spec, PS.RESTRICTED, PS.NEWEST)}
              for name, meta, spec in created_pods(r.documents, with_cluster=None)}
    assert judged == {"mnist-ddp-master-0": set(),
                      "mnist-ddp-worker-0": {"allowPrivilegeEscalation", "capabilities_restricted"}}


def test_the_pod_security_component_makes_the_cluster_enforce_what_lint_checks(overlay_with):
    t, r = overlay_with("ddp", ["pod-security"], namespace="team-a")
    assert r.ok, r.findings
    (ns,) = [d for d in r.documents if d.kind == "Namespace"]
    assert ns.name == "team-a" and {k: v for k, v in ns.data["metadata"]["labels"].items()} == {
        f"pod-security.kubernetes.io/{m}{s}": v for m in ("enforce", "warn", "audit")
        for s, v in (("", "restricted"), ("-version", "latest"))}
    assert [f for f in lint_target(t, r.documents, cluster=REPO) if f.rule == "pod-security"] == []
    rejected = [f for f in lint_target(t, r.documents) if f.rule == "pod-security"]
    assert {(f.level, f.path.split(".securityContext")[0]) for f in rejected} == {
        (ERROR, "spec.pytorchReplicaSpecs.Worker.template.spec.initContainers[0]")}


def test_the_charts_pod_security_value_labels_the_release_namespace():
    t = targets.Target("charts/trainer/ci/ddp.yaml", targets.HELM, ROOT / "charts/trainer/ci/ddp.yaml",
                       ROOT / "charts/trainer")
    r = render(t, ("podSecurity.createNamespace=true", "podSecurity.warn=baseline"))
    assert r.ok, r.findings
    (ns,) = [d for d in r.documents if d.kind == "Namespace"]
    labels = ns.data["metadata"]["labels"]
    assert ns.name == "default" and labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["pod-security.kubernetes.io/warn"] == "baseline" and labels["pod-security.kubernetes.io/audit-version"] == "latest"
    assert [f for f in lint_target(t, r.documents, cluster=REPO) if f.rule == "pod-security"] == []
    assert {f.level for f in lint_target(t, r.documents) if f.rule == "pod-security"} == {ERROR}
    assert not [d for d in render(t).documents if d.kind == "Namespace"]      # off by default


@pytest.mark.parametrize("overlay,component,label,value", [
    ("ddp", "pytorchjob", "training.kubeflow.org/job-name", "mnist-ddp"),
    ("elastic", "pytorchjob", "training.kubeflow.org/job-name", "mnist-elastic"),
    ("fsdp-trainer-2.3", "trainjob", "jobset.sigs.k8s.io/jobset-name", "t5-fsdp"),
    ("statefulset", "statefulset", "app.kubernetes.io/instance", "train-llm"),
])
def test_network_policy_component_selects_the_jobs_own_pods(overlay_with, overlay, component, label, value):
    _, r = overlay_with(overlay, [f"network-policy/{component}"])
    assert r.ok, r.findings
    (np,) = [d.data for d in r.documents if d.kind == "NetworkPolicy"]
    assert np["spec"]["podSelector"]["matchLabels"][label] == value
    assert np["spec"]["ingress"] == [{"from": [{"podSelector": np["spec"]["podSelector"]}]}]
    assert np["spec"]["policyTypes"] == ["Ingress"]


@pytest.mark.parametrize("values", sorted((ROOT / "charts/trainer/ci").glob("*.yaml")), ids=lambda p: p.name)
def test_chart_network_policy_value(values):
    helm = str(ROOT / ".venv/bin/helm")
    base = [helm, "template", "trainer", str(ROOT / "charts/trainer"), "-f", str(values)]
    import yaml

    def peers(text):       # the job's own policy (a torchft job also has its Lighthouse's)
        return [d for d in yaml.safe_load_all(text) if d and d["kind"] == "NetworkPolicy"
                and d["metadata"]["name"] != "torchft-lighthouse"]
    off = subprocess.run(base, capture_output=True, text=True, check=True).stdout
    assert not peers(off)
    on = subprocess.run(base + ["--set", "networkPolicy.enabled=true"], capture_output=True, text=True, check=True).stdout
    (np,) = peers(on)
    sel = np["spec"]["podSelector"]["matchLabels"]
    assert np["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"] == sel
    assert set(sel) & {"training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name", "app.kubernetes.io/instance"}

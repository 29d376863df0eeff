"""Every shipped pod meets Pod Security "restricted" and mounts no API token; the optional NetworkPolicy (#13)."""
from __future__ import annotations

import subprocess

import pytest

from kdt import targets
from kdt.lint import lint_target
from kdt.lint.pods import pod_templates
from kdt.render import render

TARGETS = targets.discover()
ROOT = targets.ROOT


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
    assert [f for f in lint_target(target, r.documents) if f.rule == "pod-security-restricted"] == []


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
    off = subprocess.run(base, capture_output=True, text=True, check=True).stdout
    assert "kind: NetworkPolicy" not in off
    on = subprocess.run(base + ["--set", "networkPolicy.enabled=true"], capture_output=True, text=True, check=True).stdout
    import yaml
    (np,) = [d for d in yaml.safe_load_all(on) if d and d["kind"] == "NetworkPolicy"]
    sel = np["spec"]["podSelector"]["matchLabels"]
    assert np["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"] == sel
    assert set(sel) & {"training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name", "app.kubernetes.io/instance"}

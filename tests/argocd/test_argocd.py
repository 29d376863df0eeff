"""Argo CD offline (#12): the ApplicationSet expands to one Application per overlay, each renders and
validates, the AppProject permits exactly what they render, and broken paths are located errors."""
from __future__ import annotations

import os
import subprocess
import sys
import fnmatch
from pathlib import Path

import yaml

from kdt import argocd as A
from kdt import targets as T
from kdt.render import render

ROOT = Path(__file__).resolve().parents[2]
ARGOCD = ROOT / "deploy" / "argocd"


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "kdt", "argocd", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, **(env or {})}, timeout=240)


def expanded():
    docs = render(T.Target("deploy/argocd", T.KUSTOMIZE, ARGOCD)).documents
    apps, findings = A.expand(docs)
    return docs, apps, findings


def test_one_application_per_overlay_and_every_one_renders_and_validates():
    docs, apps, findings = expanded()
    assert findings == []
    appset = next(d for d in docs if d.kind == "ApplicationSet")
    excluded = {Path(d["path"]).name for d in appset.data["spec"]["generators"][0]["git"]["directories"]
                if d.get("exclude")}
    # alternatives of ddp, fsdp-trainer-2.3 and statefulset: the same objects (llm-trainjob*: statefulset's PVCs;
    # torchft-*: their PVCs, and one Lighthouse name per namespace)
    assert excluded == {"elastic", "ddp-git", "fsdp", "scale-512-*", "llm-trainjob*", "torchft-*"}
    overlays = sorted(p.name for p in (ROOT / "overlays").iterdir()
                      if T.is_kustomization(p) and not any(fnmatch.fnmatch(p.name, x) for x in excluded))
    generated = sorted(a.name for a in apps if a.generated_from)
    assert generated == [f"train-{o}" for o in overlays]
    assert {a.spec["source"]["path"] for a in apps if a.generated_from} == {f"overlays/{o}" for o in overlays}
    proc = cli()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "argocd: 0 error(s), 0 warning(s)" in proc.stdout
    for o in overlays:
        assert f"train-{o} " in proc.stdout


def test_the_project_permits_exactly_the_kinds_the_applications_render():
    docs, apps, _ = expanded()
    project = A.projects(docs)["torch-k8s"]
    used = set()
    for app in apps:
        rendered, findings = A.check(app, project)
        assert [f for f in findings if f.rule == A.RULE] == [], findings
        used |= {(d.group, d.kind) for d in rendered}
    allowed = {(gk["group"], gk["kind"]) for key in ("clusterResourceWhitelist", "namespaceResourceWhitelist")
               for gk in project.data["spec"][key]}
    # NetworkPolicy comes with the optional components/network-policy and the chart's networkPolicy.enabled;
    # Deployment with the torchft overlays' Lighthouse (excluded alternatives, swapped in by hand).
    assert used <= allowed and allowed - used == {("networking.k8s.io", "NetworkPolicy"), ("apps", "Deployment")}
    assert project.data["spec"]["clusterResourceWhitelist"] == [
        {"group": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"}]


def test_batch_job_sync_semantics_reach_the_rendered_objects():
    docs, apps, _ = expanded()
    project = A.projects(docs)["torch-k8s"]
    seen = set()
    for app in apps:
        for d in A.check(app, project)[0]:
            ann = d.data["metadata"].get("annotations") or {}
            if d.kind in ("PyTorchJob", "TrainJob"):
                assert ann["argocd.argoproj.io/sync-options"] == "Replace=true"
                assert ann["argocd.argoproj.io/sync-wave"] == "1"
                assert "ttlSecondsAfterFinished" not in (d.data["spec"].get("runPolicy") or {})
            elif d.kind == "ClusterTrainingRuntime":
                assert ann["argocd.argoproj.io/sync-wave"] == "-1"
            elif d.kind == "PersistentVolumeClaim":
                assert ann["argocd.argoproj.io/sync-options"] == "Prune=false"
            seen.add(d.kind)
    assert {"PyTorchJob", "TrainJob", "ClusterTrainingRuntime", "PersistentVolumeClaim"} <= seen
    appset = next(d for d in docs if d.kind == "ApplicationSet")
    spec = appset.data["spec"]
    assert spec["goTemplate"] is True and spec["goTemplateOptions"] == ["missingkey=error"]
    policy = spec["template"]["spec"]["syncPolicy"]
    assert policy["automated"]["selfHeal"] is False and "ApplyOutOfSyncOnly=true" in policy["syncOptions"]


def _scratch_objects(tmp_path, appset_path="overlays/*", values="ci/ddp.yaml", template="train-{{.path.basename}}"):
    text = (ARGOCD / "applicationset.yaml").read_text().replace("path: overlays/*", f"path: {appset_path}")
    text = text.replace("'train-{{.path.basename}}'", f"'{template}'").replace("REPO", "https://example.invalid/r.git")
    app = (ARGOCD / "application-chart.yaml").read_text().replace("ci/ddp.yaml", values)
    app = app.replace("REPO", "https://example.invalid/r.git").replace("DESTINATION", "in-cluster")
    app = app.replace("NAMESPACE", "training-chart")
    f = tmp_path / "argocd.yaml"
    f.write_text(text + "---\n" + app)
    return f


def test_a_generator_that_matches_no_folder_is_a_located_error(tmp_path):
    f = _scratch_objects(tmp_path, appset_path="overlayz/*")
    proc = cli(f)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if "matches no folder" in ln)
    want = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "path: overlayz/*" in ln)
    assert line.startswith(f"{T.display(f)}:{want}:") and "spec.generators[0].git.directories[0].path" in line


def test_a_missing_values_file_and_a_missing_key_are_located_errors(tmp_path):
    f = _scratch_objects(tmp_path, values="ci/nope.yaml", template="train-{{.path.nope}}")
    proc = cli(f)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    values = next(ln for ln in lines if "values file 'ci/nope.yaml' does not exist" in ln)
    assert "spec.source.helm.valueFiles[0]" in values
    want = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "ci/nope.yaml" in ln)
    assert values.startswith(f"{T.display(f)}:{want}:")
    assert any("map has no entry for key 'nope'" in ln and "spec.template.metadata.name" in ln for ln in lines)


def test_a_kind_the_project_does_not_permit_is_an_error(tmp_path):
    project = yaml.safe_load((ARGOCD / "appproject.yaml").read_text())
    project["spec"]["namespaceResourceWhitelist"] = [
        gk for gk in project["spec"]["namespaceResourceWhitelist"] if gk["kind"] != "PyTorchJob"]
    f = _scratch_objects(tmp_path, values="ci/ddp.yaml")
    f.write_text(f.read_text() + "---\n" + yaml.safe_dump(project).replace("REPO", "x"))
    proc = cli(f)
    assert proc.returncode == 1
    assert "PyTorchJob (kubeflow.org) is not in namespaceResourceWhitelist of AppProject torch-k8s" in proc.stdout
    assert "is not among the sourceRepos" in proc.stdout   # https://example.invalid/... is not the project's repo


def test_two_applications_managing_one_object_is_an_error(tmp_path):
    text = (ARGOCD / "applicationset.yaml").read_text()
    text = text.replace("          - path: overlays/fsdp\n            exclude: true\n", "")
    assert "overlays/fsdp\n" not in text
    f = tmp_path / "appset.yaml"
    f.write_text(text.replace("REPO", "https://example.invalid/r.git").replace("DESTINATION", "in-cluster")
                 .replace("NAMESPACE", "training"))
    proc = cli(f)
    assert proc.returncode == 1
    shared = [ln for ln in proc.stdout.splitlines() if "is also managed by Application" in ln]
    assert any("ClusterTrainingRuntime 'torch-fsdp' in the cluster is also managed by Application train-fsdp" in ln
               for ln in shared), proc.stdout
    assert any("TrainJob 't5-fsdp' in namespace training" in ln for ln in shared)

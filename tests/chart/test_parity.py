"""Each overlays/<x> and charts/trainer/ci/<x>.yaml render the same resources.

Both go through kdt.render (the pinned kubectl and helm, as `make preview` runs
them); resources are matched by apiVersion/kind/name and compared as parsed
YAML after Helm's own labels (conftest.HELM_OWN_LABELS) are removed.
"""
from __future__ import annotations

import copy

import pytest

from chart_support import CI, ROOT, ci_files, differences, keyed, overlays, strip_helm_own
from kdt import render as R
from kdt import targets as T


def overlay_docs(name: str) -> list[dict]:
    r = R.render(T.Target(f"overlays/{name}", T.KUSTOMIZE, ROOT / "overlays" / name))
    assert r.ok, r.findings
    return [d.data for d in r.documents if d.data]


def chart_docs(name: str) -> list[dict]:
    path = CI / f"{name}.yaml"
    r = R.render(T.Target(f"charts/trainer/ci/{name}.yaml", T.HELM, path, path.parent.parent))
    assert r.ok, r.findings
    return [d.data for d in r.documents if d.data]


def test_overlays_and_ci_files_pair_by_name():
    assert overlays(), "no overlays found"
    assert set(overlays()) == set(ci_files()), (
        f"overlays without a charts/trainer/ci/<name>.yaml: {sorted(set(overlays()) - set(ci_files()))}; "
        f"ci files without an overlay: {sorted(set(ci_files()) - set(overlays()))}")


@pytest.mark.parametrize("name", overlays())
def test_chart_equals_overlay(name):
    assert (CI / f"{name}.yaml").is_file(), f"charts/trainer/ci/{name}.yaml is missing"
    want = keyed(overlay_docs(name))
    got = keyed(strip_helm_own(d) for d in chart_docs(name))
    assert sorted(got, key=str) == sorted(want, key=str), "different resources (apiVersion, kind, name)"
    problems = [f"{k[1]}/{k[2]}{d}" for k in want for d in differences(want[k], got[k])]
    assert not problems, "chart differs from overlay:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", ["ddp", "statefulset"])
def test_chart_adds_helm_labels_and_nothing_else(name):
    """The stripped labels are really there (so stripping is not hiding a difference of our own)."""
    docs = chart_docs(name)
    for d in docs:
        labels = d["metadata"]["labels"]
        assert labels["helm.sh/chart"] == "trainer-0.1.0"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/version"] == "0.1.0"
    overlay = keyed(overlay_docs(name))
    for k, d in keyed(docs).items():
        extra = set(d["metadata"]["labels"]) - set(overlay[k]["metadata"]["labels"])
        assert extra == {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"}


def test_comparison_catches_changed_values_and_foreign_labels():
    want = keyed(overlay_docs("ddp"))
    got = keyed(strip_helm_own(d) for d in chart_docs("ddp"))
    job = ("kubeflow.org/v1", "PyTorchJob", "mnist-ddp")
    changed = copy.deepcopy(got[job])
    changed["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    env = changed["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"]
    env.pop()
    found = differences(want[job], changed)
    assert ".spec.pytorchReplicaSpecs.Worker.replicas: overlay 1 != chart 3" in found
    assert any(f"containers[0].env: {len(env) + 1} item(s) in the overlay, {len(env)} in the chart" in f for f in found)
    # a value of another type ("1" vs 1) is a difference too
    typed = copy.deepcopy(got[job])
    typed["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = "1"
    assert differences(want[job], typed) == [".spec.pytorchReplicaSpecs.Master.replicas: overlay 1 != chart '1'"]
    # a Helm label is set aside, any other label is not
    labelled = copy.deepcopy(keyed(chart_docs("ddp"))[job])
    labelled["metadata"]["labels"]["team"] = "ml"
    assert differences(want[job], strip_helm_own(labelled)) == [".metadata.labels.team: only in the chart: 'ml'"]

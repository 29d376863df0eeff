"""The merge preview shows the clone step (components/git-code) in every pod, before the operator's
own init container, with the pinned commit: overlays/ddp-git (PyTorchJob), and the TrainJob component
on overlays/fsdp-trainer-2.3's runtime (rendered in a temporary overlay of the test's)."""
from __future__ import annotations

import os

from kdt import targets as T
from kdt.merge_preview import expand_documents
from kdt.operators import gitsync as G
from kdt.render import render

from conftest import ROOT

PINNED = "efa0f1730ba5449f2197b42d986312eb9b88ff16"


def _pods(path):
    r = render(T.Target(str(path), T.KUSTOMIZE, path))
    assert r.ok, r.findings
    objs, findings = expand_documents(r.documents)
    assert [f for f in findings if f.level == "error"] == []
    return [o.obj for o in objs if o.obj.get("kind") == "Pod"]


def _check(pod, training):
    init = pod["spec"]["initContainers"]
    assert init[0]["name"] == "git-sync" and G.is_git_sync(init[0]["image"]) and "@sha256:" in init[0]["image"]
    env = {e["name"]: e.get("value") for e in init[0]["env"]}
    assert env["GITSYNC_REF"] == PINNED and env["GITSYNC_ONE_TIME"] == "true" and env["GITSYNC_LINK"] == "repo"
    c = next(c for c in pod["spec"]["containers"] if c["name"] == training)
    assert {"name": "git-code", "mountPath": "/code", "readOnly": True} in c["volumeMounts"]
    assert any(v["name"] == "git-code" and "emptyDir" in v for v in pod["spec"]["volumes"])
    return [i["name"] for i in init], c


def test_every_pytorchjob_pod_clones_before_the_operator_init_container():
    pods = _pods(ROOT / "overlays" / "ddp-git")
    assert [p["metadata"]["name"] for p in pods] == ["mnist-ddp-master-0", "mnist-ddp-worker-0"]
    names, c = _check(pods[0], "pytorch")
    assert names == ["git-sync"] and c["args"][0] == "/code/repo/training/mnist_ddp.py"
    names, _ = _check(pods[1], "pytorch")
    assert names == ["git-sync", "init-pytorch"]     # the operator appends its own (v1.9.4 initcontainer.go)


def test_every_trainjob_pod_clones_from_the_runtime(tmp_path):
    up = os.path.relpath(ROOT, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{up}/overlays/fsdp-trainer-2.3]\n"
        f"components: [{up}/overlays/ddp-git/code, {up}/components/git-code/trainjob]\n")
    pods = _pods(tmp_path)
    assert len(pods) == 2
    for p in pods:
        _check(p, "node")

"""Each overlay rendered by the project's kubectl, and the facts each operator needs checked on the output."""
from __future__ import annotations

import re

import pytest

from kdt import targets, versions
from kdt.render import render

OVERLAYS = ["ddp", "elastic", "fsdp", "fsdp-trainer-2.3", "statefulset"]
RECOMMENDED_LABELS = ["app.kubernetes.io/name", "app.kubernetes.io/instance",
                      "app.kubernetes.io/component", "app.kubernetes.io/part-of"]
PINNED_IMAGE = f"{versions.IMAGE_REPOSITORY}:{versions.IMAGE_TAG}"
# torchrun with warm worker restarts (training/trainkit/torchrun.py): every recipe launches through it.
LAUNCHER = ["python3", "-m", "trainkit.torchrun"]
# TensorFlow's samples run without torchrun (overlays/tensorflow, the chart's tensorflow mode).
TENSORFLOW_SAMPLES = ("tf_mnist.py",)


def rendered(name):
    t = targets.Target(f"overlays/{name}", targets.KUSTOMIZE, targets.ROOT / "overlays" / name)
    r = render(t)
    assert r.ok, r.findings
    return r.documents


def one(docs, kind):
    found = [d for d in docs if d.kind == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0].data


def pod_specs(job):
    return {rt: r["template"]["spec"] for rt, r in job["spec"]["pytorchReplicaSpecs"].items()}


def container(pod, name):
    matches = [c for c in pod["containers"] if c["name"] == name]
    assert matches, f"no container {name!r}"
    return matches[0]


def launch_commands(node):
    """Every trainer command line (command + args, one string) in a rendered document."""
    if isinstance(node, dict):
        if "image" in node and ("command" in node or "args" in node):
            yield " ".join(str(x) for x in (node.get("command") or []) + (node.get("args") or []))
        for v in node.values():
            yield from launch_commands(v)
    elif isinstance(node, list):
        for v in node:
            yield from launch_commands(v)


@pytest.mark.parametrize("target", targets.discover(), ids=lambda t: t.name)
def test_every_recipe_launches_through_the_warm_restart_launcher(target):
    """Overlays and chart alike: the measured recovery times hold only with trainkit.torchrun."""
    r = render(target)
    assert r.ok, r.findings
    # the image's samples, or the same samples in a clone of this repository (components/git-code: /code/repo)
    lines = [line for d in r.documents for line in launch_commands(d.data)
             if "/app/training/" in line or "/code/repo/training/" in line]
    assert lines, f"{target.name}: no training command"
    for line in lines:
        if any(f"/app/training/{s}" in line for s in TENSORFLOW_SAMPLES):
            assert "torchrun" not in line, line        # TensorFlow: the pod runs its script, no torchrun
            continue
        assert re.search(r"(^|\s|exec )python3 -m trainkit\.torchrun\s", line), line
        assert not re.search(r"(^|\s)torchrun\s", line), line


def test_every_overlay_is_discovered():
    names = {t.name for t in targets.discover() if t.kind == targets.KUSTOMIZE}
    assert {f"overlays/{o}" for o in OVERLAYS} <= names


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_labels_images_and_no_runtime_installs(overlay):
    for d in rendered(overlay):
        labels = d.data["metadata"].get("labels", {})
        for key in RECOMMENDED_LABELS:
            assert key in labels, f"{d.kind}/{d.name} lacks label {key}"
        text = d.text
        assert "git clone" not in text and "pip install" not in text
        for image in re.findall(r"image: (\S+)", text):
            assert image == PINNED_IMAGE, f"{d.kind}/{d.name}: image {image} is not {PINNED_IMAGE}"


@pytest.mark.parametrize("overlay", ["ddp", "elastic"])
def test_pytorchjob_pods_are_correct(overlay):
    job = one(rendered(overlay), "PyTorchJob")
    assert job["apiVersion"] == "kubeflow.org/v1"
    run_policy = job["spec"]["runPolicy"]
    assert run_policy["cleanPodPolicy"] in ("Running", "All", "None")
    assert isinstance(run_policy["backoffLimit"], int) and isinstance(run_policy["ttlSecondsAfterFinished"], int)
    for rtype, replica in job["spec"]["pytorchReplicaSpecs"].items():
        assert replica["restartPolicy"] in ("OnFailure", "ExitCode", "Always", "Never")
        pod = replica["template"]["spec"]
        assert "restartPolicy" not in pod, "the operator overwrites a pod-template restartPolicy"
        c = container(pod, "pytorch")
        req, lim = c["resources"]["requests"], c["resources"]["limits"]
        assert req["cpu"] and req["memory"]
        assert req["nvidia.com/gpu"] == lim["nvidia.com/gpu"]
        shm = [v for v in pod["volumes"] if v.get("emptyDir", {}).get("medium") == "Memory"]
        assert shm and shm[0]["emptyDir"]["sizeLimit"]
        assert {"name": shm[0]["name"], "mountPath": "/dev/shm"} in c["volumeMounts"]
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
        assert pod["nodeSelector"]["karpenter.sh/nodepool"] == "gpu"
        launch = " ".join(c.get("command", []) + c.get("args", []))
        assert not re.search(r"--nnodes[ =]\d", launch), "node count typed beside replicas"
        assert "/app/training/mnist_ddp.py" in c["args"]
        # checkpoints go to the shared volume
        ckpt = next(a.split("=", 1)[1] for a in c["args"] if a.startswith("--checkpoint-dir="))
        mount = next(m for m in c["volumeMounts"] if ckpt.startswith(m["mountPath"] + "/"))
        vol = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        claim = vol["persistentVolumeClaim"]["claimName"]
        pvc = next(d.data for d in rendered(overlay) if d.kind == "PersistentVolumeClaim" and d.name == claim)
        assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]


def test_ddp_has_one_explicit_master_and_takes_nodes_from_the_operator():
    job = one(rendered("ddp"), "PyTorchJob")
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert set(specs) == {"Master", "Worker"}
    assert specs["Master"]["replicas"] == 1 and specs["Worker"]["replicas"] >= 1
    for rtype in specs:
        c = container(specs[rtype]["template"]["spec"], "pytorch")
        assert "--rdzv-endpoint=$(PET_MASTER_ADDR):$(PET_MASTER_PORT)" in c["command"]
        # the c10d store is pinned to the master: the only pod whose torchrun hosts it
        conf = next(a for a in c["command"] if a.startswith("--rdzv-conf="))
        assert conf.startswith("--rdzv-conf=is_host=$(RDZV_IS_HOST),")
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["RDZV_IS_HOST"] == ("true" if rtype == "Master" else "false")
        assert env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] == "1"


def test_elastic_is_worker_only_with_sane_bounds():
    job = one(rendered("elastic"), "PyTorchJob")
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert set(specs) == {"Worker"}
    ep = job["spec"]["elasticPolicy"]
    assert 1 <= ep["minReplicas"] <= specs["Worker"]["replicas"] <= ep["maxReplicas"]
    assert ep["rdzvBackend"] == "c10d" and ep["maxRestarts"] > 0
    c = container(specs["Worker"]["template"]["spec"], "pytorch")
    # no Master, so nothing may refer to the master-mode variables
    assert "PET_MASTER_ADDR" not in " ".join(c["command"] + c["args"])
    assert c["command"] == LAUNCHER


@pytest.mark.parametrize("overlay,release", [("fsdp", "2.1"), ("fsdp-trainer-2.3", "2.3")])
def test_trainer_v2_runtime_and_trainjob(overlay, release):
    docs = rendered(overlay)
    runtime = one(docs, "ClusterTrainingRuntime")
    job = one(docs, "TrainJob")
    assert runtime["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torch"
    assert "torch" in runtime["spec"]["mlPolicy"]
    jobset = runtime["spec"]["template"]["spec"]
    assert jobset["failurePolicy"]["maxRestarts"] > 0
    node = next(j for j in jobset["replicatedJobs"] if j["name"] == "node")
    assert node["template"]["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"] == "trainer"
    container(node["template"]["spec"]["template"]["spec"], "node")
    assert job["spec"]["runtimeRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime",
                                         "name": runtime["metadata"]["name"]}
    trainer = job["spec"]["trainer"]
    assert trainer["numNodes"] == 2
    assert trainer["resourcesPerNode"]["requests"]["nvidia.com/gpu"] == trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"]
    if release == "2.1":
        assert trainer["numProcPerNode"] == "auto"
        assert "runtimePatches" not in job["spec"]
        (override,) = job["spec"]["podTemplateOverrides"]
        assert override["targetJobs"] == [{"name": "node"}]
        pod = override["spec"]
    else:
        assert not isinstance(trainer.get("numProcPerNode", 0), str)
        assert "podTemplateOverrides" not in job["spec"]
        (patch,) = job["spec"]["runtimePatches"]
        (rjob,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        assert rjob["name"] == "node"
        pod = rjob["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"]["node.kubernetes.io/instance-type"] == "g6e.48xlarge"
    assert pod["nodeSelector"]["topology.kubernetes.io/zone"]
    c = container(pod, "node")
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory" and shm["emptyDir"]["sizeLimit"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert {"name": "checkpoints", "mountPath": "/checkpoints"} in c["volumeMounts"]


def test_both_trainer_overlays_describe_the_same_pod():
    def pod(overlay):
        job = one(rendered(overlay), "TrainJob")["spec"]
        if "podTemplateOverrides" in job:
            return job["podTemplateOverrides"][0]["spec"]
        return job["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod("fsdp") == pod("fsdp-trainer-2.3")


def test_statefulset_path():
    docs = rendered("statefulset")
    svc = one(docs, "Service")
    sts = one(docs, "StatefulSet")
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert sts["spec"]["serviceName"] == svc["metadata"]["name"]
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    pod = sts["spec"]["template"]["spec"]
    c = container(pod, "trainer")
    env = {e["name"]: e for e in c["env"]}
    assert env["NNODES"]["value"] == str(sts["spec"]["replicas"]), "node count must come from replicas"
    endpoint = env["RDZV_ENDPOINT"]["value"]
    assert endpoint == f"{sts['metadata']['name']}-0.{svc['metadata']['name']}:29500"
    assert env["HUGGINGFACE_HUB_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
    assert all("value" not in e or not re.search("TOKEN|KEY|SECRET|PASSWORD", e["name"]) for e in c["env"])
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    claims = {v["name"]: v.get("persistentVolumeClaim", {}).get("claimName") for v in pod["volumes"]}
    assert claims[mounts["/data"]] == "datasets-pvc" and claims[mounts["/out"]] == "outputs-pvc"
    pvcs = {d.name for d in docs if d.kind == "PersistentVolumeClaim"}
    assert {"datasets-pvc", "outputs-pvc"} <= pvcs
    sel = sts["spec"]["selector"]["matchLabels"]
    assert all(sts["spec"]["template"]["metadata"]["labels"][k] == v for k, v in sel.items())
    assert all(svc["spec"]["selector"][k] == sel[k] for k in svc["spec"]["selector"])

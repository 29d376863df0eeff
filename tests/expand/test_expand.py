"""Merge preview: what each operator creates, field by field against the operators' rules."""
import copy
import subprocess
import sys

import pytest

from kdt.merge_preview import Limit, elided_lines, expand_documents, explain_lines, summary_line
from kdt.operators.trainer_v2.expand import num_proc_per_node
from kdt.operators import injection as INJ
from kdt.operators.trainer_v2 import facts as TV2
from kdt.operators.training_operator_v1 import facts as TO1
from kdt.render import render
from kdt.targets import discover  # noqa: E402

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]


def env(container):
    return [(e["name"], e.get("value", e.get("valueFrom"))) for e in container.get("env") or []]


def of_kind(objs, kind):
    return [e for e in objs if e.kind == kind]


def node_container(jobset, job="node"):
    rj = next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == job)
    pod = rj["template"]["spec"]["template"]["spec"]
    return rj, pod, next(c for c in pod["containers"] if c["name"] == job)


# ---------------------------------------------------------------- Training Operator v1

def test_ddp_pods_env_ports_init_and_restart_policy(load):
    docs = load("ddp.yaml")
    objs, findings = expand_documents(docs)
    assert findings == []
    pods = of_kind(objs, "Pod")
    assert [p.name for p in pods] == ["mnist-ddp-master-0", "mnist-ddp-worker-0", "mnist-ddp-worker-1"]
    master, w0, w1 = (p.obj for p in pods)
    c = master["spec"]["containers"][0]
    # the user's env first, then what envvar.go/master.go append, in setPodEnv's order (v1.9.4)
    assert env(c) == [("EPOCHS", "3"), ("PYTHONUNBUFFERED", "1"),
                      ("MASTER_PORT", "23456"), ("PET_MASTER_PORT", "23456"),
                      ("MASTER_ADDR", "mnist-ddp-master-0"), ("PET_MASTER_ADDR", "mnist-ddp-master-0"),
                      ("WORLD_SIZE", "6"), ("RANK", "0"), ("PET_NODE_RANK", "0"), ("PET_NPROC_PER_NODE", "2"),
                      ("PET_NNODES", "3")]
    # one headless Service per pod, named and selecting as it (common/service.go CreateNewService)
    services = of_kind(objs, "Service")
    assert [s.name for s in services] == [p.name for p in pods]
    svc = services[1].obj
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["ports"] == [{"name": TO1.PORT_NAME, "port": 23456}]
    assert svc["spec"]["selector"] == {INJ.V1_LABEL_OPERATOR: "pytorchjob-controller", INJ.V1_LABEL_JOB_NAME: "mnist-ddp",
                                       INJ.V1_LABEL_REPLICA_TYPE: "worker", INJ.V1_LABEL_REPLICA_INDEX: "0"}
    # the defaulter adds the named port to the master, which had none
    assert c["ports"] == [{"name": TO1.PORT_NAME, "containerPort": TO1.DEFAULT_PORT}]
    assert master["spec"]["restartPolicy"] == "Never"          # ExitCode runs as Never
    assert "initContainers" not in master["spec"]
    for rank, pod in ((1, w0), (2, w1)):
        e = dict(env(pod["spec"]["containers"][0]))
        assert e["RANK"] == e["PET_NODE_RANK"] == str(rank)
        assert e["WORLD_SIZE"] == "6"
        assert pod["spec"]["restartPolicy"] == "OnFailure"     # the default
        init = pod["spec"]["initContainers"]
        assert [i["name"] for i in init] == [INJ.V1_INIT_CONTAINER_NAME]
        assert init[0]["image"] == INJ.V1_INIT_CONTAINER_IMAGE
        assert "nslookup mnist-ddp-master-0;" in init[0]["command"][2]
        assert pod["metadata"]["labels"][INJ.V1_LABEL_REPLICA_TYPE] == "worker"
        assert INJ.V1_LABEL_JOB_ROLE not in pod["metadata"]["labels"]
    assert master["metadata"]["labels"]["app"] == "mnist"
    assert master["metadata"]["labels"][INJ.V1_LABEL_JOB_ROLE] == "master"
    assert master["metadata"]["namespace"] == "train"


def test_elastic_env(load):
    objs, findings = expand_documents(load("elastic.yaml"))
    assert findings == []
    pods = of_kind(objs, "Pod")
    assert [p.name for p in pods] == ["mnist-elastic-worker-0", "mnist-elastic-worker-1"]
    for p in pods:
        e = env(p.obj["spec"]["containers"][0])
        # spec.nprocPerNode (defaulted to auto) comes before the elastic env (envvar.go setPodEnv)
        assert e == [("PYTHONUNBUFFERED", "1"), ("PET_NPROC_PER_NODE", "auto"),
                     ("PET_RDZV_ENDPOINT", "mnist-elastic-worker-0:29400"),
                     ("PET_RDZV_BACKEND", "c10d"), ("PET_NNODES", "1:3"), ("PET_MAX_RESTARTS", "5")]
        assert "initContainers" not in p.obj["spec"]   # no Master: no init container, no MASTER_ADDR
    # without a Master, Worker 0 has the master role (pytorchjob_controller.go IsMasterRole)
    assert [p.obj["metadata"]["labels"].get(INJ.V1_LABEL_JOB_ROLE) for p in pods] == ["master", None]


def test_missing_pytorch_container_is_located(load):
    text = (FIXTURES / "elastic.yaml").read_text().replace("- name: pytorch", "- name: trainer")
    from kdt.documents import load_stream
    docs, _ = load_stream(text, "x.yaml")
    pods, findings = expand_documents(docs)
    assert pods == []
    [f] = findings
    assert f.rule == "pytorchjob-container"      # the webhook's refusal, as lint reports it
    assert f.path == "spec.pytorchReplicaSpecs.Worker.template.spec.containers"
    assert (f.file, f.line) == ("x.yaml", 18)


# ---------------------------------------------------------------- Trainer v2

def test_trainer_21_overrides_env_upsert_and_pet(load):
    docs = load("runtime-2.1.yaml", "trainjob-2.1.yaml")
    objs, findings = expand_documents(docs)
    [js] = of_kind(objs, "JobSet")
    assert findings == []
    assert (js.kind, js.name, js.obj["metadata"]["namespace"]) == ("JobSet", "fsdp", "train")
    rj, pod, c = node_container(js.obj)
    assert rj["replicas"] == 1
    assert rj["template"]["spec"]["parallelism"] == rj["template"]["spec"]["completions"] == 2
    assert c["image"] == "ghcr.io/torch-k8s/trainer:0.1.0"
    assert c["command"] == ["torchrun", "-m", "trainkit.fsdp"]
    # resourcesPerNode replaces the block: the runtime's memory request is gone
    assert c["resources"] == {"limits": {"nvidia.com/gpu": 4}, "requests": {"cpu": "8", "nvidia.com/gpu": 4}}
    # env upsert: LOG_LEVEL keeps its place with the TrainJob's value, EPOCHS appended, then PET_*
    assert env(c) == [("LOG_LEVEL", "debug"), ("EPOCHS", "2"), ("PET_NNODES", "2"), ("PET_NPROC_PER_NODE", "auto"),
                      ("PET_NODE_RANK", {"fieldRef": {"fieldPath": INJ.V2_COMPLETION_INDEX_FIELD}}),
                      ("PET_MASTER_ADDR", "fsdp-node-0-0.fsdp"), ("PET_MASTER_PORT", str(TV2.TRAINER_PORT))]
    assert c["ports"] == [{"containerPort": 29500}]
    # podTemplateOverrides: init container patched by name, volumes, mounts, node selector, tolerations
    assert pod["initContainers"] == [{"name": "fetch-data", "image": "busybox:1.36",
                                      "env": [{"name": "DATA_URL", "value": "s3://bucket/mnist"}]}]
    assert pod["volumes"] == [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
    assert c["volumeMounts"] == [{"name": "shm", "mountPath": "/dev/shm"}]
    assert pod["nodeSelector"] == {"accelerator": "h100"}
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert js.facts["pods"] == ["fsdp-node-0-0", "fsdp-node-0-1"]
    explained = "\n".join(explain_lines(js))
    assert "podTemplateOverrides[0]" in explained and "numNodes" in explained


def test_trainer_23_runtime_patches_init_container_and_initializer(load):
    objs, findings = expand_documents(load("patches-2.3.yaml"), trainer_version="2.3")
    [js] = of_kind(objs, "JobSet")
    assert findings == []
    assert js.obj["metadata"]["labels"] == {"team": "ml-platform"}   # JobSet-level patch label wins
    rj, pod, c = node_container(js.obj)
    assert pod["serviceAccountName"] == "trainer-sa"
    # a 2.3 ContainerPatch has name, env, volumeMounts and securityContext only (trainjob_types.go)
    assert pod["initContainers"] == [{"name": "warmup", "image": "busybox:1.36", "args": ["sleep", "1"],
                                      "env": [{"name": "WARMUP_STEPS", "value": "3"}]}]
    # 2.3 merges resourcesPerNode into the runtime's resources key by key (MergeResourceRequirements)
    assert c["resources"] == {"limits": {"cpu": "4"}, "requests": {"cpu": "3500m"}}
    e = dict(env(c))
    # auto and no GPU: the CPU request rounded up (torch.go getNumCPUPerNode reads requests first)
    assert e["PET_NNODES"] == "4" and e["PET_NPROC_PER_NODE"] == "4"
    assert js.facts["world_size"] == 16
    _, ipod, ic = node_container(js.obj, "dataset-initializer")
    assert env(ic) == [(INJ.V2_INITIALIZER_ENV_STORAGE_URI, "hf://mnist")]


def test_upstream_runtime_and_example_trainjob(load):
    objs, findings = expand_documents(load("upstream-torch-distributed-2.3.yaml"))
    [js] = of_kind(objs, "JobSet")
    assert findings == []
    rj, pod, c = node_container(js.obj)
    assert c["image"] == "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"   # no trainer image: the runtime's
    assert rj["template"]["spec"]["parallelism"] == 3
    e = dict(env(c))
    # no resources anywhere: auto is the CPU count, at least 1 (torch.go: max(1, getNumCPUPerNode))
    assert e["PET_NNODES"] == "3" and e["PET_NPROC_PER_NODE"] == "1"
    # what JobSet makes of it: the headless Service, one Job, three pods with JobSet's labels
    [svc] = of_kind(objs, "Service")
    assert svc.name == "multi-node-example" and svc.obj["spec"]["selector"] == {
        "jobset.sigs.k8s.io/jobset-name": "multi-node-example"}
    [job] = of_kind(objs, "Job")
    assert job.name == "multi-node-example-node-0"
    pods = of_kind(objs, "Pod")
    assert [p.name for p in pods] == [f"multi-node-example-node-0-{i}" for i in range(3)]
    labels = pods[2].obj["metadata"]["labels"]
    assert labels["jobset.sigs.k8s.io/job-global-index"] == "0" and labels["batch.kubernetes.io/job-completion-index"] == "2"
    assert e["PET_MASTER_ADDR"] == "multi-node-example-node-0-0.multi-node-example"


@pytest.mark.parametrize("value,resources,version,expected", [
    (None, None, "2.3", "1"),                                             # nothing to count: at least 1
    ("auto", {"limits": {"cpu": "3500m"}}, "2.3", "4"),                   # CPU only: the CPU count, rounded up
    ("auto", {"limits": {"cpu": "8"}, "requests": {"cpu": "2"}}, "2.3", "2"),   # requests first
    ("auto", {"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 2}}, "2.3", "auto"),
    ("auto", {"limits": {"memory": "1Gi"}}, "2.3", "1"),                  # no cpu quantity: at least 1
    ("cpu", {"requests": {"cpu": "6"}}, "2.1", "6"),                      # 2.1's "cpu"
    ("gpu", {"requests": {"cpu": "6"}}, "2.1", "gpu"),
    (3, {"limits": {"cpu": "8"}, "requests": {"cpu": "8"}}, "2.3", "3"),
])
def test_num_proc_per_node_rule(value, resources, version, expected):
    assert num_proc_per_node(value, resources, version)[0] == expected


def _trainjob_21_with(old, new):
    text = (FIXTURES / "trainjob-2.1.yaml").read_text().replace(old, new)
    from kdt.documents import load_stream
    docs, _ = load_stream((FIXTURES / "runtime-2.1.yaml").read_text(), "runtime.yaml")
    more, _ = load_stream(text, "trainjob.yaml")
    return docs + more


def test_override_of_missing_container_is_an_error():
    docs = _trainjob_21_with("- name: fetch-data", "- name: fetch-model")
    out, findings = expand_documents(docs)
    assert out == []
    [f] = findings
    assert f.rule == "trainjob-override-targets"
    assert f.path == "spec.podTemplateOverrides[0].spec.initContainers[0].name"
    assert "fetch-model" in f.message
    assert (f.file, f.line, f.kind, f.name) == ("trainjob.yaml", 35, "TrainJob", "fsdp")


def test_missing_target_job_and_runtime_are_errors():
    _, findings = expand_documents(_trainjob_21_with("        - name: node\n      spec:", "        - name: launcher\n      spec:"))
    assert [f.path for f in findings] == ["spec.podTemplateOverrides[0].targetJobs[0].name"]
    _, findings = expand_documents(_trainjob_21_with("name: torch-fsdp", "name: torch-gone"))
    assert [f.path for f in findings] == ["spec.runtimeRef.name"] and "torch-gone" in findings[0].message


def test_version_mismatch(load):
    # the API server of the other release refuses both by their CRDs' schemas (kdt.merge_preview asks
    # validation): the TrainJob's field of the other shape, the 2.1 runtime's numProcPerNode (2.3 has none)
    objs, findings = expand_documents(load("runtime-2.1.yaml", "trainjob-2.1.yaml"), trainer_version="2.3")
    assert objs == [] and [(f.rule, f.kind, f.path) for f in findings] == [
        ("schema", "TrainJob", "spec.podTemplateOverrides"),
        ("schema", "ClusterTrainingRuntime", "spec.mlPolicy.torch.numProcPerNode")]
    objs, findings = expand_documents(load("patches-2.3.yaml"), trainer_version="2.1")
    assert objs == [] and [(f.rule, f.path) for f in findings] == [("schema", "spec.runtimePatches")]


def test_never_mutates_input(load):
    docs = load("ddp.yaml", "elastic.yaml", "runtime-2.1.yaml", "trainjob-2.1.yaml", "patches-2.3.yaml")
    before = copy.deepcopy([d.data for d in docs])
    for roundtrip in (False, True):
        out, findings = expand_documents(docs, roundtrip=roundtrip)
        assert findings == [] and len(of_kind(out, "JobSet")) == 2 and len(of_kind(out, "Pod")) == 3 + 2 + 2 + 5
    assert [d.data for d in docs] == before


# ---------------------------------------------------------------- shipped overlays

def _ints(v, default=1):
    try:
        return int(str(v))
    except (TypeError, ValueError):
        return default


def test_shipped_targets_expand_by_the_operators_rules():
    """Every shipped target expands cleanly; each object checked against the rules, from its own source."""
    seen = set()
    for t in discover(ROOT):
        r = render(t)
        assert r.ok, r.findings
        out, findings = expand_documents(r.documents)
        assert findings == [], (t.name, findings)
        for d in r.documents:
            mine = [e for e in out if e.source is d]
            if d.kind == "PyTorchJob":
                seen.add("PyTorchJob")
                reps = d.data["spec"]["pytorchReplicaSpecs"]
                total = sum(_ints(r.get("replicas")) for r in reps.values())
                mine = of_kind(mine, "Pod")
                assert len(mine) == total
                nproc = d.data["spec"].get("nprocPerNode", "auto")
                for e in mine:
                    c = next(c for c in e.obj["spec"]["containers"] if c["name"] == TO1.CONTAINER_NAME)
                    envs = dict(env(c))
                    assert envs["PYTHONUNBUFFERED"] == "1"
                    if "Master" in reps:
                        assert envs["MASTER_ADDR"] == f"{d.name}-master-0"
                        assert envs["WORLD_SIZE"] == str(TO1.world_size(total, nproc))
                    if d.data["spec"].get("elasticPolicy"):
                        assert ":" in envs["PET_NNODES"] and envs["PET_RDZV_ENDPOINT"].count(":") == 1
                    else:
                        assert envs["PET_NNODES"] == str(total)
            elif d.kind == "TrainJob":
                seen.add("TrainJob")
                [e] = of_kind(mine, "JobSet")
                pods = of_kind(mine, "Pod")
                node_pods = [p for p in pods if p.facts["job"] == f"{d.name}-{TV2.NODE}-0"]
                assert len(node_pods) == d.data["spec"]["trainer"]["numNodes"]
                # and one pod per initializer the TrainJob gives a source (builder.go Initializer: replicas 1)
                assert sorted(p.facts["job"] for p in pods if p not in node_pods) == sorted(
                    f"{d.name}-{f}-initializer-0" for f in (d.data["spec"].get("initializer") or {}))
                trainer = d.data["spec"]["trainer"]
                rj, pod, c = node_container(e.obj)
                assert rj["template"]["spec"]["parallelism"] == trainer["numNodes"]
                assert c["image"] == trainer.get("image", c["image"])
                envs = dict(env(c))
                if e.facts["ml_policy"] == "torch":
                    assert envs["PET_NNODES"] == str(trainer["numNodes"])
                    assert envs["PET_MASTER_ADDR"] == f"{d.name}-node-0-0.{d.name}"
                else:      # PlainML (the TensorFlow runtime): nothing injected, each pod builds TF_CONFIG
                    seen.add("PlainML")
                    assert not any(k.startswith("PET_") for k in envs)
                    cfgs = e.facts["tf_config"]
                    assert [x["task"]["index"] for x in cfgs] == list(range(trainer["numNodes"]))
                    assert cfgs[0]["cluster"]["worker"][-1] == f"{d.name}-node-0-{trainer['numNodes'] - 1}.{d.name}:2222"
                for ev in trainer.get("env") or []:
                    assert envs[ev["name"]] == ev.get("value", ev.get("valueFrom"))
                if "resourcesPerNode" in trainer:      # 2.1 replaces, 2.3 merges: the TrainJob's keys win
                    for section, values in trainer["resourcesPerNode"].items():
                        assert {k: c["resources"][section][k] for k in values} == values
            elif d.kind == "StatefulSet":
                seen.add("StatefulSet")
                assert [e.name for e in mine] == [f"{d.name}-{i}" for i in range(_ints(d.data["spec"].get("replicas")))]
                for i, e in enumerate(mine):
                    assert e.obj["metadata"]["labels"][INJ.STS_LABEL_POD_INDEX] == str(i)
                    assert e.obj["spec"]["hostname"] == e.name
        line = summary_line(t.name, out)
        assert line.startswith(t.name + ": ")
    assert seen == {"PyTorchJob", "TrainJob", "PlainML", "StatefulSet"}


# ---------------------------------------------------------------- CLI

def cli(*args):
    return subprocess.run([sys.executable, "-m", "kdt", "merge-preview", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_cli_yaml_keeps_source_comments_and_explain():
    r = cli(str(FIXTURES / "runtime-2.1.yaml"), str(FIXTURES / "trainjob-2.1.yaml"))
    assert r.returncode == 0, r.stderr
    assert "- name: node      # the trainer container" in r.stdout or "name: node  # the trainer container" in r.stdout
    assert "value: fsdp-node-0-0.fsdp" in r.stdout
    r = cli(str(FIXTURES / "ddp.yaml"), "--explain")
    assert r.returncode == 0
    assert "spec.restartPolicy = Never" in r.stdout and "ExitCode" in r.stdout
    r = cli(str(FIXTURES / "ddp.yaml"), "--diff")
    assert '+ spec.restartPolicy: "Never"' in r.stdout


def test_cli_unresolved_reference_exit_1_located(tmp_path):
    r = cli(str(FIXTURES / "trainjob-2.1.yaml"))
    assert r.returncode == 1
    assert "trainjob-2.1.yaml:8:11: error [expand] TrainJob/fsdp spec.runtimeRef.name:" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli(str(FIXTURES / "ddp.yaml"), "--trainer-version", "banana")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_cli_yaml_quotes_what_a_yaml11_reader_would_retype():
    import yaml as pyyaml  # PyYAML reads YAML 1.1: an unquoted 1:2 is the integer 62
    from kdt.yamlout import retyped_by_yaml11
    assert [retyped_by_yaml11(v) for v in ("1:2", "yes", "on", "010", "0x1F", "1_000", "2", "mnist", "1.2.3")] == \
        [True, True, True, True, True, True, True, False, False]
    proc = cli("overlays/elastic")
    assert proc.returncode == 0, proc.stderr
    assert 'value: "1:2"' in proc.stdout
    for pod in pyyaml.safe_load_all(proc.stdout):
        if pod["kind"] != "Pod":
            continue
        env = {e["name"]: e.get("value") for c in pod["spec"]["containers"] for e in c.get("env", [])}
        assert env["PET_NNODES"] == "1:2"
        assert all(isinstance(v, str) for v in env.values() if v is not None)


def test_cli_shows_how_each_tensorflow_pod_builds_its_tf_config(tmp_path):
    """A TensorFlow runtime (no ML policy): the preview says PlainML and prints every pod's TF_CONFIG."""
    r = cli("overlays/tensorflow")
    assert r.returncode == 0, r.stderr
    for i in (0, 1):
        assert (f'#   pod tf-mnist-node-0-{i}: TF_TASK_INDEX={i} -> TF_CONFIG={{"cluster":{{"worker":'
                f'["tf-mnist-node-0-0.tf-mnist:2222","tf-mnist-node-0-1.tf-mnist:2222"]}},'
                f'"task":{{"type":"worker","index":{i}}}}}') in r.stdout
    assert "PET_" not in r.stdout
    s = cli("overlays/tensorflow", "--summary")
    assert "no ML policy (PlainML: pod count and trainer.env only)" in s.stdout and "PET_NNODES" not in s.stdout
    # a numNodes of 3 in a copy of the overlay: three pods, three workers each
    job = tmp_path / "job.yaml"
    rendered = subprocess.run([str(ROOT / ".venv" / "bin" / "kubectl"), "kustomize", str(ROOT / "overlays" / "tensorflow")],
                              capture_output=True, text=True, check=True).stdout
    job.write_text(rendered.replace("numNodes: 2", "numNodes: 3").replace('value: "2"', 'value: "3"'))
    r = cli(str(job))
    assert r.returncode == 0, r.stderr
    assert "pod tf-mnist-node-0-2: TF_TASK_INDEX=2" in r.stdout and "tf-mnist-node-0-2.tf-mnist:2222" in r.stdout


# ---------------------------------------------------------------- what is created, and what is not (issue #33)

def _docs(text):
    from kdt.documents import load_stream
    docs, findings = load_stream(text, "inline.yaml")
    assert findings == []
    return docs


PJ = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: NAME, namespace: ns}
spec:
  RUNPOLICY
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: "img:1", resources: {requests: {cpu: "2", memory: 1Gi}}}]}}}
    Worker: {replicas: WORKERS, template: {spec: {containers: [{name: pytorch, image: "img:1", resources: {limits: {cpu: "4"}}}]}}}
"""


def pytorchjob(name="job", workers=2, run_policy="runPolicy: {}"):
    return _docs(PJ.replace("NAME", name).replace("WORKERS", str(workers)).replace("RUNPOLICY", run_policy))


def test_a_name_the_webhook_refuses_previews_as_the_refusal_lint_reports():
    """0-test is a DNS-1123 subdomain (the API server takes it) but not a DNS-1035 label: the Training Operator's
    webhook refuses it (pytorchjob_webhook.go validatePyTorchJob); lint and preview give the same finding."""
    from kdt.lint import lint_documents
    docs = pytorchjob("0-test")
    out, findings = expand_documents(docs)
    assert out == []
    [f] = findings
    assert (f.rule, f.path, f.level) == ("pytorchjob-name", "metadata.name", "error")
    assert f in lint_documents(docs)
    assert expand_documents(pytorchjob("test-0"))[1] == []


def test_a_suspended_or_externally_managed_job_shows_why_nothing_is_created():
    for policy, why in (("runPolicy: {suspend: true}", "runPolicy.suspend is true"),
                        ("runPolicy: {managedBy: kueue.x-k8s.io/multikueue}", "kueue.x-k8s.io/multikueue")):
        result = expand_documents(pytorchjob(run_policy=policy))
        objs, findings = result
        assert objs == [] and findings == []
        [held] = result.held
        assert why in held.reason
        line = summary_line("t", objs, result.held)
        assert line.startswith("t: PyTorchJob/job: nothing created yet: ") and why in line


def test_worker_only_job_gets_nproc_and_the_master_role_on_worker_0():
    docs = _docs(PJ.replace("NAME", "w").replace("RUNPOLICY", "runPolicy: {}").replace(
        "    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: \"img:1\", resources: "
        "{requests: {cpu: \"2\", memory: 1Gi}}}]}}}\n", "").replace("WORKERS", "2"))
    pods = of_kind(expand_documents(docs)[0], "Pod")
    assert [p.name for p in pods] == ["w-worker-0", "w-worker-1"]
    assert env(pods[1].obj["spec"]["containers"][0]) == [("PYTHONUNBUFFERED", "1"), ("PET_NPROC_PER_NODE", "auto"),
                                                          ("PET_NNODES", "2")]


def test_gang_scheduler_podgroup_min_member_and_resources():
    """common/job.go ReconcileJobs with --gang-scheduler-name: minMember the replicas, minResources each
    container's requests (its limits without requests) over them; pods decorated per scheduler."""
    objs, _ = expand_documents(pytorchjob(workers=3), options={TO1.GANG_OPTION: "scheduler-plugins"})
    [pg] = of_kind(objs, "PodGroup")
    assert pg.obj["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert pg.obj["spec"] == {"minMember": 4, "minResources": {"cpu": "14", "memory": "1Gi"}}
    pod = of_kind(objs, "Pod")[1].obj
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "job"
    assert pod["spec"]["schedulerName"] == "scheduler-plugins"
    objs, _ = expand_documents(pytorchjob(workers=3, run_policy="runPolicy: {schedulingPolicy: {minAvailable: 2, queue: q}}"),
                               options={TO1.GANG_OPTION: "volcano"})
    [pg] = of_kind(objs, "PodGroup")
    assert pg.obj["spec"] == {"minMember": 2, "queue": "q", "priorityClassName": "", "minResources": {"cpu": "6", "memory": "1Gi"}}
    ann = of_kind(objs, "Pod")[0].obj["metadata"]["annotations"]
    assert ann == {"scheduling.k8s.io/group-name": "job", "volcano.sh/task-spec": "master"}
    assert of_kind(expand_documents(pytorchjob())[0], "PodGroup") == []      # no gang scheduler: no PodGroup


TJ = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt}
spec:
  mlPolicy: {numNodes: 1, POLICY}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec: {template: {spec: {containers: [{name: node, image: "img:1"}]}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj, namespace: ns}
spec: {runtimeRef: {name: rt}, trainer: {numNodes: NODES}SPEC}
"""


def trainjob(policy="torch: {}", nodes=2, spec=""):
    return _docs(TJ.replace("POLICY", policy).replace("NODES", str(nodes)).replace("SPEC", spec))


def test_suspended_trainjob_makes_a_suspended_jobset_and_no_pod():
    objs, findings = expand_documents(trainjob(spec=", suspend: true"), trainer_version="2.3")
    assert findings == []
    [js] = of_kind(objs, "JobSet")
    assert js.obj["spec"]["suspend"] is True
    [job] = of_kind(objs, "Job")
    assert job.obj["spec"]["suspend"] is True and of_kind(objs, "Pod") == []
    assert "no pod runs until the TrainJob is resumed" in js.facts["held"]
    assert "no pod yet (spec.suspend is true" in summary_line("t", objs)


def test_a_trainjob_deadline_is_trainers_not_the_jobsets():
    """v2.3.0 reconcileDeadline: the TrainJob fails and its JobSet is deleted; nothing of it is in the JobSet."""
    from kdt.merge_preview import pod_notes
    objs, findings = expand_documents(trainjob(spec=", activeDeadlineSeconds: 5400"), trainer_version="2.3")
    assert findings == []
    [js] = of_kind(objs, "JobSet")
    assert "activeDeadlineSeconds" not in str(js.obj) and js.facts["active_deadline"] == 5400
    assert "failed by Trainer 5400 s after creation or resume (spec.activeDeadlineSeconds)" in summary_line("t", objs)
    assert any(n.startswith("spec.activeDeadlineSeconds 5400: the JobSet carries no deadline") for n in pod_notes(js))


def test_trainjob_left_to_multikueue_and_unmodelled_plugins_say_so():
    result = expand_documents(trainjob(spec=", managedBy: kueue.x-k8s.io/multikueue"), trainer_version="2.3")
    assert result[0] == [] and "TrainJob controller leaves the job" in result.held[0].reason
    result = expand_documents(trainjob(policy="mpi: {numProcPerNode: 1}"), trainer_version="2.3")
    assert result[0] == [] and "does not model Trainer's MPI plugin" in result.held[0].reason


def test_the_preview_is_bounded_whatever_the_counts():
    """Past the limit the first and last pods are built and the rest counted (issue #36): the same objects
    for 100,000 replicas and 2**70, the counts exact."""
    for n in (100_000, 2 ** 70):
        objs, _ = expand_documents(pytorchjob(workers=n))
        pods = of_kind(objs, "Pod")
        assert [p.name for p in pods] == ["job-master-0"] + [f"job-worker-{i}" for i in (0, 1, 2, 3, n - 2, n - 1)]
        assert pods[-1].obj["spec"]["containers"][0]["env"][7] == {"name": "PET_NODE_RANK", "value": str(n)}
        assert elided_lines(objs) == [f"PyTorchJob/job: {n - 6:,} more Worker pods and Services not shown "
                                      f"(indices 4 to {n - 3:,}: the same template, their index in the name and the env)"]
        assert f"{n + 1:,} pods (job-master-0" in summary_line("t", objs)
        objs, findings = expand_documents(trainjob(nodes=n), trainer_version="2.3")
        if n > 2 ** 31 - 1:     # numNodes is an int32 (the TrainJob CRD's format): the API server refuses it
            assert objs == [] and [(f.rule, f.path) for f in findings] == [("schema", "spec.trainer.numNodes")]
            continue
        assert [p.name for p in of_kind(objs, "Pod")] == [f"tj-node-0-{i}" for i in (0, 1, 2, 3, n - 2, n - 1)]
        [js] = of_kind(objs, "JobSet")
        assert js.facts["pods_total"] == n
    objs, _ = expand_documents(pytorchjob(workers=200), options={"limit": Limit(None)})   # kdt run builds them all
    assert len(of_kind(objs, "Pod")) == 201 and elided_lines(objs) == []


def test_cli_shows_the_counted_pods_and_the_held_jobs(tmp_path):
    f = tmp_path / "big.yaml"
    f.write_text(PJ.replace("NAME", "big").replace("WORKERS", "100000").replace("RUNPOLICY", "runPolicy: {}")
                 + "---\n" + PJ.replace("NAME", "held").replace("WORKERS", "1").replace("RUNPOLICY", "runPolicy: {suspend: true}"))
    r = cli(str(f))
    assert r.returncode == 0, r.stderr
    assert "PyTorchJob/big: 99,994 more Worker pods and Services not shown (indices 4 to 99,997" in r.stdout
    assert "PyTorchJob/held (" in r.stdout and "nothing created yet: runPolicy.suspend is true" in r.stdout
    assert r.stdout.count("\nkind: Pod\n") == 7

# ---------------------------------------------------------------- torchft replica groups

@pytest.mark.parametrize("overlay,pods", [
    ("torchft-pytorchjob", ["mnist-ft-worker-0", "mnist-ft-worker-1"]),
    ("torchft-trainjob", ["t5-ft-node-0-0", "t5-ft-node-0-1"]),
    ("torchft-statefulset", ["train-llm-0", "train-llm-1", "train-llm-2", "train-llm-3"]),
])
def test_preview_shows_each_pods_replica_group_and_the_lighthouse(overlay, pods):
    from kdt import targets as T
    from kdt.merge_preview import pod_notes
    r = render(T.Target(f"overlays/{overlay}", T.KUSTOMIZE, ROOT / "overlays" / overlay))
    expanded, findings = expand_documents(r.documents)
    assert findings == []
    notes = [line for e in expanded for line in pod_notes(e)]
    lh = "Lighthouse http://torchft-lighthouse:29510"
    assert [n.strip() for n in notes if n.strip().startswith("pod ")] == [
        f"pod {p}: replica group {i}, {lh}" for i, p in enumerate(pods)]
    line = summary_line(overlay, expanded)
    assert "torchft replica groups, one per pod" in line and f"{pods[1]}=1" in line and lh in line
    assert "PET_NNODES" not in line and "master" not in line     # no cross-pod rendezvous to show


def test_upstream_initializer_runtime_previews_its_jobs_and_shared_volume(load):
    """Trainer v2.3.0's torchtune llama3.2-1B runtime (dataset- and model-initializer jobs, the JobSet
    volumeClaimPolicies template `initializer`): the TrainJob's sources reach the initializers (builder.go
    Initializer), JobSet v0.12.0 creates the PVC initializer-<jobset> and gives it to every Job that mounts it."""
    objs, findings = expand_documents(load("upstream-torchtune-initializers-2.3.yaml"), trainer_version="2.3")
    assert [f for f in findings if f.level == "error"] == []
    [js] = of_kind(objs, "JobSet")
    _, _, d = node_container(js.obj, "dataset-initializer")
    _, _, m = node_container(js.obj, "model-initializer")
    assert env(d) == [("STORAGE_URI", "hf://tatsu-lab/alpaca")]
    assert env(m) == [("STORAGE_URI", "hf://meta-llama/Llama-3.2-1B-Instruct"), ("IGNORE_PATTERNS", "*.bin")]
    assert m["envFrom"] == [{"secretRef": {"name": "hf-token"}}]
    [pvc] = of_kind(objs, "PersistentVolumeClaim")
    assert pvc.name == "initializer-tune" and pvc.obj["metadata"]["namespace"] == "ml"
    assert pvc.obj["metadata"]["labels"] == {"jobset.sigs.k8s.io/jobset-name": "tune"}
    assert pvc.obj["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}
    assert pvc.obj["metadata"]["ownerReferences"][0]["kind"] == "JobSet"       # whenDeleted Delete by default
    jobs = {j.name: j.obj for j in of_kind(objs, "Job")}
    assert sorted(jobs) == ["tune-dataset-initializer-0", "tune-model-initializer-0", "tune-node-0"]
    for job in jobs.values():
        assert job["spec"]["template"]["spec"]["volumes"] == [
            {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer-tune"}}]
    lines = "\n".join(line for e in objs for line in explain_lines(e))
    assert "createPVCsIfNecessary" in lines and "addVolumes" in lines and "dependsOn is reached" in lines

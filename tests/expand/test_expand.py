"""Merge preview: what each operator creates, field by field against the operators' rules."""
import copy
import subprocess
import sys

import pytest

from kdt.merge_preview import expand_documents, explain_lines, summary_line
from kdt.expand.trainer_v2 import num_proc_per_node
from kdt.operators import injection as INJ
from kdt.operators import trainer_v2 as TV2
from kdt.operators import training_operator_v1 as TO1
from kdt.render import render
from kdt.targets import discover  # noqa: E402

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]


def env(container):
    return [(e["name"], e.get("value", e.get("valueFrom"))) for e in container.get("env") or []]


def node_container(jobset, job="node"):
    rj = next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == job)
    pod = rj["template"]["spec"]["template"]["spec"]
    return rj, pod, next(c for c in pod["containers"] if c["name"] == job)


# ---------------------------------------------------------------- Training Operator v1

def test_ddp_pods_env_ports_init_and_restart_policy(load):
    docs = load("ddp.yaml")
    pods, findings = expand_documents(docs)
    assert findings == []
    assert [p.name for p in pods] == ["mnist-ddp-master-0", "mnist-ddp-worker-0", "mnist-ddp-worker-1"]
    master, w0, w1 = (p.obj for p in pods)
    c = master["spec"]["containers"][0]
    # the user's env first, then what envvar.go/master.go append, in their order
    assert env(c) == [("EPOCHS", "3"), ("PYTHONUNBUFFERED", "0"),
                      ("MASTER_PORT", "23456"), ("PET_MASTER_PORT", "23456"),
                      ("MASTER_ADDR", "mnist-ddp-master-0"), ("PET_MASTER_ADDR", "mnist-ddp-master-0"),
                      ("WORLD_SIZE", "6"), ("RANK", "0"), ("PET_NPROC_PER_NODE", "2"), ("PET_NODE_RANK", "0"),
                      ("PET_NNODES", "3")]
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
    pods, findings = expand_documents(load("elastic.yaml"))
    assert findings == []
    assert [p.name for p in pods] == ["mnist-elastic-worker-0", "mnist-elastic-worker-1"]
    for p in pods:
        e = env(p.obj["spec"]["containers"][0])
        assert e == [("PYTHONUNBUFFERED", "0"), ("PET_RDZV_ENDPOINT", "mnist-elastic-worker-0:29400"),
                     ("PET_RDZV_BACKEND", "c10d"), ("PET_NNODES", "1:3"), ("PET_MAX_RESTARTS", "5"),
                     ("PET_NPROC_PER_NODE", "auto")]
        assert "initContainers" not in p.obj["spec"]   # no Master: no init container, no MASTER_ADDR


def test_missing_pytorch_container_is_located(load):
    text = (FIXTURES / "elastic.yaml").read_text().replace("- name: pytorch", "- name: trainer")
    from kdt.documents import load_stream
    docs, _ = load_stream(text, "x.yaml")
    pods, findings = expand_documents(docs)
    assert pods == []
    [f] = findings
    assert f.path == "spec.pytorchReplicaSpecs.Worker.template.spec.containers"
    assert (f.file, f.line) == ("x.yaml", 18)


# ---------------------------------------------------------------- Trainer v2

def test_trainer_21_overrides_env_upsert_and_pet(load):
    docs = load("runtime-2.1.yaml", "trainjob-2.1.yaml")
    [js], findings = expand_documents(docs)
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
    [js], findings = expand_documents(load("patches-2.3.yaml"), trainer_version="2.3")
    assert findings == []
    assert js.obj["metadata"]["labels"] == {"team": "ml-platform"}   # JobSet-level patch label wins
    rj, pod, c = node_container(js.obj)
    assert pod["serviceAccountName"] == "trainer-sa"
    assert pod["initContainers"] == [{"name": "warmup", "image": "busybox:1.37", "args": ["sleep", "1"]}]
    e = dict(env(c))
    assert e["PET_NNODES"] == "4" and e["PET_NPROC_PER_NODE"] == "2"    # the runtime's numProcPerNode
    assert js.facts["world_size"] == 8
    _, ipod, ic = node_container(js.obj, "dataset-initializer")
    assert env(ic) == [(INJ.V2_INITIALIZER_ENV_STORAGE_URI, "hf://mnist")]


def test_upstream_runtime_and_example_trainjob(load):
    [js], findings = expand_documents(load("upstream-torch-distributed-2.3.yaml"))
    assert findings == []
    rj, pod, c = node_container(js.obj)
    assert c["image"] == "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"   # no trainer image: the runtime's
    assert rj["template"]["spec"]["parallelism"] == 3
    e = dict(env(c))
    assert e["PET_NNODES"] == "3" and e["PET_NPROC_PER_NODE"] == "auto"  # no resourcesPerNode: kept
    assert e["PET_MASTER_ADDR"] == "multi-node-example-node-0-0.multi-node-example"


@pytest.mark.parametrize("value,resources,expected", [
    (None, None, "auto"),
    ("auto", {"limits": {"cpu": "3500m"}}, "4"),                    # CPU only: the CPU count, rounded up
    ("auto", {"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 2}}, "auto"),
    ("auto", {"limits": {"memory": "1Gi"}}, "1"),                   # no cpu quantity: at least 1
    ("cpu", {"requests": {"cpu": "6"}}, "6"),
    (3, {"limits": {"cpu": "8"}, "requests": {"cpu": "8"}}, "3"),
])
def test_num_proc_per_node_rule(value, resources, expected):
    assert num_proc_per_node(value, resources)[0] == expected


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
    assert f.path == "spec.podTemplateOverrides[0].spec.initContainers[0].name"
    assert "fetch-model" in f.message and "fetch-data" in f.message
    assert (f.file, f.line, f.kind, f.name) == ("trainjob.yaml", 35, "TrainJob", "fsdp")


def test_missing_target_job_and_runtime_are_errors():
    _, findings = expand_documents(_trainjob_21_with("        - name: node\n      spec:", "        - name: launcher\n      spec:"))
    assert [f.path for f in findings] == ["spec.podTemplateOverrides[0].targetJobs[0].name"]
    _, findings = expand_documents(_trainjob_21_with("name: torch-fsdp", "name: torch-gone"))
    assert [f.path for f in findings] == ["spec.runtimeRef.name"] and "torch-gone" in findings[0].message


def test_version_mismatch(load):
    _, findings = expand_documents(load("runtime-2.1.yaml", "trainjob-2.1.yaml"), trainer_version="2.3")
    assert [f.path for f in findings] == ["spec.podTemplateOverrides"]
    assert "2.2+ has runtimePatches" in findings[0].message
    _, findings = expand_documents(load("patches-2.3.yaml"), trainer_version="2.1")
    assert [f.path for f in findings] == ["spec.runtimePatches"]


def test_never_mutates_input(load):
    docs = load("ddp.yaml", "elastic.yaml", "runtime-2.1.yaml", "trainjob-2.1.yaml", "patches-2.3.yaml")
    before = copy.deepcopy([d.data for d in docs])
    for roundtrip in (False, True):
        out, findings = expand_documents(docs, roundtrip=roundtrip)
        assert findings == [] and len(out) == 7
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
                assert len(mine) == total
                nproc = d.data["spec"].get("nprocPerNode", "auto")
                for e in mine:
                    c = next(c for c in e.obj["spec"]["containers"] if c["name"] == TO1.CONTAINER_NAME)
                    envs = dict(env(c))
                    assert envs["PYTHONUNBUFFERED"] == "0"
                    if "Master" in reps:
                        assert envs["MASTER_ADDR"] == f"{d.name}-master-0"
                        assert envs["WORLD_SIZE"] == str(TO1.world_size(total, nproc))
                    if d.data["spec"].get("elasticPolicy"):
                        assert ":" in envs["PET_NNODES"] and envs["PET_RDZV_ENDPOINT"].count(":") == 1
                    else:
                        assert envs["PET_NNODES"] == str(total)
            elif d.kind == "TrainJob":
                seen.add("TrainJob")
                [e] = mine
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
                if "resourcesPerNode" in trainer:
                    assert c["resources"] == trainer["resourcesPerNode"]
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

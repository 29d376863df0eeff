"""The chart itself: lint, package, validation of every ci/ rendering, derived
counts, names, NOTES, the one image, and the generated README."""
from __future__ import annotations

import json
import re
import shutil
import tarfile

import pytest
import yaml

import gen_chart_readme
from chart_support import CHART, CI, ROOT, ci_files, helm, keyed, template, template_docs
from kdt import lint, targets as T, versions
from kdt.targets import target_trainer_version
from kdt.render import render
from kdt.validate import validate_documents

CHART_META = yaml.safe_load((CHART / "Chart.yaml").read_text())


def ci_target(name: str) -> T.Target:
    return T.Target(f"charts/trainer/ci/{name}.yaml", T.HELM, CI / f"{name}.yaml", CHART)


# ------------------------------------------------------------------ lint, package

def test_chart_metadata():
    assert CHART_META["apiVersion"] == "v2"
    assert CHART_META["name"] == "trainer"
    assert re.fullmatch(r"\d+\.\d+\.\d+", CHART_META["version"])


def test_helm_lint_strict_with_defaults_and_every_ci_file():
    proc = helm("lint", "--strict", str(CHART))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 chart(s) failed" in proc.stdout
    for f in sorted(CI.glob("*.yaml")):
        proc = helm("lint", "--strict", str(CHART), "-f", str(f))
        assert proc.returncode == 0, f"{f.name}: {proc.stdout}{proc.stderr}"
        assert "[WARNING]" not in proc.stdout and "[ERROR]" not in proc.stdout


def test_helm_lint_strict_fails_on_a_bad_value(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: 0\n")
    proc = helm("lint", "--strict", str(CHART), "-f", str(bad))
    assert proc.returncode != 0
    assert "at '/nodes': minimum: got 0, want 1" in proc.stdout + proc.stderr


def test_helm_package_makes_a_versioned_archive(tmp_path):
    proc = helm("package", str(CHART), "--destination", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    archive = tmp_path / f"trainer-{CHART_META['version']}.tgz"
    assert archive.is_file(), list(tmp_path.iterdir())
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    for member in ("Chart.yaml", "values.yaml", "values.schema.json", "README.md", "templates/NOTES.txt",
                   "templates/_helpers.tpl", "ci/ddp.yaml"):
        assert f"trainer/{member}" in names
    # the archive renders like the folder
    packaged = helm("template", "trainer", str(archive), "-f", str(CI / "ddp.yaml"))
    assert packaged.returncode == 0, packaged.stderr
    assert packaged.stdout == template(values=CI / "ddp.yaml").stdout


# ------------------------------------------------------------------ every ci file renders, validates and lints

@pytest.mark.parametrize("name", ci_files())
def test_ci_values_render_validate_and_lint(name):
    target = ci_target(name)
    r = render(target)
    assert r.ok, r.findings
    assert r.documents and not r.findings
    version = target_trainer_version(target) or versions.TRAINER_DEFAULT
    problems = validate_documents(r.documents, trainer_version=version)
    assert not problems, [f"{f.path}: {f.message}" for f in problems]
    errors = [f for f in lint.lint_target(target, r.documents) if f.level == "error"]
    assert not errors, [f"{f.rule} {f.path}: {f.message}" for f in errors]
    for d in r.documents:
        assert d.source.startswith("charts/trainer/templates/"), d.source


def test_trainjob_ci_files_declare_their_trainer_version():
    assert target_trainer_version(ci_target("fsdp")) == "2.1"
    assert target_trainer_version(ci_target("fsdp-trainer-2.3")) == "2.3"


# ------------------------------------------------------------------ counts written once, derived everywhere

MODES = ["pytorchjob", "elastic", "trainjob", "statefulset"]


def counts(docs: list[dict], gpu: str = "nvidia.com/gpu") -> dict:
    """Node count, GPU requests/limits and process count as each kind carries them."""
    out: dict = {"gpus": set()}
    for d in docs:
        spec = d["spec"]
        if d["kind"] == "PyTorchJob":
            reps = spec["pytorchReplicaSpecs"]
            out["nodes"] = sum(r["replicas"] for r in reps.values())
            if "elasticPolicy" in spec:
                out["nodes"] = spec["elasticPolicy"]["maxReplicas"]
                assert reps["Worker"]["replicas"] == out["nodes"]
            out["procs"] = spec["nprocPerNode"]
            pods = [r["template"]["spec"] for r in reps.values()]
            res = [c["resources"] for p in pods for c in p["containers"]]
        elif d["kind"] == "TrainJob":
            out["nodes"] = spec["trainer"]["numNodes"]
            out["procs"] = spec["trainer"].get("numProcPerNode")
            res = [spec["trainer"]["resourcesPerNode"]]
        elif d["kind"] == "StatefulSet":
            out["nodes"] = spec["replicas"]
            c = spec["template"]["spec"]["containers"][0]
            env = {e["name"]: e.get("value") for e in c["env"]}
            assert env["NNODES"] == str(spec["replicas"])
            res = [c["resources"]]
        else:
            continue
        for r in res:
            for section in ("requests", "limits"):
                out["gpus"].add((r.get(section) or {}).get(gpu))
    return out


@pytest.mark.parametrize("mode", MODES)
def test_node_and_gpu_counts_come_from_one_value_each(mode):
    docs = template_docs("--set", f"mode={mode}", "--set", "nodes=5", "--set", "gpusPerNode=4")
    c = counts(docs)
    assert c["nodes"] == 5
    assert c["gpus"] == {"4"}          # requests and limits, every replica, from gpusPerNode alone


@pytest.mark.parametrize("mode", MODES)
def test_cpu_only_jobs_request_no_gpu(mode):
    docs = template_docs("--set", f"mode={mode}", "--set", "gpusPerNode=0")
    assert counts(docs)["gpus"] == {None}


def test_master_worker_split_and_single_node():
    job = keyed(template_docs("--set", "nodes=3"))[("kubeflow.org/v1", "PyTorchJob", "trainer-torch-trainer")]
    reps = job["spec"]["pytorchReplicaSpecs"]
    assert (reps["Master"]["replicas"], reps["Worker"]["replicas"]) == (1, 2)
    job = keyed(template_docs("--set", "nodes=1"))[("kubeflow.org/v1", "PyTorchJob", "trainer-torch-trainer")]
    assert list(job["spec"]["pytorchReplicaSpecs"]) == ["Master"]


@pytest.mark.parametrize("version,procs,want", [
    ("2.1", "auto", "auto"), ("2.1", "4", 4), ("2.2+", "auto", None), ("2.2+", "4", 4)])
def test_trainjob_num_proc_per_node_by_trainer_version(version, procs, want):
    docs = template_docs("--set", "mode=trainjob", "--set-string", f"trainJob.trainerVersion={version}",
                         "--set", f"procsPerNode={procs}")
    tj = next(d for d in docs if d["kind"] == "TrainJob")
    assert tj["spec"]["trainer"].get("numProcPerNode") == want
    assert ("podTemplateOverrides" in tj["spec"]) == (version == "2.1")
    assert ("runtimePatches" in tj["spec"]) == (version == "2.2+")


@pytest.mark.parametrize("version", ["2.1", "2.2+"])
def test_trainjob_deadline_and_managed_by(version):
    """2.2+: spec.activeDeadlineSeconds; 2.1 has none, so the created runtime's trainer Job carries it."""
    docs = template_docs("--set", "mode=trainjob", "--set-string", f"trainJob.trainerVersion={version}",
                         "--set", "trainJob.activeDeadlineSeconds=7200",
                         "--set", "trainJob.managedBy=kueue.x-k8s.io/multikueue")
    tj = next(d for d in docs if d["kind"] == "TrainJob")
    rt = next(d for d in docs if d["kind"] == "ClusterTrainingRuntime")
    job_spec = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert tj["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert tj["spec"].get("activeDeadlineSeconds") == (7200 if version == "2.2+" else None)
    assert job_spec.get("activeDeadlineSeconds") == (7200 if version == "2.1" else None)
    plain = template_docs("--set", "mode=trainjob")
    tj = next(d for d in plain if d["kind"] == "TrainJob")
    assert "activeDeadlineSeconds" not in tj["spec"] and "managedBy" not in tj["spec"]


@pytest.mark.parametrize("sets,says", [
    (["trainJob.managedBy=kueue"], "/trainJob/managedBy"),
    (["trainJob.activeDeadlineSeconds=0"], "/trainJob/activeDeadlineSeconds"),
])
def test_trainjob_deadline_and_managed_by_refused_by_the_values_schema(sets, says):
    proc = template("--set", "mode=trainjob", *[a for s in sets for a in ("--set", s)])
    assert proc.returncode != 0 and says in proc.stderr, proc.stderr


def test_a_2_1_deadline_on_an_existing_runtime_fails_the_render():
    proc = template("--set", "mode=trainjob", "--set-string", "trainJob.trainerVersion=2.1",
                    "--set", "trainJob.runtime.create=false", "--set", "trainJob.runtime.name=torch-distributed",
                    "--set", "trainJob.activeDeadlineSeconds=60")
    assert proc.returncode != 0 and "Trainer 2.1 has no TrainJob deadline" in proc.stderr, proc.stderr


@pytest.mark.parametrize("mode,where", [("pytorchjob", "PyTorchJob"), ("elastic", "PyTorchJob"),
                                        ("statefulset", "StatefulSet"), ("trainjob", "ClusterTrainingRuntime"),
                                        ("tensorflow", "ClusterTrainingRuntime")])
def test_priority_and_spread_land_in_every_pod_spec_of_the_mode(mode, where):
    extra = {"key": "topology.kubernetes.io/zone", "maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "x"}}}
    docs = template_docs("--set", f"mode={mode}", "--set", "scheduling.priorityClassName=training-large",
                         "--set", "scheduling.onePodPerNode=true",
                         "--set-json", f"topologySpreadConstraints=[{json.dumps(extra)}]".replace('"key"', '"topologyKey"'))
    (doc,) = [d for d in docs if d["kind"] == where]
    specs = ([r["template"]["spec"] for r in doc["spec"]["pytorchReplicaSpecs"].values()] if where == "PyTorchJob"
             else [doc["spec"]["template"]["spec"]] if where == "StatefulSet"
             else [j["template"]["spec"]["template"]["spec"] for j in doc["spec"]["template"]["spec"]["replicatedJobs"]])
    for spec in specs:
        assert spec["priorityClassName"] == "training-large"
        first, second = spec["topologySpreadConstraints"]
        assert first["topologyKey"] == "kubernetes.io/hostname" and second["topologyKey"] == "topology.kubernetes.io/zone"
    tj = next((d for d in docs if d["kind"] == "TrainJob"), None)
    if tj is not None:     # a TrainJob's patches have no such fields: nothing of them there
        assert "priorityClassName" not in json.dumps(tj) and "topologySpread" not in json.dumps(tj)


def test_placement_on_an_existing_runtime_fails_naming_the_values():
    proc = template("--set", "mode=trainjob", "--set", "trainJob.runtime.create=false",
                    "--set", "trainJob.runtime.name=torch-distributed", "--set", "scheduling.priorityClassName=x")
    assert proc.returncode != 0
    assert "scheduling.priorityClassName, scheduling.onePodPerNode and topologySpreadConstraints go into the " \
           "runtime's pods" in proc.stderr


def test_statefulset_rendezvous_follows_names_and_port():
    docs = keyed(template_docs("--set", "mode=statefulset", "--set", "fullnameOverride=job",
                               "--set", "statefulSet.serviceName=svc", "--set", "torchrun.port=1234"))
    sts = docs[("apps/v1", "StatefulSet", "job")]
    c = sts["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["RDZV_ENDPOINT"] == "job-0.svc:1234"
    assert "--rdzv-id=job \\" in c["args"][0]
    assert sts["spec"]["serviceName"] == "svc"
    assert docs[("v1", "Service", "svc")]["spec"]["ports"][0]["port"] == 1234


# ------------------------------------------------------------------ names and labels

def test_names_are_63_character_safe():
    # Helm allows release names up to 53 characters; <release>-<name> is cut to 63 without a trailing dash.
    proc = helm("template", "r" * 53, str(CHART), "--set", "nameOverride=" + "n" * 8 + "-" + "n" * 20)
    assert proc.returncode == 0, proc.stderr
    for d in yaml.safe_load_all(proc.stdout):
        if d:
            assert len(d["metadata"]["name"]) <= 63 and not d["metadata"]["name"].endswith("-")
            if d["kind"] == "PersistentVolumeClaim":
                assert d["metadata"]["name"].endswith("-checkpoints"), d["metadata"]["name"]
            for v in d["metadata"]["labels"].values():
                assert len(v) <= 63


def test_recommended_labels_default_to_the_release():
    docs = template_docs()
    for d in docs:
        labels = d["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == "trainer"
        assert labels["app.kubernetes.io/name"] == "torch-trainer"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["helm.sh/chart"] == f"trainer-{CHART_META['version']}"


# ------------------------------------------------------------------ NOTES

@pytest.mark.parametrize("name,get", [("ddp", "kubectl get pytorchjob mnist-ddp"),
                                      ("elastic", "kubectl get pytorchjob mnist-elastic"),
                                      ("fsdp", "kubectl get trainjob t5-fsdp"),
                                      ("fsdp-trainer-2.3", "kubectl get trainjob t5-fsdp"),
                                      ("statefulset", "kubectl get statefulset train-llm")])
def test_notes_tell_how_to_watch_and_follow_the_log(name, get):
    proc = helm("install", "--dry-run=client", "trainer", str(CHART), "-f", str(CI / f"{name}.yaml"))
    assert proc.returncode == 0, proc.stderr
    notes = proc.stdout.split("NOTES:", 1)[1]
    assert get in notes
    assert "kubectl logs -f" in notes
    assert "grep -E '\\[(DDP|TRAIN|EPOCH|CKPT|RESUME|DONE)\\]'" in notes
    if name == "fsdp":
        assert "world size 16" in notes
    trainer_status = "kubectl get trainjob t5-fsdp -n default -o jsonpath='{.status.trainerStatus}'"   # Trainer 2.2+
    assert (trainer_status in notes) == (name == "fsdp-trainer-2.3"), notes


# ------------------------------------------------------------------ one image

def test_image_is_named_alike_in_values_kustomize_and_versions():
    values = yaml.safe_load((CHART / "values.yaml").read_text())["image"]
    kust = yaml.safe_load((ROOT / "components" / "image" / "kustomization.yaml").read_text())
    image = next(i for i in kust["images"] if i["name"] == "trainer")
    assert (values["repository"], values["tag"]) == (versions.IMAGE_REPOSITORY, versions.IMAGE_TAG)
    assert (image["newName"], str(image["newTag"])) == (versions.IMAGE_REPOSITORY, versions.IMAGE_TAG)
    assert CHART_META["appVersion"] == versions.IMAGE_TAG
    tf_image = next(i for i in kust["images"] if i["name"] == "trainer-tensorflow")
    assert (tf_image["newName"], str(tf_image["newTag"])) == (versions.IMAGE_REPOSITORY, versions.IMAGE_TAG_TENSORFLOW)
    assert values["tensorflowTag"] == versions.IMAGE_TAG_TENSORFLOW
    for name in ci_files():
        assert "image" not in (yaml.safe_load((CI / f"{name}.yaml").read_text()) or {}), f"ci/{name}.yaml names an image"


# ------------------------------------------------------------------ README

def test_readme_lists_every_value_and_is_current():
    rows, problems = gen_chart_readme.entries(CHART)
    assert not problems
    readme = (CHART / "README.md").read_text()
    assert gen_chart_readme.render_readme(readme, rows) == readme, "run scripts/gen_chart_readme.py"
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    documented = {r.path for r in rows}
    for leaf in gen_chart_readme.leaves(values):
        parts = leaf.split(".")
        assert any(".".join(parts[:i]) in documented for i in range(len(parts), 0, -1)), leaf
        assert any(f"| `{'.'.join(parts[:i])}` |" in readme for i in range(len(parts), 0, -1)), leaf


def test_readme_generator_reports_undocumented_and_stale(tmp_path, capsys):
    copy = tmp_path / "trainer"
    shutil.copytree(CHART, copy)
    values = copy / "values.yaml"
    values.write_text(values.read_text() + "\nundocumented: 1\n")
    assert gen_chart_readme.main(["--chart", str(copy), "--check"]) == 1
    err = capsys.readouterr().err
    assert "undocumented: no `# --` description" in err
    values.write_text(values.read_text().replace("\nundocumented: 1\n", "\n# -- A new value.\nnewValue: 1\n"))
    assert gen_chart_readme.main(["--chart", str(copy), "--check"]) == 1
    err = capsys.readouterr().err
    assert "README.md is stale: regenerate it from values.yaml" in err
    assert "newValue: not in values.schema.json" in err
    schema_file = copy / "values.schema.json"
    schema = json.loads(schema_file.read_text())
    schema["properties"]["newValue"] = {"type": "integer"}
    schema_file.write_text(json.dumps(schema))
    assert gen_chart_readme.main(["--chart", str(copy)]) == 0
    assert "| `newValue` |" in (copy / "README.md").read_text()
    assert gen_chart_readme.main(["--chart", str(copy), "--check"]) == 0


def test_statefulset_script_passes_each_value_as_one_literal_argument():
    """The statefulset mode runs torchrun from a bash script; args must reach it as the other modes' do."""
    import shlex
    tricky = ["--name=my run", "it's", "a;b && echo pwned", "--x=$(POD_NAME)", "${HOME}", "--epochs=2"]
    docs = template_docs("--set", "mode=statefulset", "--set-json", "args=" + json.dumps(tricky),
                         "--set-json", 'torchrun.launcher=["python3","-m","trainkit.torchrun"]')
    sts = next(d for d in docs if d["kind"] == "StatefulSet")
    script = sts["spec"]["template"]["spec"]["containers"][0]["args"][0]
    exec_line = script[script.index("exec "):].replace("\\\n", " ")   # bash line continuations
    words = shlex.split(exec_line)
    assert words[:4] == ["exec", "python3", "-m", "trainkit.torchrun"]
    assert words[-len(tricky):] == tricky
    assert words[-len(tricky) - 1] == "/app/training/smoke.py"


@pytest.mark.parametrize("mode, kind", [("pytorchjob", "PyTorchJob"), ("trainjob", "TrainJob"),
                                        ("statefulset", "StatefulSet"), ("tensorflow", "TrainJob")])
def test_queue_label_goes_on_the_job_object_only(mode, kind):
    docs = template_docs("--set", f"mode={mode}", "--set", "scheduling.queueName=gpu-queue")
    labelled = [d["kind"] for d in docs if d["metadata"]["labels"].get("kueue.x-k8s.io/queue-name") == "gpu-queue"]
    assert labelled == [kind]


def test_gang_scheduling_by_path_and_refused_for_a_statefulset():
    job = next(d for d in template_docs("--set", "scheduling.gang.enabled=true") if d["kind"] == "PyTorchJob")
    assert job["spec"]["runPolicy"]["schedulingPolicy"] == {"scheduleTimeoutSeconds": 600}
    rt = next(d for d in template_docs("--set", "mode=trainjob", "--set", "scheduling.gang.enabled=true")
              if d["kind"] == "ClusterTrainingRuntime")
    assert rt["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 600}}
    proc = template("--set", "mode=statefulset", "--set", "scheduling.gang.enabled=true")
    assert proc.returncode != 0 and "scheduling.gang.enabled: a StatefulSet has no gang scheduling" in proc.stderr


@pytest.mark.parametrize("mode,where", [("pytorchjob", "replica-index"), ("trainjob", "job-completion-index"),
                                        ("statefulset", "pod-index")])
def test_fault_tolerance_makes_every_pod_a_replica_group_with_its_own_index(mode, where):
    docs = template_docs("--set", f"mode={mode}", "--set", "faultTolerance.enabled=true", "--set", "nodes=3",
                         "--set", "faultTolerance.minReplicaGroups=2")
    kinds = {d["kind"]: d for d in docs}
    lh = kinds["Deployment"]
    assert lh["spec"]["replicas"] == 1 and lh["spec"]["strategy"]["type"] == "Recreate"
    assert {e["name"]: e.get("value") for e in lh["spec"]["template"]["spec"]["containers"][0]["env"]}[
        "MIN_REPLICA_GROUPS"] == "2"
    svc = next(d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "torchft-lighthouse")
    assert svc["spec"]["ports"][0]["port"] == 29510 and "NetworkPolicy" in kinds
    text = yaml.safe_dump([d for d in docs if d["kind"] in ("PyTorchJob", "TrainJob", "StatefulSet",
                                                             "ClusterTrainingRuntime")])
    assert where in text and "--standalone" in text and "--rdzv-backend" not in text
    assert "NUM_REPLICA_GROUPS\n" in text and "'3'" in text and "torchft.torch-k8s.io/lighthouse" in text
    if mode == "pytorchjob":
        job = kinds["PyTorchJob"]
        assert list(job["spec"]["pytorchReplicaSpecs"]) == ["Worker"]      # peers: no Master
        assert job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3
        assert job["spec"]["runPolicy"]["backoffLimit"] == 100


@pytest.mark.parametrize("sets,says", [
    (["mode=elastic"], "faultTolerance.enabled: mode elastic has no replica groups"),
    (["faultTolerance.minReplicaGroups=3"], "faultTolerance.minReplicaGroups (3) must be 1..nodes (2)"),
    (["mode=trainjob", "trainJob.runtime.create=false", "trainJob.runtime.name=x"], "set trainJob.runtime.create"),
])
def test_fault_tolerance_settings_that_cannot_work_fail_the_render(sets, says):
    proc = template("--set", "faultTolerance.enabled=true", *[a for s in sets for a in ("--set", s)])
    assert proc.returncode != 0 and says in proc.stderr, proc.stderr

"""Every rule has a bad and a good fixture: bad yields the rule, good does not."""

import pytest

from lint_support import FIXTURES
from kdt import targets as T
from kdt.documents import load_paths
from kdt.findings import ERROR, WARNING
from kdt.lint import all_rules, lint_documents, lint_target

RULES = sorted(all_rules())
DOC_RULES = [r for r in RULES if all_rules()[r].scope == "documents"]
TARGET_RULES = [r for r in RULES if all_rules()[r].scope == "target"]


def findings_for(rule_id: str, kind: str):
    if all_rules()[rule_id].scope == "target":
        folder = FIXTURES / rule_id / kind
        return lint_target(T.Target(str(folder), T.KUSTOMIZE, folder), docs=[])
    docs, problems = load_paths([str(FIXTURES / rule_id / f"{kind}.yaml")])
    assert not problems
    return lint_documents(docs, trainer_version="2.3")   # trainer-version-fields: bad is 2.1-shaped


def test_every_rule_has_fixtures():
    missing = [r for r in RULES if not ((FIXTURES / r / "bad.yaml").is_file() or (FIXTURES / r / "bad").is_dir())]
    assert missing == []
    assert len(RULES) >= 40


@pytest.mark.parametrize("rule_id", RULES)
def test_bad_fixture_triggers_rule(rule_id):
    hits = [f for f in findings_for(rule_id, "bad") if f.rule == rule_id]
    assert hits, f"{rule_id}: bad fixture gave no finding"
    for f in hits:
        assert f.level in (ERROR, WARNING)
        assert f.line and f.col and f.doc is not None and f.file
        assert f.level == all_rules()[rule_id].level or all_rules()[rule_id].level == ERROR


@pytest.mark.parametrize("rule_id", RULES)
def test_good_fixture_is_clean_for_rule(rule_id):
    hits = [f for f in findings_for(rule_id, "good") if f.rule == rule_id]
    assert hits == [], f"{rule_id}: {[f.message for f in hits]}"


def test_trainer_version_decides_fields():
    docs, _ = load_paths([str(FIXTURES / "trainer-version-fields" / "bad.yaml")])   # podTemplateOverrides + auto
    assert [f for f in lint_documents(docs, trainer_version="2.1") if f.rule == "trainer-version-fields"] == []
    msgs = [f.message for f in lint_documents(docs, trainer_version="2.3") if f.rule == "trainer-version-fields"]
    assert any("podTemplateOverrides" in m for m in msgs) and any("numProcPerNode" in m for m in msgs)


def test_finding_points_at_the_offending_line():
    docs, _ = load_paths([str(FIXTURES / "pytorchjob-master-replicas" / "bad.yaml")])
    (f,) = [f for f in lint_documents(docs) if f.rule == "pytorchjob-master-replicas"]
    text = (FIXTURES / "pytorchjob-master-replicas" / "bad.yaml").read_text().splitlines()
    assert f.path == "spec.pytorchReplicaSpecs.Master.replicas"
    master = next(i for i, ln in enumerate(text, 1) if ln.strip() == "Master:")
    assert f.line == master + 1   # replicas absent: the Master mapping (its first key) is located
    assert f.kind == "PyTorchJob" and f.name == "job"


def test_ttl_alone_matters_only_on_trainer_2_1(tmp_path):
    """kubeflow/trainer#2981: a succeeded JobSet deleted by its TTL is recreated on 2.1 (fixed after it)."""
    text = (FIXTURES / "runtime-ttl-failure-policy" / "bad.yaml").read_text()
    assert "failurePolicy: {maxRestarts: 3}\n" in text
    path = tmp_path / "ttl-only.yaml"
    path.write_text(text.replace("      failurePolicy: {maxRestarts: 3}\n", ""))
    docs, _ = load_paths([str(path)])
    hits = {v: [f for f in lint_documents(docs, trainer_version=v) if f.rule == "runtime-ttl-failure-policy"]
            for v in ("2.1", "2.3")}
    assert len(hits["2.1"]) == 1 and "kubeflow/trainer#2981" in hits["2.1"][0].message
    assert hits["2.1"][0].path == "spec.template.spec.ttlSecondsAfterFinished"
    assert hits["2.3"] == []


def test_restart_store_rule_sees_each_way_of_restarting():
    docs, _ = load_paths([str(FIXTURES / "torchrun-restart-store" / "bad.yaml")])
    hits = [f for f in lint_documents(docs) if f.rule == "torchrun-restart-store"]
    assert sorted((f.kind, f.message.split(" ")[0]) for f in hits) == [
        ("PyTorchJob", "elasticPolicy.maxRestarts=5"), ("StatefulSet", "--max-restarts=3"),
        ("TrainJob", "--max-restarts=2")]


def _lint_text(tmp_path, text, name="x.yaml", version="2.3"):
    path = tmp_path / name
    path.write_text(text)
    docs, problems = load_paths([str(path)])
    assert not problems
    return lint_documents(docs, trainer_version=version)


def test_ordered_ready_only_on_training_statefulsets(tmp_path):
    db = ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  serviceName: db\n"
          "  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n"
          "      containers:\n      - name: postgres\n        image: postgres:16\n")
    assert [f for f in _lint_text(tmp_path, db) if f.rule == "statefulset-ordered-ready"] == []
    train = db.replace("image: postgres:16\n", "image: postgres:16\n        command: [torchrun, --nnodes=2, train.py]\n")
    assert len([f for f in _lint_text(tmp_path, train) if f.rule == "statefulset-ordered-ready"]) == 1
    env_only = db.replace("image: postgres:16\n", "image: postgres:16\n        env: [{name: MASTER_ADDR, value: db-0}]\n")
    assert len([f for f in _lint_text(tmp_path, env_only) if f.rule == "statefulset-ordered-ready"]) == 1


@pytest.mark.parametrize("image,expected", [
    ("pytorch/pytorch:2.4.1-cuda12.1-cudnn9-runtime", 0),   # before the shared store (pytorch#128096)
    ("pytorch/pytorch:2.5.0-cuda12.4-cudnn9-runtime", 1),
    ("registry.example/train:v3-torch2.3", 0),
    ("registry.example/train:latest", 1),                   # unknown torch: assumed current
])
def test_restart_store_reads_torch_from_the_image(tmp_path, image, expected):
    job = ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: t}\nspec:\n  serviceName: t\n"
           "  podManagementPolicy: Parallel\n  selector: {matchLabels: {app: t}}\n  template:\n"
           "    metadata: {labels: {app: t}}\n    spec:\n      containers:\n      - name: c\n"
           f"        image: {image}\n        command: [torchrun, --max-restarts=3, --rdzv-backend=c10d, train.py]\n")
    assert len([f for f in _lint_text(tmp_path, job) if f.rule == "torchrun-restart-store"]) == expected


TRAINJOB = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: j}\nspec:\n"
            "  runtimeRef: {name: team-runtime}\n")
RUNTIME = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata: {name: team-runtime}\n"
           "spec:\n  mlPolicy: {numNodes: 1, torch: {}}\n  template:\n    spec:\n      replicatedJobs: []\n")


def test_runtime_refs_resolve_across_the_files_of_a_run(lint_cli, tmp_path):
    (tmp_path / "job.yaml").write_text(TRAINJOB)
    (tmp_path / "runtime.yaml").write_text(RUNTIME)
    code, out, _ = lint_cli(tmp_path / "job.yaml", tmp_path / "runtime.yaml")
    assert "trainjob-runtime-ref" not in out
    # Alone, the runtime may be installed on the cluster: a warning, never an error.
    code, out, _ = lint_cli(tmp_path / "job.yaml")
    assert code == 0 and "warning [trainjob-runtime-ref]" in out and "is defined neither in the files checked nor in the cluster file" in out
    # Under the wrong kind in another file: an error.
    (tmp_path / "runtime.yaml").write_text(RUNTIME.replace("ClusterTrainingRuntime", "TrainingRuntime"))
    code, out, _ = lint_cli(tmp_path / "job.yaml", tmp_path / "runtime.yaml")
    assert code == 1 and "error [trainjob-runtime-ref]" in out and "as a TrainingRuntime" in out


def test_a_runtime_the_cluster_file_declares_is_found_and_one_missing_says_how_to_provide_it(tmp_path):
    """#55: a TrainJob whose runtime is in neither the input nor the cluster file: one line naming the runtime and
    how to provide it; a runtime among the cluster file's `objects` (what the cluster has) resolves it."""
    from kdt import cluster_file as cluster
    (tmp_path / "job.yaml").write_text(TRAINJOB)
    docs, _ = load_paths([str(tmp_path / "job.yaml")])
    (tmp_path / "kdt-cluster.yaml").write_text("objects: []\n")
    bare = cluster.load(str(tmp_path / "kdt-cluster.yaml"))
    found = [f for f in lint_documents(docs, "2.3", cluster=bare) if f.rule == "trainjob-runtime-ref"]
    assert [(f.level, f.path) for f in found] == [(WARNING, "spec.runtimeRef.name")]
    assert "ClusterTrainingRuntime 'team-runtime' is defined neither in the files checked nor in the cluster file" \
        in found[0].message and "kdt validate job.yaml runtime.yaml" in found[0].message
    assert "\n" not in found[0].message
    (tmp_path / "runtimes").mkdir()
    (tmp_path / "runtimes" / "rt.yaml").write_text(RUNTIME)
    (tmp_path / "kdt-cluster.yaml").write_text("objects: [runtimes]\n")
    declared = cluster.load(str(tmp_path / "kdt-cluster.yaml"))
    assert [f for f in lint_documents(docs, "2.3", cluster=declared) if f.rule == "trainjob-runtime-ref"] == []


def test_lint_help_names_the_default_the_code_uses(lint_cli, tmp_path):
    from kdt import versions
    code, out, _ = lint_cli("--help")
    assert code == 0 and f"else {versions.TRAINER_DEFAULT})" in " ".join(out.split())
    # In a repository with no marker and no pin (this one's README pins 2.3), a TrainJob that fits one release
    # only (a 2.1-only field) is checked as that release, and the output says why; --trainer-version overrides it.
    (tmp_path / "j.yaml").write_text(TRAINJOB + "  podTemplateOverrides: []\n")
    _, out, _ = lint_cli(tmp_path / "j.yaml", cwd=tmp_path)
    assert "trainer-version-fields" not in out
    assert "note: Trainer 2.1 for " in out and "as 2.3: unknown field spec.podTemplateOverrides" in out
    _, out, _ = lint_cli("--trainer-version", "2.3", tmp_path / "j.yaml", cwd=tmp_path)
    assert "error [trainer-version-fields]" in out
    # Here the repository's install step pins 2.3, which wins over the shape: the 2.1 field is reported.
    _, out, _ = lint_cli(tmp_path / "j.yaml")
    assert "error [trainer-version-fields]" in out and "note: Trainer 2.3 (pinned by the repository" in out


def test_pod_security_names_every_gap_in_the_kinds_scanners_do_not_read():
    docs, _ = load_paths([str(FIXTURES / "pod-security" / "bad.yaml")])
    hits = sorted((f.kind, f.extra["control"], f.path) for f in lint_documents(docs) if f.rule == "pod-security")
    worker = "spec.pytorchReplicaSpecs.Worker.template.spec"
    node = "spec.template.spec.replicatedJobs[0].template.spec.template.spec"
    assert hits == [
        ("ClusterTrainingRuntime", "allowPrivilegeEscalation", f"{node}.containers[0].securityContext.allowPrivilegeEscalation"),
        ("ClusterTrainingRuntime", "capabilities_restricted", f"{node}.containers[0].securityContext.capabilities.drop"),
        ("ClusterTrainingRuntime", "runAsNonRoot", f"{node}.containers[0].securityContext.runAsNonRoot"),
        ("ClusterTrainingRuntime", "seccompProfile_restricted", f"{node}.containers[0].securityContext.seccompProfile.type"),
        ("PyTorchJob", "allowPrivilegeEscalation", f"{worker}.containers[0].securityContext.allowPrivilegeEscalation"),
        ("PyTorchJob", "capabilities_restricted", f"{worker}.containers[0].securityContext.capabilities.add[0]"),
        ("PyTorchJob", "capabilities_restricted", f"{worker}.containers[0].securityContext.capabilities.drop"),
        ("PyTorchJob", "restrictedVolumes", f"{worker}.volumes[0].hostPath"),
        ("PyTorchJob", "seccompProfile_restricted", f"{worker}.containers[0].securityContext.seccompProfile.type"),
    ]


def test_hostname_length_depends_on_the_replica_count(tmp_path):
    text = (FIXTURES / "pod-hostname-length" / "bad.yaml").read_text()
    assert len([f for f in _lint_text(tmp_path, text) if f.rule == "pod-hostname-length"]) == 2
    ten = text.replace("replicas: 64", "replicas: 10")
    assert [f for f in _lint_text(tmp_path, ten) if f.rule == "pod-hostname-length"] == []


def test_tensorflow_worker_counts_are_located_where_they_are_typed():
    """A stale TF_NUM_WORKERS in the TrainJob, and seed 004's NUM_WORKERS in the runtime's init container."""
    path = FIXTURES / "tf-worker-count" / "bad.yaml"
    docs, _ = load_paths([str(path)])
    hits = sorted((f for f in lint_documents(docs) if f.rule == "tf-worker-count"), key=lambda f: f.line)
    text = path.read_text().splitlines()
    assert [(f.kind, f.name, f.path) for f in hits] == [
        ("TrainJob", "mnist", "spec.trainer.env[0].value"),
        ("ClusterTrainingRuntime", "seed",
         "spec.template.spec.replicatedJobs[0].template.spec.template.spec.initContainers[0].env[0].value")]
    assert "TF_NUM_WORKERS=2 but numNodes is 3" in hits[0].message
    assert "NUM_WORKERS=2 but numNodes is 4" in hits[1].message and "TrainJob 'seed-job'" in hits[1].message
    assert text[hits[1].line - 1].strip() == 'value: "2"' and "NUM_WORKERS" in text[hits[1].line - 2]


def test_tensorflow_rules_are_quiet_on_the_shipped_runtime_and_torch_jobs():
    from kdt.render import render
    for overlay in ("tensorflow", "fsdp-trainer-2.3", "ddp"):
        r = render(T.Target(f"overlays/{overlay}", T.KUSTOMIZE, T.ROOT / "overlays" / overlay))
        assert [f for f in lint_documents(r.documents) if f.rule.startswith("tf-")] == []


def _lint_with(tmp_path, text, rule_id, **options):
    from kdt.lint.config import Config
    path = tmp_path / "x.yaml"
    path.write_text(text)
    docs, problems = load_paths([str(path)])
    assert not problems
    config = Config(rule_options={rule_id: options}) if options else None
    return [f for f in lint_documents(docs, trainer_version="2.3", config=config) if f.rule == rule_id]


_STS = """apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: train, namespace: ml}}
spec:
  serviceName: rdzv
  replicas: {replicas}
  podManagementPolicy: Parallel
  selector: {{matchLabels: {{app: train}}}}
  template:
    metadata: {{labels: {{app: train}}}}
    spec:
      containers:
        - name: trainer
          image: ghcr.io/example/trainer:1.0
          command: {command}
          env: {env}
"""


def test_join_timeout_reads_settings_and_node_count_as_torchrun_does(tmp_path):
    from kdt.lint.rules.rendezvous_join_timeout import formation_seconds, MEASURED
    rule = "rendezvous-join-timeout"
    base = '[torchrun, --rdzv-backend=c10d, "--rdzv-conf=join_timeout=100", /app/train.py]'
    (f,) = _lint_with(tmp_path, _STS.format(replicas=64, command=base, env="[]"), rule)
    assert f.path == "spec.template.spec.containers[0].command[2]" and "64 nodes" in f.message
    # --nnodes wins over replicas; the maximum of MIN:MAX counts
    many = base.replace("/app/train.py", "--nnodes=2:128, /app/train.py")
    assert "128 nodes" in _lint_with(tmp_path, _STS.format(replicas=2, command=many, env="[]"), rule)[0].message
    # PET_RDZV_CONF when the command line has no --rdzv-conf; a long enough timeout is clean
    env = '[{name: PET_RDZV_CONF, value: "join_timeout=30"}]'
    plain = "[torchrun, --rdzv-backend=c10d, /app/train.py]"
    (f,) = _lint_with(tmp_path, _STS.format(replicas=8, command=plain, env=env), rule)
    assert f.path == "spec.template.spec.containers[0].env"
    long_enough = int(formation_seconds(64) + 180) + 1
    ok = base.replace("join_timeout=100", f"join_timeout={long_enough}")
    assert _lint_with(tmp_path, _STS.format(replicas=64, command=ok, env="[]"), rule) == []
    # the allowance is an option; values the manifest does not spell out are not guessed
    assert bool(_lint_with(tmp_path, _STS.format(replicas=8, command=base, env="[]"), rule,
                           pod_start_allowance_seconds=1)) == (formation_seconds(8) + 1 > 100)
    shell = base.replace("join_timeout=100", "join_timeout=$(JOIN)")
    assert _lint_with(tmp_path, _STS.format(replicas=64, command=shell, env="[]"), rule) == []
    var = many.replace("--nnodes=2:128", '"--nnodes=${NNODES}"')
    assert _lint_with(tmp_path, _STS.format(replicas=64, command=var, env="[]"), rule) == []
    # the figures are measured ones, rising with the count
    counts = sorted(MEASURED)
    assert counts[0] >= 2 and all(MEASURED[a] < MEASURED[b] for a, b in zip(counts, counts[1:]))
    assert formation_seconds(counts[-1] * 2) > MEASURED[counts[-1]]


def test_join_timeout_static_rendezvous_of_a_trainjob(tmp_path):
    job = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers:
                    - {name: node, image: ghcr.io/example/trainer:1.0}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: big}
spec:
  runtimeRef: {name: torch}
  trainer:
    numNodes: 64
    command: [torchrun, "--rdzv-conf=timeout=%s", /app/train.py]
"""
    (f,) = _lint_with(tmp_path, job % 60, "rendezvous-join-timeout")
    assert f.path == "spec.trainer.command[1]" and "timeout=60" in f.message and "64 nodes" in f.message
    assert _lint_with(tmp_path, job % 1800, "rendezvous-join-timeout") == []


def test_env_size_counts_config_maps_secrets_and_the_total(tmp_path):
    import base64
    rule = "pod-env-size"
    big = "h" * 140_000
    cm = f"""apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: ml}}
data: {{HOSTS: "{big}", SMALL: x}}
---
"""
    from_cm = _STS.format(replicas=2, command="[python3, /app/train.py]", env="[]").replace(
        "          env: []", "          envFrom: [{configMapRef: {name: settings}}]")
    (f,) = _lint_with(tmp_path, cm + from_cm, rule)
    assert "env HOSTS is 140,006 bytes" in f.message and f.path == "spec.template.spec.containers[0].envFrom[0]"
    # the same ConfigMap in another namespace is not the one the pod reads: nothing is guessed
    assert _lint_with(tmp_path, cm.replace("namespace: ml", "namespace: other") + from_cm, rule) == []
    secret = (f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s, namespace: ml}}\n"
              f"data: {{k: {base64.b64encode(big.encode()).decode()}}}\n---\n")
    ref = _STS.format(replicas=2, command="[python3, /app/train.py]",
                      env="[{name: K, valueFrom: {secretKeyRef: {name: s, key: k}}}]")
    assert len(_lint_with(tmp_path, secret + ref, rule)) == 1
    assert _lint_with(tmp_path, ref, rule) == []          # the Secret is not in the stream
    # many values under the per-string limit that together pass a quarter of the stack limit
    env = "[" + ", ".join(f'{{name: V{i}, value: "{"v" * 60_000}"}}' for i in range(3)) + "]"
    text = _STS.format(replicas=2, command="[python3, /app/train.py]", env=env)
    assert _lint_with(tmp_path, text, rule) == []         # 180 kB < 2 MiB
    (f,) = _lint_with(tmp_path, text, rule, stack_limit_bytes=512 * 1024)
    assert "refuses more than 131,072" in f.message    # the kernel never goes below 32 pages


def test_topology_spread_deadlock_counts_the_pods_each_path_makes():
    docs, _ = load_paths([str(FIXTURES / "topology-spread-deadlock" / "bad.yaml")])
    hits = {(f.kind, f.name): f for f in lint_documents(docs, trainer_version="2.3") if f.rule == "topology-spread-deadlock"}
    assert set(hits) == {("PyTorchJob", "big"), ("StatefulSet", "llm"), ("TrainJob", "t5"), ("TrainingRuntime", "pinned-alone")}
    assert "at most 1 of these 8 pods, so 7 never schedule" in hits["PyTorchJob", "big"].message
    assert "(us-east-1a, required node affinity)" in hits["StatefulSet", "llm"].message
    t5 = hits["TrainJob", "t5"]     # pinned by the TrainJob's patch, spread by the runtime, 16 nodes
    assert t5.message.startswith("runtime spread-zones: ") and "so 15 never schedule" in t5.message
    assert t5.path == "spec.trainer.numNodes"
    assert "at most 1 of these 4 pods" in hits["TrainingRuntime", "pinned-alone"].message


def test_importing_a_rule_module_first_keeps_the_rules_function():
    """Python binds a subpackage to its parent's name when it loads it: kdt.lint.rules (the
    package) must not replace kdt.lint.all_rules() (the function) for code that imports a rule module
    before it asks for the rules (a fresh process, as pytest's collection order made it)."""
    import subprocess
    import sys
    from pathlib import Path
    scripts = Path(__file__).resolve().parents[2] / "src"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import kdt.lint.rules._own_pods; "
            "from kdt.lint import all_rules; print(callable(all_rules), len(all_rules()) > 40)")
    out = subprocess.run([sys.executable, "-c", code, str(scripts)], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "True"], out.stderr


def _initializer_job(secret: str, uri: str = "s3://bucket/data") -> str:
    return ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: tj}\nspec:\n"
            "  runtimeRef: {name: rt}\n  initializer:\n    dataset:\n"
            f"      storageUri: {uri}\n      secretRef: {{name: {secret}}}\n")


def test_initializer_secret_named_nowhere_says_what_to_create_and_the_cluster_file_decides(tmp_path):
    """#55: where no Secret is known the rule warns what to create; where the cluster file lists Secrets, a name
    among none of them is an error and a listed one passes."""
    from kdt.cluster_file import Cluster
    from kdt.documents import load_stream
    docs, _ = load_stream(_initializer_job("s3-keys"), "t.yaml")
    (f,) = [f for f in lint_documents(docs, cluster=Cluster()) if f.rule == "trainjob-initializer-secret"]
    assert f.level == WARNING and f.path == "spec.initializer.dataset.secretRef.name"
    assert "--from-literal=ACCESS_KEY_ID=... --from-literal=SECRET_ACCESS_KEY=..." in f.message
    listed = Cluster(secrets=("ml/other", "s3-keys"))
    assert [f for f in lint_documents(docs, cluster=listed) if f.rule == "trainjob-initializer-secret"] == []
    (e,) = [f for f in lint_documents(docs, cluster=Cluster(secrets=("other",)))
            if f.rule == "trainjob-initializer-secret"]
    assert e.level == ERROR and "CreateContainerConfigError" in e.message


@pytest.mark.parametrize("uri,level", [("hf://alpaca", ERROR), ("pvc://data/x", ERROR), ("gs://b/k", ERROR),
                                       ("cache://schema", ERROR), ("s3:///key", ERROR), ("hf://org/name/extra", WARNING),
                                       ("hf://org/name", None), ("s3://bucket", None), ("cache://s/t", None)])
def test_dataset_initializer_uri_shapes(uri, level):
    """Trainer v2.3.0 pkg/initializers/dataset: hf://org/name (kubeflow/sdk#563: hf:// without a repository
    path), s3://bucket/prefix, cache://schema/table; any other scheme is refused when the pod runs."""
    from kdt.documents import load_stream
    docs, _ = load_stream(_initializer_job("x", uri), "t.yaml")
    got = [f.level for f in lint_documents(docs) if f.rule == "trainjob-initializer-uri"]
    assert got == ([level] if level else [])


def test_deadline_against_the_first_checkpoint_reads_flags_shell_and_env():
    docs, _ = load_paths([str(FIXTURES / "trainjob-deadline-checkpoint" / "bad.yaml")])
    hits = {f.name: f for f in lint_documents(docs) if f.rule == "trainjob-deadline-checkpoint"}
    assert hits["tj"].message.startswith("activeDeadlineSeconds 120 is shorter than the first checkpoint's 200 s at "
                                         "least (--checkpoint-every 100 steps x --step-sleep 2 s)")
    assert "--checkpoint-every 40 steps x TRAINKIT_STEP_SLEEP 2 s" in hits["tj-shell"].message
    assert hits["tj"].path == "spec.activeDeadlineSeconds" and hits["tj"].level == WARNING

"""The merge preview held to what Trainer's controller creates in its integration tests (kubeflow/trainer
v2.1.0 and v2.3.0 test/integration/controller/trainjob_controller_test.go, test/integration/webhooks/): the
JobSet's suspend, the order of merged lists, the runtime snapshot ConfigMap, and what the API server refuses.
Cases restated here in this project's words; bench/trainer_integration.py runs the per-release restatement."""
from kdt.documents import load_stream
from kdt.merge_preview import expand_documents

RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: rt, namespace: ns}
spec:
  mlPolicy: {numNodes: 1}
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
                    - {name: node, image: "img:1"}
                    - name: sidecar
                      image: "side:1"
                      env: [{name: A, value: "1"}, {name: C, value: "3"}]
"""


def docs(trainjob_spec: str, runtime: str = RUNTIME, name: str = "tj"):
    text = runtime + f"""---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: {name}, namespace: ns}}
spec: {{runtimeRef: {{kind: TrainingRuntime, name: rt}}{trainjob_spec}}}
"""
    d, f = load_stream(text, "inline.yaml")
    assert f == []
    return d


def one(objs, kind):
    [e] = [e for e in objs if e.kind == kind]
    return e


def test_jobset_suspend_is_the_trainjobs_defaulted_suspend():
    """jobset.go Build Suspend(trainJob.Spec.Suspend) and the CRD's default false: every JobSet has it."""
    for version in ("2.1", "2.3"):
        for spec, want in (("", False), (", suspend: false", False), (", suspend: true", True)):
            objs, findings = expand_documents(docs(spec), trainer_version=version)
            assert [f for f in findings if f.level == "error"] == []
            js = one(objs, "JobSet").obj
            assert js["spec"]["suspend"] is want, (version, spec)
            job = [e for e in objs if e.kind == "Job"][0].obj
            assert job["spec"].get("suspend", False) is want


def _sidecar_env(objs):
    js = one(objs, "JobSet").obj
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return [(e["name"], e["value"]) for e in next(c for c in pod["containers"] if c["name"] == "sidecar")["env"]]


PATCH_23 = (", runtimePatches: [{manager: test.io/m, trainingRuntimeSpec: {template: {spec: {replicatedJobs: "
            "[{name: node, template: {spec: {template: {spec: {containers: [{name: sidecar, env: ENV}]}}}}}]}}}}]")
OVERRIDE_21 = ", podTemplateOverrides: [{targetJobs: [{name: node}], spec: {containers: [{name: sidecar, env: ENV}]}}]"


def test_env_merged_by_a_patch_or_override_is_in_strategic_merge_patch_order():
    """apimachinery strategicpatch mergeSlice/mergeSortedSlice, what both releases call (2.1
    mergePodTemplateOverrides, 2.3 mergeRuntimePatches): the patch's items in its order, a base item first
    only while it stands before the next patch item in the base. The integration tests' case (runtime
    [INIT_ENV, DATASET_PATH], patch [INIT_ENV, NEW_VALUE] -> [INIT_ENV, NEW_VALUE, DATASET_PATH]) and more."""
    cases = [("[{name: B, value: b}]", [("B", "b"), ("A", "1"), ("C", "3")]),
             ("[{name: A, value: x}, {name: B, value: b}]", [("A", "x"), ("B", "b"), ("C", "3")]),
             ("[{name: C, value: x}, {name: B, value: b}]", [("A", "1"), ("C", "x"), ("B", "b")])]
    for env, want in cases:
        for version, spec in (("2.3", PATCH_23), ("2.1", OVERRIDE_21)):
            objs, findings = expand_documents(docs(spec.replace("ENV", env)), trainer_version=version)
            assert [f for f in findings if f.level == "error"] == [], findings
            assert _sidecar_env(objs) == want, (version, env)
    # a patch naming base items against their base order: the patch's order wins (normalizeSliceOrder)
    objs, _ = expand_documents(docs(PATCH_23.replace("ENV", "[{name: C, value: x}, {name: A, value: z}]")),
                               trainer_version="2.3")
    assert _sidecar_env(objs) == [("C", "x"), ("A", "z")]


def test_what_a_dollar_reference_sees_follows_the_merged_order():
    """The kubelet expands $(VAR) in an env value from the entries before it only; a patched B = $(A)-x
    goes before A (new patch items first), so it stays literal in the pod kdt run starts (kdt.operators.framework.pods)."""
    from kdt.operators.framework.pods import Container, LocalPod, container_env
    for version, spec in (("2.3", PATCH_23), ("2.1", OVERRIDE_21)):
        objs, _ = expand_documents(docs(spec.replace("ENV", '[{name: B, value: "$(A)-x"}]')), trainer_version=version)
        pod = next(e for e in objs if e.kind == "Pod")
        c = next(c for c in pod.obj["spec"]["containers"] if c["name"] == "sidecar")
        lp = LocalPod(pod.name, pod.obj, None, "tj", "node", 0, pod.source)
        env = container_env(lp, Container("sidecar", c, (), pod.source), {})
        assert env["B"] == "$(A)-x" and env["A"] == "1", version
        # patched after A (both named, A first): B sees A
        objs, _ = expand_documents(docs(spec.replace("ENV", '[{name: A, value: "1"}, {name: B, value: "$(A)-x"}]')),
                                   trainer_version=version)
        pod = next(e for e in objs if e.kind == "Pod")
        c = next(c for c in pod.obj["spec"]["containers"] if c["name"] == "sidecar")
        assert container_env(lp, Container("sidecar", c, (), pod.source), {})["B"] == "1-x"


def test_trainer_23_writes_the_runtime_snapshot_configmap_and_21_does_not():
    """pkg/runtime/core/snapshot.go (v2.3.0) createRuntimeSnapshot; the integration tests' 'Integration Tests
    for Runtime Snapshots': name <job>-runtime-snapshot, owner the TrainJob (controller, blockOwnerDeletion),
    data key runtime holding the runtime's YAML (its kind and name)."""
    import yaml
    objs, findings = expand_documents(docs(", suspend: true"), trainer_version="2.3")
    cm = one(objs, "ConfigMap").obj
    assert cm["metadata"]["name"] == "tj-runtime-snapshot" and cm["metadata"]["namespace"] == "ns"
    assert cm["metadata"]["ownerReferences"] == [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                                  "name": "tj", "controller": True, "blockOwnerDeletion": True}]
    text = cm["data"]["runtime"]
    assert "kind: TrainingRuntime" in text and "name: rt" in text
    back = yaml.safe_load(text)
    assert back["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] == "node"
    # sigs.k8s.io/yaml: keys sorted, lists at their key's indent
    assert text.index("apiVersion:") < text.index("kind:") < text.index("metadata:") < text.index("spec:")
    assert "      replicatedJobs:\n      - name: node\n" in text
    assert [e for e in expand_documents(docs(""), trainer_version="2.1")[0] if e.kind == "ConfigMap"] == []


def test_snapshot_quantities_are_canonical_and_scripts_literal():
    from kdt.operators.trainer_v2.facts import snapshot_yaml
    text = snapshot_yaml({"kind": "TrainingRuntime", "spec": {"c": {"resources": {"requests": {"cpu": "1000m",
                          "memory": "1024Mi"}}, "command": ["sh", "-c", "a\nb"], "args": ["true", "x"]}}})
    # go-yaml v2: a string that reads as another type double-quoted, a multi-line one a literal block
    assert 'cpu: "1"' in text and "memory: 1Gi" in text and '- "true"\n    - x\n' in text
    assert "    - |-\n      a\n      b\n" in text


TORCH_RUNTIME = RUNTIME.replace("mlPolicy: {numNodes: 1}", "mlPolicy: {numNodes: 1, torch: {}}")
GRACE = (", runtimePatches: [{manager: test.io/m, trainingRuntimeSpec: {template: {spec: {replicatedJobs: [{name: node, "
         "template: {spec: {template: {spec: {terminationGracePeriodSeconds: GRACE}}}}}]}}}}]")
# What the API server refuses by the CRDs' schemas and CEL rules (test/integration/webhooks/trainjob_test.go and
# the CRDs of each release): (release, TrainJob name, its spec's tail, runtime, the refused kind, path).
REFUSED = [
    ("2.3", "1jobname", "", RUNTIME, "TrainJob", ""),
    ("2.3", "Invalid-job-name", "", RUNTIME, "TrainJob", ""),
    ("2.3", "jobname-", "", RUNTIME, "TrainJob", ""),
    ("2.3", "this-name-is-way-too-long-for-a-rfc1035-label-and-should-fail-validation", "", RUNTIME, "TrainJob", ""),
    ("2.3", "tj", ", managedBy: invalid", RUNTIME, "TrainJob", "spec.managedBy"),
    ("2.3", "tj", ", initializer: {dataset: {storageUri: invalid-uri}}", RUNTIME, "TrainJob",
     "spec.initializer.dataset.storageUri"),
    ("2.3", "tj", ", initializer: {model: {storageUri: 'hf://'}}", RUNTIME, "TrainJob", "spec.initializer.model.storageUri"),
    ("2.3", "tj", ', trainer: {command: ["' + "a" * (1048576 + 1) + '"]}', RUNTIME, "TrainJob", "spec.trainer.command[0]"),
    ("2.3", "tj", ', trainer: {args: ["' + "a" * (1048576 + 1) + '"]}', RUNTIME, "TrainJob", "spec.trainer.args[0]"),
    ("2.3", "tj", GRACE.replace("GRACE", "-1"), RUNTIME, "TrainJob",
     "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec."
     "terminationGracePeriodSeconds"),
    ("2.3", "tj", "", RUNTIME.replace("mlPolicy: {numNodes: 1}", "mlPolicy: {numNodes: 1, torch: {}, mpi: {}}"),
     "TrainingRuntime", "spec.mlPolicy"),
    ("2.3", "tj", "", RUNTIME.replace("mlPolicy: {numNodes: 1}", "mlPolicy: {numNodes: 1, mpi: {mpiImplementation: Foo}}"),
     "TrainingRuntime", "spec.mlPolicy.mpi.mpiImplementation"),
    ("2.1", "tj", "", RUNTIME.replace("mlPolicy: {numNodes: 1}", "mlPolicy: {numNodes: 2, torch: {elasticPolicy: "
                                      "{maxNodes: 3}}}"), "TrainingRuntime", "spec.mlPolicy"),
]


def test_what_the_api_server_refuses_previews_as_the_refusal():
    """A TrainJob or runtime the CRD's schema, limits or CEL rules refuse creates nothing: the preview gives
    validation's own finding (kdt validate's, at the release) and, for a TrainJob whose runtime is refused,
    says why nothing is created; as webhook refusals do, an error (exit 1)."""
    from kdt.validate import validate_documents
    for version, name, spec, runtime, kind, path in REFUSED:
        d = docs(spec, runtime, name=name)
        objs, findings = expand_documents(d, trainer_version=version)
        assert objs == [], (version, name, spec[:60])
        errors = [f for f in findings if f.level == "error"]
        assert [(f.rule, f.kind, f.path) for f in errors if f.rule == "schema"] == [("schema", kind, path)], \
            (version, name, spec[:60], [(f.rule, f.path, f.message[:80]) for f in errors])
        assert set(f for f in errors if f.rule == "schema") <= set(validate_documents(d, trainer_version=version))
        if kind != "TrainJob":
            assert [(f.rule, f.kind) for f in errors if f.rule != "schema"] == [("expand", "TrainJob")]
            assert "the API server refuses TrainingRuntime/rt" in errors[-1].message


def test_what_the_api_server_admits_still_previews():
    """The integration tests' admitted neighbours of each refusal: a 63-character name, the two managedBy
    values (multikueue: held), an empty or scheme://path storageUri, a command item at the limit, a grace
    period of 0 or 300."""
    admitted = [("2.3", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk", ""),
                ("2.3", "tj", ", managedBy: trainer.kubeflow.org/trainjob-controller"),
                ("2.3", "tj", ', trainer: {command: ["' + "a" * 1048576 + '"]}'),
                ("2.3", "tj", GRACE.replace("GRACE", "0")), ("2.3", "tj", GRACE.replace("GRACE", "300")),
                ("2.1", "tj", "")]
    for version, name, spec in admitted:
        objs, findings = expand_documents(docs(spec, name=name), trainer_version=version)
        assert [f for f in findings if f.level == "error"] == [] and one(objs, "JobSet"), (version, name, spec[:60])
    from kdt.validate import validate_documents     # the runtime here has no initializer job: validation alone
    for uri in ("''", "'hf://org/model'", "'s3://bucket/path'"):
        assert validate_documents(docs(f", initializer: {{model: {{storageUri: {uri}}}}}"), trainer_version="2.3") == []
    result = expand_documents(docs(", managedBy: kueue.x-k8s.io/multikueue"), trainer_version="2.3")
    assert result[1] == [] and "leaves the job to that controller" in result.held[0].reason

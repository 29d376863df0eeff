"""The schema engine on fixtures written for the project: what is an error, where, and what it says."""
from __future__ import annotations

import pytest

from kdt.documents import load_stream
from kdt.findings import ERROR, WARNING
from kdt.validate import validate_documents


def check(text: str, **kw):
    docs, findings = load_stream(text, "t.yaml")
    assert not findings, findings
    return validate_documents(docs, **kw)


def only(findings):
    assert len(findings) == 1, [f"{f.path}: {f.message}" for f in findings]
    return findings[0]


@pytest.mark.parametrize("name,trainer", [
    ("pytorchjob-valid.yaml", "2.3"), ("pytorchjob-elastic-valid.yaml", "2.3"), ("kubernetes-valid.yaml", "2.3"),
    ("argocd-valid.yaml", "2.3"), ("jobset-valid.yaml", "2.3"), ("jobset-valid.yaml", "2.1"),
    ("trainer-2.1-valid.yaml", "2.1"), ("trainer-2.3-valid.yaml", "2.3"),
])
def test_valid_fixtures_have_no_findings(fixture_docs, name, trainer):
    docs = fixture_docs(name)
    assert docs
    assert validate_documents(docs, trainer_version=trainer) == []


def test_every_error_of_a_document_is_reported_with_its_location(fixture_docs):
    found = validate_documents(fixture_docs("pytorchjob-errors.yaml"))
    got = sorted((f.line, f.col, f.path, f.message) for f in found)
    base = "spec.pytorchReplicaSpecs.Worker"
    assert got == [
        (9, 5, "spec.elasticPolicy.maxReplica", "unknown field 'maxReplica' (did you mean 'maxReplicas'?)"),
        (12, 17, f"{base}.replicas", '"two" is not of type integer'),
        (18, 15, f"{base}.template.spec.containers[0].imge", "unknown field 'imge' (did you mean 'image'?)"),
        (19, 15, f"{base}.template.spec.containers[1]", "missing required field 'name'"),
    ]
    for f in found:
        assert (f.level, f.rule, f.file, f.doc, f.kind, f.name) == (ERROR, "schema", "pytorchjob-errors.yaml", 0,
                                                                     "PyTorchJob", "ddp-errors")


def test_misspelt_trainer_and_runtime_jobset_template_fields(fixture_docs):
    found = validate_documents(fixture_docs("trainer-misspelt.yaml"), trainer_version="2.1")
    got = sorted((f.doc, f.line, f.col, f.path, f.message) for f in found)
    assert got == [
        (0, 9, 5, "spec.trainer.numNode", "unknown field 'numNode' (did you mean 'numNodes'?)"),
        (1, 18, 7, "spec.template.spec.replicatedJob", "unknown field 'replicatedJob' (did you mean 'replicatedJobs'?)"),
    ]


POD_TEMPLATE_TYPO = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  serviceName: s
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: c
          image: i
          volumeMount: []
"""


def test_misspelt_field_in_a_kubernetes_pod_template_is_an_error():
    f = only(check(POD_TEMPLATE_TYPO))
    assert f.path == "spec.template.spec.containers[0].volumeMount"
    assert "did you mean 'volumeMounts'" in f.message
    assert (f.line, f.col) == (13, 11)


def test_trainer_versions_reject_each_others_fields(fixture_docs):
    old = fixture_docs("trainer-2.1-valid.yaml")
    new = fixture_docs("trainer-2.3-valid.yaml")
    on_23 = {(f.path, f.message.split(" (")[0]) for f in validate_documents(old, trainer_version="2.3")}
    assert on_23 == {("spec.podTemplateOverrides", "unknown field 'podTemplateOverrides'"),
                     ("spec.trainer.numProcPerNode", '"auto" is not of type integer'),
                     ("spec.mlPolicy.torch.numProcPerNode", "unknown field 'numProcPerNode'")}
    on_21 = only(validate_documents(new, trainer_version="2.1"))
    assert on_21.path == "spec.runtimePatches" and on_21.message.startswith("unknown field 'runtimePatches'")


PORTS = """\
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers:
    - name: c
      image: i
      readinessProbe: {{tcpSocket: {{port: {port}}}}}
      resources: {{limits: {{cpu: {cpu}}}}}
"""


@pytest.mark.parametrize("port,cpu", [("8080", "2"), ("http", "'500m'"), ("'metrics'", "0.5"), ("9000", "1e3")])
def test_int_or_string_and_quantity_forms_are_accepted(port, cpu):
    assert check(PORTS.format(port=port, cpu=cpu)) == []


def test_a_port_number_written_as_a_string_is_a_port_name_to_the_api_server():
    # IntOrString keeps the JSON type: "8080" is a name, and a port name needs a letter (IsValidPortName).
    f = only(check(PORTS.format(port="'8080'", cpu="1")))
    assert (f.rule, f.path) == ("api-probe", "spec.containers[0].readinessProbe.tcpSocket.port")
    assert f.message.endswith("must contain at least one letter (a-z)")


@pytest.mark.parametrize("port,cpu,path,message", [
    ("1.5", "1", "spec.containers[0].readinessProbe.tcpSocket.port", "1.5 is not of type integer or string"),
    ("true", "1", "spec.containers[0].readinessProbe.tcpSocket.port", "true is not of type integer or string"),
    ("80", "[1]", "spec.containers[0].resources.limits.cpu", "[1] is not of type number or string"),
    ("80", "{a: 1}", "spec.containers[0].resources.limits.cpu", '{"a": 1} is not of type number or string'),
])
def test_int_or_string_and_quantity_reject_other_types(port, cpu, path, message):
    f = only(check(PORTS.format(port=port, cpu=cpu)))
    assert (f.path, f.message) == (path, message)


TRAINJOB_GPUS = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: t}}
spec:
  runtimeRef: {{name: r}}
  trainer:
    resourcesPerNode: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""


@pytest.mark.parametrize("trainer", ["2.1", "2.3"])
def test_quantity_in_generated_trainer_schemas(trainer):
    for good in ("1", "'1'", "'4Gi'"):      # a whole number or a string to the CRD's int-or-string
        assert [f for f in check(TRAINJOB_GPUS.format(gpus=good), trainer_version=trainer) if f.rule == "schema"] == []
    f = only(check(TRAINJOB_GPUS.format(gpus="[1]"), trainer_version=trainer))
    assert f.path == 'spec.trainer.resourcesPerNode.limits["nvidia.com/gpu"]'
    # A decimal number is refused by the CRD (tests/validate/test_custom_quantities.py), and the node container
    # the API server then sees takes whole GPUs only (IsIntegerResourceName).
    found = check(TRAINJOB_GPUS.format(gpus="0.5"), trainer_version=trainer)
    assert sorted(f.rule for f in found) == ["api-resources", "schema"]
    assert [f.message for f in found if f.rule == "api-resources"] == ['Invalid value: 0.5: must be an integer']


def test_open_maps_stay_open_in_generated_schemas():
    text = TRAINJOB_GPUS.format(gpus=1).replace("metadata: {name: t}",
                                               "metadata: {name: t, labels: {any.key/x: v}, annotations: {k: v}}")
    assert check(text) == []


@pytest.mark.parametrize("text,path", [
    ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t}\nspec: {trainer: {numNodes: 1}}\n",
     "spec"),
    ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec: {runPolicy: {}}\n", "spec"),
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {}}\n", "spec"),
])
def test_missing_required_fields(text, path):
    f = only(check(text))
    assert f.path == path and f.message.startswith("missing required field")


@pytest.mark.parametrize("api_version,kind,expected", [
    ("kubeflow.org/v2", "PyTorchJob", "kubeflow.org/v1"),
    ("trainer.kubeflow.org/v1", "TrainJob", "trainer.kubeflow.org/v1alpha1"),
    ("kubeflow.org/v1", "TrainJob", "trainer.kubeflow.org/v1alpha1"),
    ("apps/v1beta9", "StatefulSet", "apps/v1"),
    ("batch/v1", "Service", "v1"),
])
def test_wrong_api_version_for_a_known_kind(api_version, kind, expected):
    f = only(check(f"apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: x\n"))
    assert f.level == ERROR and f.path == "apiVersion" and (f.line, f.col) == (1, 13)
    assert f"not served for kind {kind}" in f.message and expected in f.message


UNKNOWN = "apiVersion: example.org/v1\nkind: Widget\nmetadata:\n  name: w\n"


def test_unknown_kind_is_an_error_or_with_the_flag_a_warning():
    f = only(check(UNKNOWN))
    assert (f.level, f.path, f.line) == (ERROR, "kind", 2) and "no schema for kind Widget" in f.message
    w = only(check(UNKNOWN, ignore_missing_schemas=True))
    assert w.level == WARNING and "no schema for kind Widget" in w.message


def test_missing_api_version_and_kind():
    found = check("metadata:\n  name: x\n")
    assert sorted(f.message for f in found) == ["apiVersion is missing or not a string", "kind is missing or not a string"]


def test_api_version_and_kind_of_the_wrong_type():
    found = check("apiVersion: [v1]\nkind: {a: 1}\nmetadata:\n  name: x\n")
    assert sorted((f.path, f.line, f.message) for f in found) == [
        ("apiVersion", 1, "apiVersion is missing or not a string"), ("kind", 2, "kind is missing or not a string")]


def test_kubernetes_version_selects_the_schema():
    # Container restartPolicy (sidecar containers) entered the API in Kubernetes 1.28.
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n"
            "    - {name: s, image: i, restartPolicy: Always}\n  containers: [{name: c, image: i}]\n")
    assert check(text, kubernetes_version="1.35") == []
    f = only(check(text, kubernetes_version="1.27"))
    assert f.path == "spec.initContainers[0].restartPolicy" and f.message.startswith("unknown field")


def test_pytorchjob_pod_template_follows_the_kubernetes_version():
    text = ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec:\n  pytorchReplicaSpecs:\n"
            "    Worker:\n      template:\n        spec:\n          initContainers:\n"
            "            - {name: s, image: i, restartPolicy: Always}\n          containers: [{name: c, image: i}]\n")
    assert check(text, kubernetes_version="1.35") == []
    assert only(check(text, kubernetes_version="1.27")).path.endswith("initContainers[0].restartPolicy")


def test_argocd_application_is_strict():
    text = ("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  project: default\n"
            "  destination: {server: https://kubernetes.default.svc}\n  source: {repoURL: r, targetRevison: main}\n")
    f = only(check(text))
    assert f.path == "spec.source.targetRevison" and "did you mean 'targetRevision'" in f.message


def test_kustomization_files_are_not_cluster_objects():
    assert check("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n") == []


def test_bad_versions_are_usage_errors():
    from kdt.errors import UsageError
    with pytest.raises(UsageError, match="available: 1.25"):
        check(UNKNOWN, kubernetes_version="1.12")
    with pytest.raises(UsageError, match="2.1, 2.3"):
        check(UNKNOWN, trainer_version="2.2")

"""A decimal number where a custom resource's CRD has a Quantity (`cpu: 0.5`): refused, as the API server refuses it.

controller-gen writes every resource.Quantity of an operator's CRD as `x-kubernetes-int-or-string: true`, which
apiextensions-apiserver v0.36.3 pkg/apiserver/validation/validation.go ConvertJSONSchemaPropsWithPostProcess makes
the types [integer, string]; kube-openapi's type validator (pkg/validation/validate/type.go) lets a JSON number
through them only when it is a whole one. A Pod's Quantity reads the same number (k8s.io/apimachinery v0.36.3
pkg/api/resource/quantity.go UnmarshalJSON). A mutating webhook that gives the whole object back re-encoded
(controller-runtime's CustomDefaulter) turns the number into a string first: JobSet's always, Trainer 2.3's
TrainJob webhook when it stamps a runtimePatch's time. Each case below was measured on Kubernetes v1.36.3 with
the Training Operator v1.9.4, Trainer v2.3.0 and JobSet v0.12.0 (kdt.live, dry-run creates).
"""
from __future__ import annotations

import pytest

from kdt import schemas
from kdt.documents import load_stream
from kdt.schemas.crds import RunCrds
from kdt.validate import validate_documents


def check(text: str, **kw):
    docs, problems = load_stream(text, "t.yaml")
    assert not problems, problems
    return validate_documents(docs, **kw)


def schema_errors(text: str, **kw):
    return [(f.path, f.message) for f in check(text, **kw) if f.rule == "schema"]


XGBOOST = """\
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {{name: iris, namespace: default}}
spec:
  xgbReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: xgboost
              image: example.org/xgb:1
              resources:
                requests:
                  cpu: {cpu}
                  memory: 256Mi
"""
CPU = "spec.xgbReplicaSpecs.Master.template.spec.containers[0].resources.requests.cpu"


@pytest.mark.parametrize("release", ["1.8", "1.9"])
def test_a_decimal_cpu_in_a_training_operator_job_is_refused_with_the_api_servers_words(release):
    found = check(XGBOOST.format(cpu="0.5"), training_operator=release)
    assert [(f.rule, f.path, f.line) for f in found] == [("schema", CPU, 16)]
    message = found[0].message
    assert message.startswith("0.5 is not of type integer or string: a Quantity of a custom resource is its CRD's "
                              "x-kubernetes-int-or-string")
    assert 'quote it: "0.5"' in message
    assert message.endswith(f'(the API server: Invalid value: "number": {CPU} in body must be of type '
                            'integer,string: "number")')


def test_an_int_or_string_port_of_a_custom_resource_says_so_without_the_quantitys_advice():
    text = XGBOOST.format(cpu="1").replace("              resources:", "              readinessProbe: "
                                                                     "{tcpSocket: {port: 1.5}}\n              resources:")
    found = schema_errors(text)
    port = "spec.xgbReplicaSpecs.Master.template.spec.containers[0].readinessProbe.tcpSocket.port"
    assert found == [(port, "1.5 is not of type integer or string: its CRD declares it x-kubernetes-int-or-string, a "
                            f'whole number or a string (the API server: Invalid value: "number": {port} in body must '
                            'be of type integer,string: "number")')]


@pytest.mark.parametrize("cpu", ["'0.5'", "500m", "2", "2.0", "1e3"])
def test_a_string_or_a_whole_number_is_accepted(cpu):
    # YAML's 2.0 reaches the API server as the JSON number 2, a whole one (kube-openapi isFloatInt)
    assert check(XGBOOST.format(cpu=cpu)) == []


def test_a_pods_quantity_takes_the_same_number():
    pod = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - name: c
      image: example.org/x:1
      resources: {requests: {cpu: 0.5}, limits: {cpu: 0.5}}
"""
    assert check(pod, kubernetes_version="1.36") == []


TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: t, namespace: default}}
spec:
  runtimeRef: {{name: torch-distributed}}
  trainer:
    resourcesPerNode:
      requests: {{cpu: 1.5}}
{patches}"""


@pytest.mark.parametrize("trainer", ["2.1", "2.3"])
def test_a_trainjob_without_a_webhook_patch_is_refused(trainer):
    assert [p for p, _ in schema_errors(TRAINJOB.format(patches=""), trainer_version=trainer)] == [
        "spec.trainer.resourcesPerNode.requests.cpu"]


def test_a_trainjob_whose_runtime_patch_the_webhook_stamps_comes_back_as_a_string():
    # Trainer v2.3.0 TrainJobDefaulter.Default sets the time of a runtimePatch without one: the webhook then
    # patches the whole re-encoded TrainJob, its Quantity a string.
    stamped = "  runtimePatches:\n    - manager: example.com/tool\n"
    assert schema_errors(TRAINJOB.format(patches=stamped), trainer_version="2.3") == []
    timed = "  runtimePatches:\n    - manager: example.com/tool\n      time: '2025-01-01T00:00:00Z'\n"
    assert [p for p, _ in schema_errors(TRAINJOB.format(patches=timed), trainer_version="2.3")] == [
        "spec.trainer.resourcesPerNode.requests.cpu"]


RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: {kind}
metadata: {{name: rt, namespace: default}}
spec:
  {ml}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: example.org/t:1
                      resources: {{requests: {{memory: 0.5}}}}
"""
MEMORY = "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests.memory"


JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: default}
spec:
  replicatedJobs:
    - name: node
      template:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: node
                  image: example.org/t:1
                  resources: {requests: {memory: 0.5}}
"""


@pytest.mark.parametrize("trainer", ["2.1", "2.3"])
def test_a_runtime_is_refused_and_a_jobset_is_not(trainer):
    # No webhook defaults a runtime; JobSet's defaulting webhook re-encodes the JobSets it admits.
    for kind in ("ClusterTrainingRuntime", "TrainingRuntime"):
        found = schema_errors(RUNTIME.format(kind=kind, ml="mlPolicy: {numNodes: 1}"), trainer_version=trainer)
        assert [p for p, _ in found] == ["spec.template." + MEMORY]
    assert schema_errors(JOBSET, trainer_version=trainer) == []


def test_a_crd_of_the_run_says_it_once():
    # controller-gen writes both `x-kubernetes-int-or-string` and `anyOf: [integer, string]`: one finding
    crd = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: quotas.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Quota, plural: quotas, singular: quota, listKind: QuotaList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                amount:
                  anyOf: [{type: integer}, {type: string}]
                  x-kubernetes-int-or-string: true
---
apiVersion: example.com/v1
kind: Quota
metadata: {name: q}
spec: {amount: 0.25}
"""
    docs, problems = load_stream(crd, "t.yaml")
    assert not problems
    found = [f for f in validate_documents(docs, found=RunCrds(docs)) if f.rule == "schema"]
    assert [(f.path, f.message.split(":")[0]) for f in found] == [("spec.amount", "0.25 is not of type integer or string")]


def test_quantities_as_text_rewrites_only_where_the_schema_has_a_quantity():
    ks = schemas.registry("1.36", "2.3").get("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert ks.custom
    data = {"spec": {"replicatedJobs": [{"replicas": 2, "template": {"spec": {"parallelism": 1, "template": {"spec": {
        "containers": [{"name": "c", "resources": {"limits": {"cpu": 0.5, "memory": 2}}}]}}}}}]}}
    out = ks.quantities_as_text(data)
    rj = out["spec"]["replicatedJobs"][0]
    assert rj["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "0.5",
                                                                                                  "memory": "2"}
    assert rj["replicas"] == 2 and rj["template"]["spec"]["parallelism"] == 1
    assert data["spec"]["replicatedJobs"][0]["replicas"] == 2                  # a copy: the input is untouched
    assert ks.quantities_as_text({"spec": {}}) == {"spec": {}}
    assert not schemas.registry("1.36", "2.3").get("v1", "Pod").custom

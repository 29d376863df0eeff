"""The fields an API server or webhook refusal names (kdt.live.verdicts), read from real refusals.

Every message below is kubectl's stderr as the live judge read it: kubectl v1.37.1 against this project's
control plane (`kdt cluster up`: Kubernetes v1.36.3, Trainer v2.3.0 with JobSet v0.12.0, the Training
Operator v1.9.4, Kueue v0.19.2's CRDs), the documents written here unless a public file is named.
"""
from __future__ import annotations

import pytest

from kdt.documents import load_stream
from kdt.findings import Finding
from kdt.live import verdicts as V
from kdt.live.admission import Admission, server_message

# `kubectl apply --server-side --dry-run=server` of kubernetes-sigs/jobset v0.12.0
# config/samples/batch_v1alpha2_jobset.yaml (a JobSet whose `spec:` is empty: null), bench/live_repos.py
JOBSET_SPEC_NULL = ('The JobSet "jobset-sample" is invalid: \n'
                    '* spec: Invalid value: "null": spec in body must be of type object: "null"\n'
                    '* <nil>: Invalid value: null: some validation rules were not checked because the object was '
                    'invalid; correct the existing errors to complete validation\n')
# jobset v0.12.0 site/static/examples/failure-policy/host-maintenance-event-model.yaml, bench/live_repos.py
JOBSET_RULE_NAMES = ('The JobSet "host-maintenance-event-model" is invalid: \n'
                     '* spec.failurePolicy.rules[0].name: Required value\n'
                     '* spec.failurePolicy.rules[1].name: Required value\n'
                     '* <nil>: Invalid value: null: some validation rules were not checked because the object was '
                     'invalid; correct the existing errors to complete validation\n')
# a batch/v1 Job with completions -1, backoffLimit -2 and restartPolicy Always (three causes)
JOB_THREE_CAUSES = ('The Job "j-bad" is invalid: \n'
                    '* spec.completions: Invalid value: -1: must be greater than or equal to 0\n'
                    '* spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0\n'
                    '* spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"\n')
# a Pod with the label key a/b/c and a container named C_bad: the regexes in the message hold no field
POD_LABEL_AND_NAME = (
    'The Pod "p-bad" is invalid: \n'
    "* metadata.labels: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
    "and '/' (e.g. 'example.com/MyName')\n"
    "* spec.containers[0].name: Invalid value: \"C_bad\": a lowercase RFC 1123 label must consist of lower case "
    "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
    "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\n")
# Trainer v2.3.0's TrainJob webhook: a runtime the cluster does not have (xiilab/astrago-trainer
# runtimes/pytorch/trainjob.yaml judged without its folder's runtime, bench/live_repos.py); the field is
# the Go name (pkg/runtime/core/clustertrainingruntime.go field.NewPath("spec", "RuntimeRef"))
TRAINJOB_RUNTIME = ('Error from server (Forbidden): admission webhook "validator.trainjob.trainer.kubeflow.org" denied '
                    'the request: spec.RuntimeRef: Invalid value: {"name":"pytorch-runtime","apiGroup":'
                    '"trainer.kubeflow.org","kind":"ClusterTrainingRuntime"}: ClusterTrainingRuntime.trainer.kubeflow.org '
                    '"pytorch-runtime" not found: specified clusterTrainingRuntime must be created before the TrainJob '
                    'is created\n')
TRAINJOB_RESERVED_ENV = ('Error from server (Forbidden): admission webhook "validator.trainjob.trainer.kubeflow.org" '
                         'denied the request: spec.trainer.env: Invalid value: [{"name":"PET_NNODES","value":"3"}]: must '
                         'not have reserved envs, invalid envs configured: [PET_NNODES]\n')
# the Training Operator v1.9.4's PyTorchJob webhook: two Master replicas; a map key as `[Master]`
PYTORCHJOB_MASTER = ('Error from server (Forbidden): admission webhook "validator.pytorchjob.training-operator.kubeflow.org" '
                     'denied the request: spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1\n')
# JobSet v0.12.0's webhook: replicated job names that do not exist, reported on no field
JOBSET_WEBHOOK_NO_FIELD = ('The JobSet "js-multi" is invalid: \n'
                           "* <nil>: Internal error: invalid replicatedJob name 'nope' does not appear in "
                           ".spec.ReplicatedJobs\n"
                           "* <nil>: Internal error: invalid replicatedJob name 'nope2' in failure policy does not "
                           "appear in .spec.ReplicatedJobs\n")
# Kueue v0.19.2's ClusterQueue CEL rule on a resourceGroups item
CLUSTERQUEUE_CEL = ('The ClusterQueue "cq-cel" is invalid: spec.resourceGroups[0]: Invalid value: flavors must have the '
                    'same number of resources as the coveredResources\n')
# server-side apply's typed patch (structured-merge-diff) refuses before validation
SSA_DUPLICATE_KEY = ('Error from server: failed to create typed patch object (default/js; jobset.x-k8s.io/v1alpha2, '
                     'Kind=JobSet): .spec.replicatedJobs: duplicate entries for key [name="w"]\n')
SSA_UNKNOWN_FIELD = ('Error from server: failed to create typed patch object (default/cm-unknown; /v1, Kind=ConfigMap): '
                     '.foo: field not declared in schema\n')
SSA_WRONG_TYPE = ('Error from server: failed to create typed patch object (default/p; /v1, Kind=Pod): .spec.containers: '
                  'expected list, got &{oops}\n')
# `kubectl create --dry-run=server` (generateName documents) of the same: strict decoding, Go's unmarshalling
CREATE_UNKNOWN_FIELD = ('Error from server (BadRequest): error when creating "STDIN": ConfigMap in version "v1" cannot be '
                        'handled as a ConfigMap: strict decoding error: unknown field "foo"\n')
CREATE_WRONG_TYPE = ('Error from server (BadRequest): error when creating "STDIN": Pod in version "v1" cannot be handled '
                     'as a Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type '
                     '[]v1.Container\n')
# a quantity that does not parse: the conversion fails before any field is named
SSA_QUANTITY = ("Error from server: failed to convert new object (default/j-bad; batch/v1, Kind=Job) to proper version: "
                "unable to convert unstructured object to batch/v1, Kind=Job: quantities must match the regular "
                "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'\n")


@pytest.mark.parametrize("stderr, fields", [
    (JOBSET_SPEC_NULL, ["spec"]),
    (JOBSET_RULE_NAMES, ["spec.failurePolicy.rules[0].name", "spec.failurePolicy.rules[1].name"]),
    (JOB_THREE_CAUSES, ["spec.completions", "spec.backoffLimit", "spec.template.spec.restartPolicy"]),
    (POD_LABEL_AND_NAME, ["metadata.labels", "spec.containers[0].name"]),
    (TRAINJOB_RUNTIME, ["spec.RuntimeRef"]),
    (TRAINJOB_RESERVED_ENV, ["spec.trainer.env"]),
    (PYTORCHJOB_MASTER, ["spec.pytorchReplicaSpecs[Master].replicas"]),
    (JOBSET_WEBHOOK_NO_FIELD, []),
    (CLUSTERQUEUE_CEL, ["spec.resourceGroups[0]"]),
    (SSA_DUPLICATE_KEY, ["spec.replicatedJobs"]),
    (SSA_UNKNOWN_FIELD, ["foo"]),
    (SSA_WRONG_TYPE, ["spec.containers"]),
    (CREATE_UNKNOWN_FIELD, ["foo"]),
    (CREATE_WRONG_TYPE, ["spec.containers"]),
    (SSA_QUANTITY, []),
])
def test_the_fields_a_refusal_names(stderr, fields):
    # as the judge keeps it: one line, kubectl's framing off
    message = server_message(stderr)
    assert "\n" not in message and "STDIN" not in message
    assert V.server_fields(message) == fields


def test_warnings_are_not_the_refusal():
    msg = server_message('Warning: spec.containers[0].ports[1]: duplicate port definition with ID 8080/TCP\n'
                         + CLUSTERQUEUE_CEL)
    assert not msg.startswith("Warning") and V.server_fields(msg) == ["spec.resourceGroups[0]"]


@pytest.mark.parametrize("ours, server, verdict", [
    (["spec.failurePolicy.rules[0].name"], ["spec.failurePolicy.rules[0].name", "spec.failurePolicy.rules[1].name"],
     V.SAME),
    # the Go field name Trainer's webhook writes is the JSON field kdt names
    (["spec.runtimeRef"], ["spec.RuntimeRef"], V.SAME),
    # a map key written as kdt writes it (`.Master`) and as the Training Operator's webhook does (`[Master]`)
    (["spec.pytorchReplicaSpecs.Master.replicas"], ["spec.pytorchReplicaSpecs[Master].replicas"], V.SAME),
    (['spec.template.spec.nodeSelector["nvidia.com/gpu"]'], ["spec.template.spec.nodeSelector[nvidia.com/gpu]"], V.SAME),
    # a CEL rule on the list item, kdt on a field of it
    (["spec.resourceGroups[0].flavors[0].resources"], ["spec.resourceGroups[0]"], V.NESTED),
    (["spec.replicatedJobs[1].name"], ["spec.replicatedJobs"], V.NESTED),
    (["spec.replicatedJobs[0].replicas"], ["spec.replicatedJobs[1].replicas"], V.DIFFERENT),
    (["spec.suspend"], ["spec.successPolicy"], V.DIFFERENT),
    (["spec"], [], V.NO_SERVER_FIELD),
    ([], ["spec"], V.NO_KDT_FIELD),
])
def test_field_verdicts(ours, server, verdict):
    assert V.compare_fields(ours, server) == verdict


def test_an_admission_compares_fields_only_where_both_refuse():
    text = "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: batch/v1\n    kind: Job\n    metadata: {name: j}\n"
    docs, _ = load_stream(text, "list.yaml")
    doc = docs[0]
    assert doc.prefix == ("items", 0)
    f = Finding(level="error", rule="api-job", message="must be greater than or equal to 0", file="list.yaml", doc=0,
                path="items[0].spec.completions")
    refused = server_message(JOB_THREE_CAUSES)
    # kdt's path is the List item's; the server's is the object's
    both = Admission(doc, refused, [f])
    assert both.our_fields == ["spec.completions"] and both.field == V.SAME
    assert Admission(doc, None, [f]).field is None            # kdt alone refuses: a disagreement, no field verdict
    assert Admission(doc, refused, []).field is None
    other = Finding(level="error", rule="api-job", message="x", file="list.yaml", doc=0, path="items[0].spec.parallelism")
    assert Admission(doc, refused, [other]).field == V.DIFFERENT
    assert Admission(doc, server_message(JOBSET_WEBHOOK_NO_FIELD), [other]).field == V.NO_SERVER_FIELD


def test_kdts_verdict_on_each_item_of_a_list_and_at_the_control_planes_kubernetes_release():
    from kdt.live import releases as R
    # Kueue v0.19.2 config/components/map: admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, served from
    # Kubernetes 1.36 (the control plane's release), not in 1.35 (kdt's default schemas)
    map_ = ("{apiVersion: admissionregistration.k8s.io/v1, kind: MutatingAdmissionPolicy, metadata: {name: m}, "
            "spec: {matchConstraints: {resourceRules: [{apiGroups: [batch], apiVersions: [v1], operations: [CREATE], "
            "resources: [jobs]}]}, failurePolicy: Fail, reinvocationPolicy: Never, mutations: [{patchType: "
            "ApplyConfiguration, applyConfiguration: {expression: 'Object{}'}}]}}")
    bad = "{apiVersion: v1, kind: ConfigMap, metadata: {name: Bad_Name}}"
    text = f"apiVersion: v1\nkind: List\nitems:\n  - {bad}\n  - {map_}\n"
    docs, _ = load_stream(text, "list.yaml")
    assert int(R.KUBERNETES.split(".")[1]) >= 36
    got = V.ours(docs, "2.3", "1.9")
    assert list(got) == [("list.yaml", 0, ("items", 0))]          # the bad name is the first item's alone
    assert any(f.path == "items[0].metadata.name" for f in got[("list.yaml", 0, ("items", 0))])
    at_135 = V.ours(docs, "2.3", "1.9", kubernetes_version="1.35")
    assert ("list.yaml", 0, ("items", 1)) in at_135             # what 1.35's schemas say of it


def test_the_rules_whose_basis_disagrees_with_the_server_are_listed():
    """#55: a rule whose basis is "rejected" on a document the server accepts is listed with its count; a
    refusal both make, a skipped document, and an acceptance both make list nothing."""
    from types import SimpleNamespace as N

    from kdt.live.verdicts import basis_disagreements
    f = lambda rule: N(rule=rule)      # noqa: E731
    admissions = [N(skipped=None, refused=None, ours=[f("a"), f("a")]), N(skipped=None, refused=None, ours=[f("b")]),
                  N(skipped=None, refused="no", ours=[f("c")]), N(skipped="not served", refused=None, ours=[f("d")]),
                  N(skipped=None, refused=None, ours=[f("a")]), N(skipped=None, refused=None, ours=[])]
    assert basis_disagreements(admissions) == {"a": 2, "b": 1}


def test_runtime_trainer_job_counts_only_the_webhooks_refusals_as_the_servers():
    """#55: a runtime whose trainer job is not named `node` is silent breakage (the server accepts it): an error of
    basis "breaks", not a kdt refusal; replicas other than 1 is the runtime webhook's refusal (basis rejected)."""
    from kdt.documents import load_stream
    from kdt.live.verdicts import ours
    rt = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: r\n"
          "  labels: {trainer.kubeflow.org/framework: torch}\nspec:\n  mlPolicy: {numNodes: 1, torch: {}}\n"
          "  template:\n    spec:\n      replicatedJobs:\n        - name: %s\n          replicas: %d\n"
          "          template:\n            metadata:\n              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n"
          "            spec:\n              template:\n                spec:\n                  containers: [{name: node, image: x:1}]\n")
    docs, _ = load_stream(rt % ("trainer", 1), "rt.yaml")
    assert ours(docs, "2.1", "1.9") == {}
    docs, _ = load_stream(rt % ("node", 2), "rt.yaml")
    (found,) = ours(docs, "2.1", "1.9").values()
    assert [(f.rule, f.extra.get("basis")) for f in found] == [("runtime-trainer-job", "rejected")]

"""`x-kubernetes-list-type: map` and `set` are enforced in custom resources, after their defaults (#43).

The API server runs apiextensions-apiserver v0.36.3 pkg/apiserver/schema/listtype/validation.go
ValidateListSetsAndMaps on every custom resource (pkg/registry/customresource/strategy.go Validate), on the
object as decoded, i.e. after the CRD's defaults: two items of a `set` that are equal, or two items of a `map`
whose key fields are equal (a key field left out counts as its default), are `Duplicate value: ...`, located at
the second occurrence (a third is not reported again).

The cases restate kubernetes-sigs/kubectl-validate's testcases (commit a97ccfac, main 2026-01):
testcases/crds/cel_basic.yaml (a `map_list` keyed by containerPort and protocol, both defaulted),
testcases/manifests/error_x_list_map_default.yaml, x_list_map_nonduplicate_key.yaml and
error_x_list_map_duplicate_key.yaml (the last is a Pod there: for a built-in kind the API server does not
refuse it, see tests/validate/test_apivalidation.py's duplicate-port warning).
"""
from __future__ import annotations

import pytest

from kdt.documents import load_stream
from kdt.schemas import crd_rules as R
from kdt.validate import validate_documents

# cel_basic.yaml in our words: a CRD whose list `map_list` is a list-type map keyed by containerPort and
# protocol, each with a default, beside a list-type set and a single-key map.
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: listers.example.com}
spec:
  group: example.com
  names: {kind: Lister, plural: listers}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          map_list:
            type: array
            x-kubernetes-list-type: map
            x-kubernetes-list-map-keys: [containerPort, protocol]
            items:
              type: object
              properties:
                containerPort: {type: integer, default: 8080}
                protocol: {type: string, default: TCP}
          spec:
            type: object
            properties:
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              numbers: {type: array, x-kubernetes-list-type: set, items: {type: number}}
              groups:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    members: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              named:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  properties:
                    name: {type: string, default: main}
                    size: {type: integer}
"""


@pytest.fixture
def crd(tmp_path):
    path = tmp_path / "listers.yaml"
    path.write_text(CRD)
    return str(path)


def found(text: str, crd: str | None = None, **kw) -> list[tuple[str, str]]:
    docs, problems = load_stream(text, "o.yaml")
    assert problems == []
    return [(f.path, f.message) for f in validate_documents(docs, crds=(crd,) if crd else (), **kw)]


OBJ = "apiVersion: example.com/v1\nkind: Lister\nmetadata: {name: my-basic}\n"


def test_a_key_filled_in_by_its_default_duplicates_an_item_that_names_it(crd):
    # error_x_list_map_default.yaml: the second item's protocol defaults to TCP
    got = found(OBJ + "map_list:\n- {protocol: TCP, containerPort: 88}\n- {containerPort: 88}\n", crd)
    assert got == [("map_list[1]", 'Duplicate value: {"containerPort":88,"protocol":"TCP"}')]


def test_items_that_differ_in_one_key_are_distinct(crd):
    # x_list_map_nonduplicate_key.yaml, restated on the custom resource
    assert found(OBJ + "map_list:\n- {protocol: UDP, containerPort: 88}\n- {containerPort: 88, protocol: TCP}\n", crd) == []
    # both keys defaulted in one item, named in the other: 8080/TCP twice
    assert found(OBJ + "map_list:\n- {}\n- {containerPort: 8080, protocol: TCP}\n", crd) == [
        ("map_list[1]", 'Duplicate value: {"containerPort":8080,"protocol":"TCP"}')]


def test_the_second_occurrence_is_reported_once(crd):
    # error_x_list_map_duplicate_key.yaml's three ports, on the custom resource: [2] repeats [1]
    got = found(OBJ + "map_list:\n- {protocol: UDP, containerPort: 88}\n- {containerPort: 88, protocol: TCP}\n"
                "- {protocol: TCP, containerPort: 88}\n- {protocol: TCP, containerPort: 88}\n", crd)
    assert got == [("map_list[2]", 'Duplicate value: {"containerPort":88,"protocol":"TCP"}')]


def test_sets_compare_values_as_go_does(crd):
    got = found(OBJ + "spec:\n  tags: [a, b, a, a, c, c]\n  numbers: [1, 1.0, 2, 2.5]\n", crd)
    # strings quoted; a third `a` is not reported again; `1.0` is the JSON `1` kubectl sends (sigs.k8s.io/yaml
    # marshals the float64 1 as 1), an int64 again to the API server
    assert got == [("spec.tags[2]", 'Duplicate value: "a"'), ("spec.tags[5]", 'Duplicate value: "c"'),
                   ("spec.numbers[1]", "Duplicate value: 1")]
    # Go compares a set's scalars by type and value: true is not 1, 1 is not 1.5
    assert R.duplicates({"path": [], "list": "set"}, [True, 1, 1.5, "1", 1]) == [(4, 1)]


def test_single_key_maps_nested_sets_and_a_defaulted_key(crd):
    got = found(OBJ + "spec:\n  groups:\n  - {name: x, members: [p, q, p]}\n  - {name: z}\n  - {name: x}\n"
                "  named:\n  - {size: 1}\n  - {name: main, size: 2}\n", crd)
    assert sorted(got) == [("spec.groups[0].members[2]", 'Duplicate value: "p"'),
                           ("spec.groups[2]", 'Duplicate value: {"name":"x"}'),
                           ("spec.named[1]", 'Duplicate value: {"name":"main"}')]


def test_unspecified_keys_are_equal_to_each_other():
    rule = {"path": [], "list": "map", "keys": ["name"]}
    assert R.duplicates(rule, [{"size": 1}, {"size": 2}]) == [(1, {})]
    rule2 = {"path": [], "list": "map", "keys": ["a", "b"]}
    assert R.duplicates(rule2, [{"a": 1}, {"a": 1, "c": 2}, {"a": 1, "b": None}]) == [(1, {"a": 1})]


# The committed CRD sets and the Trainer rule tables carry their CRDs' list types -----------------------------

def test_kueue_names_a_flavor_once_and_a_workload_pod_set_once():
    # kueue v0.19.2 ClusterQueue spec.resourceGroups[*].flavors: list-type map keyed by name
    cq = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n  resourceGroups:\n"
          "  - coveredResources: [cpu]\n    flavors:\n    - {name: a, resources: [{name: cpu, nominalQuota: 1}]}\n"
          "    - {name: a, resources: [{name: cpu, nominalQuota: 2}]}\n")
    assert found(cq) == [("spec.resourceGroups[0].flavors[1]", 'Duplicate value: {"name":"a"}')]
    # Workload spec.podSets: keyed by name, which defaults to "main": two unnamed pod sets collide
    wl = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w, namespace: team}\nspec:\n"
          "  podSets:\n  - {count: 1, template: {spec: {containers: [{name: c, image: i}]}}}\n"
          "  - {count: 2, template: {spec: {containers: [{name: c, image: i}]}}}\n")
    assert found(wl) == [("spec.podSets[1]", 'Duplicate value: {"name":"main"}')]


@pytest.mark.parametrize("release", ["2.1", "2.3"])
def test_a_trainjob_env_name_twice_is_refused(release):
    # trainer.kubeflow.org_trainjobs.yaml (v2.1.0, v2.3.0): spec.trainer.env is a list-type map keyed by name
    tj = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: tj}\nspec:\n"
          "  runtimeRef: {name: torch-distributed}\n  trainer:\n    env:\n    - {name: A, value: '1'}\n"
          "    - {name: B, value: '2'}\n    - {name: A, value: '3'}\n")
    assert found(tj, trainer_version=release) == [("spec.trainer.env[2]", 'Duplicate value: {"name":"A"}')]


def test_a_jobset_replicated_job_name_twice_is_refused():
    js = ("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nspec:\n  replicatedJobs:\n"
          + "".join(f"  - name: w\n    template: {{spec: {{template: {{spec: {{containers: [{{name: c, image: x}}]}}}}}}}}\n"
                    for _ in range(2)))
    assert ("spec.replicatedJobs[1]", 'Duplicate value: {"name":"w"}') in found(js)

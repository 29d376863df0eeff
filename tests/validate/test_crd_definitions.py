"""A CustomResourceDefinition is validated as the API server validates it on create (#43).

References: k8s.io/apiextensions-apiserver v0.36.3 pkg/apis/apiextensions/validation/validation.go and the
structural schema rules of pkg/apiserver/schema/validation.go and complete.go (kdt.apivalidation.crd cites
each function). kubernetes-sigs/kubectl-validate (commit a97ccfac) testcases/manifests/error_crd_typo.yaml
is restated first, with the API server's message it records; the other cases are written here.

Every official CRD of the committed sets (kdt.schemas.crd_sets) and every CRD of the shared corpus passes:
the check has no false error on real CRDs (the sweep the report quotes also ran kubectl-validate's
testcases/crds, the CRDs of the Go module cache: JobSet, Trainer, the Training Operator, Kueue, Kubernetes'
addons and e2e manifests, cert-manager).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kdt.documents import Document, load_stream
from kdt.schemas import crd_sets
from kdt.validate import validate_documents

ROOT = Path(__file__).resolve().parents[2]
CORPUS = next((p / "shared" / "corpus" for p in ROOT.parents if (p / "shared" / "corpus").is_dir()),
              ROOT.parent / "shared" / "corpus")

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  names: {kind: Gizmo, plural: gizmos}
  scope: Namespaced
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
              size: {type: integer}
"""


def crd_findings(text: str) -> list[tuple[int, str, str]]:
    docs, problems = load_stream(text, "crd.yaml")
    assert problems == []
    return [(f.line, f.path, f.message) for f in validate_documents(docs) if f.rule == "api-crd"]


def all_findings(text: str) -> list[tuple[str, str, str]]:
    docs, problems = load_stream(text, "crd.yaml")
    assert problems == []
    return [(f.rule, f.path, f.message) for f in validate_documents(docs)]


def test_a_valid_crd_passes():
    assert all_findings(CRD) == []


def test_kubectl_validates_crd_typo_case():
    # error_crd_typo.yaml: `type: strign`; the API server's cause is
    # spec.validation.openAPIV3Schema.properties[spec].properties[message].type: Unsupported value: "strign": ...
    # (the internal version holds a schema all versions share once, as spec.validation; this names the file's place)
    text = CRD.replace("size: {type: integer}", "message:\n                type: strign\n                description: a message")
    assert crd_findings(text) == [
        (21, "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.message.type",
         'Unsupported value: "strign": supported values: "array", "boolean", "integer", "number", "object", "string"')]


def test_the_name_is_plural_dot_group():
    text = CRD.replace("name: gizmos.example.com", "name: gizmo.example.com")
    assert crd_findings(text) == [
        (4, "metadata.name", 'Invalid value: "gizmo.example.com": must be spec.names.plural+"."+spec.group')]


@pytest.mark.parametrize("storage,extra,message", [
    ("false", "", "Invalid value: ...: must have exactly one version marked as storage version"),
    ("true", "  - name: v2\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object}}\n",
     "Invalid value: ...: must have exactly one version marked as storage version"),
    ("true", "  - name: v1\n    served: false\n    storage: false\n    schema: {openAPIV3Schema: {type: object}}\n",
     "Invalid value: ...: must contain unique version names"),
])
def test_exactly_one_storage_version_and_unique_names(storage, extra, message):
    text = CRD.replace("storage: true", f"storage: {storage}") + extra
    assert crd_findings(text) == [(10, "spec.versions", message)]


def test_version_names_scope_group_and_names():
    text = (CRD.replace("- name: v1", "- name: V1").replace("scope: Namespaced", "scope: Global")
            .replace("group: example.com", "group: example").replace("name: gizmos.example.com", "name: gizmos.example")
            .replace("names: {kind: Gizmo, plural: gizmos}", "names: {kind: Gizmo, plural: gizmos, listKind: Gizmo, "
                     "shortNames: [G]}"))
    got = {(p, m.split(":")[0] + ":" + m.split(":")[1]) for _, p, m in crd_findings(text)}
    assert got == {
        ("spec.versions[0].name", 'Invalid value: "V1"'),
        ("spec.scope", 'Unsupported value: "Global"'),
        ("spec.group", 'Invalid value: "example"'),
        ("spec.names.listKind", 'Invalid value: "Gizmo"'),
        ("spec.names.shortNames[0]", 'Invalid value: "G"'),
    }
    messages = {p: m for _, p, m in crd_findings(text)}
    assert messages["spec.group"].endswith("should be a domain with at least one dot")
    assert messages["spec.names.listKind"].endswith("kind and listKind may not be the same")


@pytest.mark.parametrize("prop,path,message", [
    # validateStructuralInvariants
    ("size: {description: no type}", "properties.spec.properties.size.type",
     "Required value: must not be empty for specified object fields"),
    ("size: {type: array}", "properties.spec.properties.size.items", "Required value: must be specified"),
    ("size: {type: array, items: {description: x}}", "properties.spec.properties.size.items.type",
     "Required value: must not be empty for specified array items"),
    # validateNestedValueValidation: value validations carry no structure
    ("size: {type: integer, anyOf: [{type: integer}, {minimum: 1}]}", "properties.spec.properties.size.anyOf[0].type",
     "Forbidden: must be empty to be structural"),
    ("size: {type: object, properties: {a: {type: string}}, allOf: [{properties: {a: {description: d}}}]}",
     "properties.spec.properties.size.allOf[0].properties.a.description", "Forbidden: must be empty to be structural"),
    # ValidateCustomResourceDefinitionOpenAPISchema
    ("size: {type: object, properties: {a: {type: string}}, additionalProperties: {type: string}}",
     "properties.spec.properties.size.additionalProperties",
     "Forbidden: additionalProperties and properties are mutual exclusive"),
    ("size: {type: array, items: {type: string}, uniqueItems: true}", "properties.spec.properties.size.uniqueItems",
     "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
    ("size: {$ref: '#/definitions/x'}", "properties.spec.properties.size[\"$ref\"]", "Forbidden: $ref is not supported"),
    ("size: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, "
     "properties: {name: {type: string}}}}", "properties.spec.properties.size.items.properties.name.default",
     "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
    ("size: {type: array, x-kubernetes-list-type: bag, items: {type: string}}",
     "properties.spec.properties.size.x-kubernetes-list-type",
     'Unsupported value: "bag": supported values: "atomic", "set", "map"'),
    ("size: {type: string, x-kubernetes-list-type: set}", "properties.spec.properties.size.type",
     'Invalid value: "string": must be array if x-kubernetes-list-type is specified'),
    ("size: {type: integer, x-kubernetes-validations: [{rule: ''}]}",
     "properties.spec.properties.size.x-kubernetes-validations[0].rule", "Required value: rule is not specified"),
])
def test_a_schema_that_is_not_structural_or_not_allowed(prop, path, message):
    text = CRD.replace("size: {type: integer}", prop)
    got = [(p, m) for _, p, m in crd_findings(text)]
    assert (f"spec.versions[0].schema.openAPIV3Schema.{path}", message) in got, got


def test_the_root_of_the_schema():
    text = CRD.replace("        type: object\n        properties:\n          spec:",
                       "        type: object\n        additionalProperties: {type: string}\n        properties:\n"
                       "          metadata: {type: object, properties: {labels: {type: object}}}\n          spec:")
    got = [(p.split("openAPIV3Schema")[1], m) for _, p, m in crd_findings(text)]
    assert (".additionalProperties", "Forbidden: must not be used at the root") in got
    assert (".properties.metadata", "Forbidden: must not specify anything other than name and generateName, but "
                                    "metadata is implicitly specified") in got
    # the completeness of the structure (complete.go): what an allOf names must be a property
    text = CRD.replace("        type: object\n        properties:\n          spec:",
                       "        type: object\n        allOf: [{properties: {other: {}}}]\n        properties:\n          spec:")
    assert [(p.split("openAPIV3Schema")[1], m) for _, p, m in crd_findings(text)] == [
        (".properties.other", "Required value: because it is defined in openAPIV3Schema.allOf[0].properties[other]")]


def test_a_protected_group_needs_its_approval_annotation():
    text = CRD.replace("example.com", "widgets.k8s.io")
    assert [(p, m.split(",")[0]) for _, p, m in crd_findings(text)] == [
        ('metadata.annotations["api-approved.kubernetes.io"]',
         'Required value: protected groups must have approval annotation "api-approved.kubernetes.io"')]
    ok = text.replace("  name: gizmos.widgets.k8s.io", "  name: gizmos.widgets.k8s.io\n  annotations: "
                      "{api-approved.kubernetes.io: 'https://github.com/kubernetes/enhancements/pull/1111'}")
    assert crd_findings(ok) == []


def test_preserve_unknown_fields_true_is_refused_in_v1():
    text = CRD.replace("  scope: Namespaced", "  scope: Namespaced\n  preserveUnknownFields: true")
    assert [(p, m) for _, p, m in crd_findings(text)] == [
        ("spec.preserveUnknownFields", "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields "
                                       "to true in spec.versions[*].schema instead")]


def test_go_only_regular_expressions_are_no_error():
    # Kueue v0.19.2 admissionchecks: `^(?i)[a-z]...`: RE2 reads flags anywhere, Python only at the start
    text = CRD.replace("size: {type: integer}", "size: {type: string, pattern: '^(?i)[a-z]+$'}\n"
                       "              other: {type: string, pattern: '^\\pL+\\z'}")
    assert crd_findings(text) == []
    bad = CRD.replace("size: {type: integer}", "size: {type: string, pattern: '^[a-z+$'}")
    assert [p for _, p, _ in crd_findings(bad)] == ["spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size.pattern"]


def _unslim(node):
    """A committed set's CRD as its release wrote it, as far as the checks read it: an embedded PodTemplateSpec
    (replaced by a reference in the set) is a preserved object again."""
    if isinstance(node, dict):
        if "x-kdt-kubernetes" in node:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {k: _unslim(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_unslim(v) for v in node]
    return node


@pytest.mark.parametrize("name", sorted(crd_sets.SETS))
def test_every_committed_crd_set_passes(name):
    payload = json.loads(crd_sets.output_path(name).read_text())
    docs = [Document(_unslim(crd), i, f"crds-{name}.json") for i, crd in enumerate(payload["crds"])]
    assert len(docs) >= 2
    assert [(f.file, f.doc, f.path, f.message) for f in validate_documents(docs) if f.rule == "api-crd"] == []


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not beside the repository ({CORPUS})")
def test_every_crd_of_the_corpus_passes():
    files = sorted(p for p in CORPUS.rglob("*.yaml") if "kind: CustomResourceDefinition" in p.read_text())
    crds = 0
    for path in files:
        docs, problems = load_stream(path.read_text(), str(path))
        crds += sum(1 for d in docs if isinstance(d.data, dict) and d.data.get("kind") == "CustomResourceDefinition")
        assert [(f.path, f.message) for f in validate_documents(docs) if f.rule == "api-crd"] == [], path
    assert crds >= 20

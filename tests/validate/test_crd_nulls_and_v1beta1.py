"""`--crd` reads custom resources as the API server does: nulls pruned, v1beta1 CRDs as their era read them (#34)."""
from __future__ import annotations

import pytest

from kdt.documents import load_stream
from kdt.validate import validate_documents

CRD_V1 = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
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
              required: [size]
              properties:
                size: {type: integer, default: 1}
                color: {type: string}
                note: {type: string, nullable: true}
                parts: {type: array, items: {type: object, properties: {name: {type: string}}}}
"""

CRD_V1BETA1 = """\
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  version: v1alpha1
  %s
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            replicas: {type: integer, minimum: 1}
            mode: {type: string}
"""


@pytest.fixture
def crd(tmp_path):
    def write(text: str) -> str:
        path = tmp_path / f"crd-{len(list(tmp_path.iterdir()))}.yaml"
        path.write_text(text)
        return str(path)
    return write


def found(text: str, crds: tuple) -> list:
    docs, problems = load_stream(text, "o.yaml")
    assert not problems
    return [(f.path, f.message.split(" (")[0]) for f in validate_documents(docs, crds=crds)]


SSA = "server-side apply"


def create_path(text: str, crds: tuple) -> list:
    """The findings of `kubectl create` / client-side apply: those that name no way of applying."""
    docs, problems = load_stream(text, "o.yaml")
    assert not problems
    return [(f.path, f.message.split(" (")[0]) for f in validate_documents(docs, crds=crds)
            if SSA not in f.extra.get("refused_by", ())]


def server_side(text: str, crds: tuple) -> list:
    """(path, the type wanted) of each null kdt says server-side apply keeps and the API server refuses."""
    docs, problems = load_stream(text, "o.yaml")
    assert not problems
    out = []
    for f in validate_documents(docs, crds=crds):
        if SSA in f.extra.get("refused_by", ()):
            assert f.level == "error" and f.message.startswith("null is not of type ")
            assert f'"{f.path} in body must be of type ' in f.message     # the API server's words
            out.append((f.path, f.message.split()[5].rstrip(":")))
    return out


def test_a_null_the_schema_does_not_allow_is_pruned_before_validating(crd):
    crds = (crd(CRD_V1),)
    obj = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {%s}\n"
    # color: pruned; size: required, its null replaced by its default; note: nullable, kept
    assert create_path(obj % "size: null, color: null, note: null", crds) == []
    # a null inside a list item is pruned too; a wrong type next to it is still an error
    assert create_path(obj % "size: 2, parts: [{name: null}], color: 5", crds) == [("spec.color", "5 is not of type string")]
    # pruning is no excuse for a missing required field without a default
    no_default = CRD_V1.replace("size: {type: integer, default: 1}", "size: {type: integer}")
    assert create_path(obj % "size: null", (crd(no_default),)) == [("spec", "missing required field 'size'")]


def test_server_side_apply_keeps_the_nulls_the_create_path_prunes(crd):
    """apiextensions-apiserver v0.36.3: the request body of a create is decoded by unstructuredSchemaCoercer, which
    prunes non-nullable nulls without a default (prunenulls.go); server-side apply (apiserver patch.go
    applyPatcher) merges the body as it is, so those nulls are validated and refused. A default still replaces
    its null (algorithm.go Default), a nullable field keeps it, a null list item is refused both ways."""
    crds = (crd(CRD_V1),)
    obj = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {%s}\n"
    assert server_side(obj % "size: null, color: null, note: null", crds) == [("spec.color", "string")]
    assert server_side(obj % "size: 2, parts: [{name: null}]", crds) == [("spec.parts[0].name", "string")]
    assert server_side(obj % "size: 2, parts: null", crds) == [("spec.parts", "array")]
    assert server_side(obj % "size: 2, note: null", crds) == []                 # nullable
    assert server_side(obj % "size: null", crds) == []                          # its default takes its place
    # the whole spec null: pruned when created, refused when applied server-side
    whole = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: null\n"
    assert create_path(whole, (crd(CRD_V1.replace("required: [size]", "required: []")),)) == []
    assert server_side(whole, crds) == [("spec", "object")]
    # a null list item is refused by both ways: one error, the create path's
    items = obj % "size: 2, parts: [null]"
    assert server_side(items, crds) == [] and create_path(items, crds) == [("spec.parts[0]", "null is not of type object")]
    # metadata is ObjectMeta on both ways: its nulls are no value
    assert server_side("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, labels: null}\nspec: {size: 1}\n",
                       crds) == []


def test_server_side_nulls_are_located_and_need_every_crd_of_the_kind_to_refuse_them(crd):
    obj = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  size: 1\n  color: null\n"
    docs, _ = load_stream(obj, "o.yaml")
    (f,) = validate_documents(docs, crds=(crd(CRD_V1),))
    assert (f.line, f.col, f.path, f.rule) == (6, 10, "spec.color", "schema")
    # a second CRD of the kind whose color is nullable: a document one of them accepts is valid
    lenient = CRD_V1.replace("color: {type: string}", "color: {type: string, nullable: true}")
    assert validate_documents(docs, crds=(crd(CRD_V1), crd(lenient))) == []
    # a v1beta1 CRD that keeps unknown fields prunes no null either way: both paths read the same
    beta = (crd(CRD_V1BETA1 % ""),)
    text = "apiVersion: example.com/v1alpha1\nkind: Gadget\nmetadata: {name: g}\nspec: {mode: null}\n"
    assert server_side(text, beta) == [] and create_path(text, beta) == [("spec.mode", "null is not of type string")]


def test_a_v1beta1_crd_gives_its_kind_a_schema_as_its_era_read_it(crd):
    obj = "apiVersion: example.com/v1alpha1\nkind: Gadget\nmetadata: {name: g}\nspec: {%s}\n"
    crds = (crd(CRD_V1BETA1 % ""),)
    assert found(obj % "replicas: 2", crds) == []
    assert found(obj % "replicas: 0", crds) == [("spec.replicas", "0 is less than the minimum of 1")]
    # preserveUnknownFields defaults to true in v1beta1: an unknown field is kept, no error
    assert found(obj % "replicas: 2, extra: kept", crds) == []
    # ... unless the CRD says false: then the API server prunes, and strict validation names the field
    strict = (crd(CRD_V1BETA1 % "preserveUnknownFields: false"),)
    assert found(obj % "replicas: 2, extra: kept", strict) == [("spec.extra", "unknown field 'extra'")]
    assert create_path(obj % "replicas: 2, mode: null", strict) == []
    assert server_side(obj % "replicas: 2, mode: null", strict) == [("spec.mode", "string")]


def test_a_v1beta1_crd_with_per_version_schemas_and_one_without(crd):
    text = CRD_V1BETA1.replace("  version: v1alpha1\n", "  versions:\n    - {name: v1alpha1, served: true, storage: true}\n"
                                                         "    - {name: v1alpha0, served: false, storage: false}\n")
    text = text.replace("  validation:\n", "  unused:\n")        # no CRD-wide schema: the version has none either
    crds = (crd(text % ""),)
    assert found("apiVersion: example.com/v1alpha1\nkind: Gadget\nmetadata: {name: g}\nspec: {anything: 1}\n",
                 crds) == []
    gone = found("apiVersion: example.com/v1alpha0\nkind: Gadget\nmetadata: {name: g}\n", crds)
    assert len(gone) == 1 and gone[0][0] == "apiVersion"      # not served: apiVersion error

"""Argo CD ApplicationSet, field by field (src/kdt/schemas/argocd.json): generators, template, strategy."""
from __future__ import annotations

import pytest

from kdt.documents import load_stream
from kdt.findings import ERROR
from kdt.validate import validate_documents


def check(text: str, **kw):
    docs, findings = load_stream(text, "t.yaml")
    assert not findings, findings
    return validate_documents(docs, **kw)


def summary(findings):
    return sorted((f.path, f.message) for f in findings)


@pytest.mark.parametrize("kw", [{}, {"trainer_version": "2.1"}, {"kubernetes_version": "1.25"}])
def test_valid_applicationsets_have_no_findings(fixture_docs, kw):
    docs = fixture_docs("argocd-applicationset-valid.yaml")
    assert [d.data["kind"] for d in docs] == ["ApplicationSet", "ApplicationSet"]
    assert validate_documents(docs, **kw) == []


def test_existing_argocd_fixture_still_validates(fixture_docs):
    assert validate_documents(fixture_docs("argocd-valid.yaml")) == []


def test_each_mistake_is_reported_at_its_path(fixture_docs):
    found = validate_documents(fixture_docs("argocd-applicationset-invalid.yaml"))
    got = sorted((f.line, f.col, f.path, f.message) for f in found)
    gen = "spec.generators"
    assert got == [
        (10, 7, f"{gen}[0].gti", "unknown field 'gti' (did you mean 'git'?)"),
        # A misspelt required key is also a missing one.
        (19, 13, f"{gen}[1].git.directories[0]", "missing required field 'path'"),
        (19, 13, f"{gen}[1].git.directories[0].pth", "unknown field 'pth' (did you mean 'path'?)"),
        (20, 30, f"{gen}[1].git.requeueAfterSeconds", '"x" is not of type integer'),
        (29, 15, f"{gen}[2].matrix.generators[1].list.element", "unknown field 'element' (did you mean 'elements'?)"),
        (43, 7, "spec.template.spec.syncPolcy", "unknown field 'syncPolcy' (did you mean 'syncPolicy'?)"),
        (54, 22, "spec.strategy.rollingSync.steps[0].maxUpdate", "true is not of type integer or string"),
    ]
    for f in found:
        assert (f.level, f.rule, f.file, f.doc, f.kind, f.name) == (
            ERROR, "schema", "argocd-applicationset-invalid.yaml", 0, "ApplicationSet", "trainer-overlays")


HEAD = """\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s}
spec:
  template:
    metadata: {name: "{{.name}}"}
    spec: {project: default, destination: {server: "{{.server}}"}}
  generators:
"""


def test_matrix_and_merge_nest_two_levels_and_no_deeper():
    two = HEAD + """\
    - matrix:
        generators:
          - merge:
              mergeKeys: [server]
              generators:
                - clusters: {}
                - list: {elements: [{server: a}]}
          - matrix:
              generators:
                - clusters: {}
                - git: {repoURL: r, revision: main, directories: [{path: "*"}]}
"""
    assert check(two) == []
    three = HEAD + """\
    - matrix:
        generators:
          - matrix:
              generators:
                - matrix: {generators: []}
                - clusters: {}
"""
    assert summary(check(three)) == [
        ("spec.generators[0].matrix.generators[0].matrix.generators[0].matrix", "unknown field 'matrix'")]


def test_nested_combination_generators_are_checked_too():
    text = HEAD + """\
    - matrix:
        generators:
          - merge:
              generators:
                - list: {elements: []}
                - clusters: {selectr: {}}
          - list: {elements: []}
"""
    base = "spec.generators[0].matrix.generators[0].merge"
    assert summary(check(text)) == [
        (base, "missing required field 'mergeKeys'"),
        (f"{base}.generators[1].clusters.selectr", "unknown field 'selectr' (did you mean 'selector'?)"),
    ]


def test_selectors_are_kubernetes_label_selectors():
    text = HEAD + """\
    - clusters:
        selector:
          matchLabel: {gpu: "true"}
      selector:
        matchExpressions: [{key: env, operator: In, values: [prod]}]
"""
    assert summary(check(text)) == [
        ("spec.generators[0].clusters.selector.matchLabel", "unknown field 'matchLabel' (did you mean 'matchLabels'?)")]


def test_placeholders_stay_in_strings_and_template_patch():
    ok = HEAD + """\
    - list: {elements: [{name: a, server: s, limit: "3"}]}
""" + """\
  goTemplate: true
  templatePatch: |
    spec:
      revisionHistoryLimit: {{ .limit }}
"""
    assert check(ok) == []
    bad = HEAD.replace('spec: {project: default,', 'spec: {project: default, revisionHistoryLimit: "{{.limit}}",') + """\
    - list: {elements: [{name: a, server: s, limit: "3"}]}
"""
    assert summary(check(bad)) == [("spec.template.spec.revisionHistoryLimit", '"{{.limit}}" is not of type integer')]


def test_applicationset_has_no_operation_field():
    text = HEAD + "    - list: {elements: []}\noperation: {sync: {}}\n"
    [(path, message)] = summary(check(text))
    assert path == "operation" and message.startswith("unknown field 'operation'")

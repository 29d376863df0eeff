"""The loader: data from yaml-rs, positions from libyaml on demand, problems as findings."""
from kdt.documents import load_stream
from kdt.kubeyaml import APPLY

STREAM = """\
# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: first
data:
  a: "1"
---
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: second
spec:
  template:
    spec:
      containers:
        - name: c
          image: x:1
"""


def test_documents_indexes_and_lines():
    docs, findings = load_stream(STREAM, "s.yaml")
    assert findings == []
    assert [(d.index, d.kind, d.name) for d in docs] == [(0, "ConfigMap", "first"), (2, "Deployment", "second")]
    assert docs[0].line == 3 and docs[1].line == 11
    assert docs[1].locate(["spec", "template", "spec", "containers", 0, "image"]) == (20, 18, True)
    # an absent path points at its deepest existing ancestor
    assert docs[1].locate(["spec", "template", "spec", "containers", 0, "resources"]) == (19, 11, False)
    f = docs[1].finding("x", "msg", ["spec", "template", "spec", "containers", 0, "image"])
    assert (f.file, f.doc, f.line, f.col, f.path, f.kind, f.name) == (
        "s.yaml", 2, 20, 18, "spec.template.spec.containers[0].image", "Deployment", "second")


def test_duplicate_keys_syntax_errors_and_non_mappings_are_findings():
    text = "a: 1\nb: 2\na: 3\n---\n- kind: Pod\n- kind: Pod\n---\nkind: Ok\nmetadata: {name: m}\n---\nc: [1, 2\n"
    docs, findings = load_stream(text, "bad.yaml")
    assert [d.kind for d in docs] == ["", "Ok"]  # the duplicate-key document is still read
    assert docs[0].data == {"a": 3, "b": 2}
    by_doc = {f.doc: f for f in findings}
    assert by_doc[0].line == 3 and by_doc[0].col == 1 and "duplicate key 'a'" in by_doc[0].message
    assert by_doc[1].line == 5 and "list of objects" in by_doc[1].message
    assert by_doc[3].rule == "yaml" and "syntax error" in by_doc[3].message and by_doc[3].line >= 11
    assert len(findings) == 3


def test_scalars_are_what_kubectl_apply_reads_and_the_kustomize_reading_is_kept():
    # go.yaml.in/yaml/v2 (kubectl apply -f): `yes` a boolean, 010 octal, a date a time.Time written
    # RFC 3339 by encoding/json; kyaml (kubectl kustomize) reads `yes` as a string.
    docs, findings = load_stream("v: yes\nd: 2024-01-01\nq: '010'\nm: 010\nf: 1e3\n", "s.yaml")
    assert docs[0].data == {"v": True, "d": "2024-01-01T00:00:00Z", "q": "010", "m": 8, "f": 1000}
    assert docs[0].kustomize == {"v": "yes", "d": "2024-01-01T00:00:00Z", "q": "010", "m": 8, "f": 1000}
    (w,) = findings
    assert (w.level, w.line, w.col, w.path) == ("warning", 1, 4, "v") and "YAML 1.1 boolean" in w.message
    # Rendered output is read as kubectl apply reads it only: no second reading, no warning.
    docs, findings = load_stream("v: yes\n", "r.yaml", paths=(APPLY,))
    assert docs[0].data == {"v": True} and docs[0].kustomize is None and findings == []


def test_a_list_that_holds_no_object_is_no_kubernetes_document():
    # a pre-commit hook list, a playbook: not judged (a list of objects is, above)
    docs, findings = load_stream("- id: hook\n  entry: x\n---\n- 1\n- 2\n", "hooks.yaml")
    assert docs == [] and findings == []

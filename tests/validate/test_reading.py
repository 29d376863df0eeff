"""Reading what kubectl reads (#13): odd keys, Lists, empty input, unreadable files; never a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import xmlschema

from kdt.documents import key_string, load_stream
from kdt.kubeyaml import APPLY

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"
JUNIT_XSD = Path(__file__).resolve().parents[1] / "fixtures" / "junit-10.xsd"


def test_keys_kubectl_reads_as_strings():
    # sigs.k8s.io/yaml turns int, bool and float keys into strings (float: Go's 'g' format, float32).
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  5: x\n  true: p\n  1.5: z\n  -3: w\n"
    docs, findings = load_stream(text, "k.yaml", paths=(APPLY,))
    assert findings == []
    assert docs[0].data["data"] == {"5": "x", "true": "p", "1.5": "z", "-3": "w"}
    assert [key_string(v) for v in (False, 10, 1e6, 0.1, 123456.0)] == ["false", "10", "1e+06", "0.1", "123456"]
    # kustomize refuses a key that is not a string: in a file, each is an error naming it, located at the key.
    docs, findings = load_stream(text, "k.yaml")
    assert [(f.line, f.col, f.extra["refused_by"]) for f in findings] == [(n, 3, ["kubectl kustomize"]) for n in (5, 6, 7, 8)]
    assert docs[0].data["data"] == {"5": "x", "true": "p", "1.5": "z", "-3": "w"}


def test_template_and_null_keys_are_located_errors_not_crashes():
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  ok: v\n  {{ .Values.x }}: y\n---\n" + CM.format(name="c")
    docs, findings = load_stream(text, "t.yaml")
    assert [d.name for d in docs] == ["c"]
    (f,) = findings
    assert (f.rule, f.line, f.col, f.path, f.doc) == ("yaml", 7, 3, "data", 0)
    assert "template expression" in f.message
    _, nulls = load_stream("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}\ndata:\n  ~: y\n", "n.yaml")
    assert len(nulls) == 1 and "null" in nulls[0].message and nulls[0].line == 5


def test_one_bad_file_never_hides_the_others(validate_cli, tmp_path):
    (tmp_path / "a-template.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  {{ .x }}: y\n")
    (tmp_path / "b-latin1.yaml").write_bytes(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: caf\xe9}\n")
    (tmp_path / "c-invalid.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: 1}\n")
    (tmp_path / "d-control.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata: {k: \"\x00\"}\n")
    (tmp_path / "e-ok.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e}\ndata:\n  k: v\n")
    code, out, err = validate_cli(tmp_path, tmp_path / "missing.yaml")
    assert "Traceback" not in err and err == ""
    assert code == 2          # an unreadable input: exit 2, after every file's result
    assert "a-template.yaml:4:3: error [yaml]" in out
    assert "b-latin1.yaml:4:14: error [yaml]: not UTF-8 text (byte 0xE9 at line 4, column 14)" in out
    assert "c-invalid.yaml:4:11: error [schema] ConfigMap/c data.k: 1 is not of type string" in out
    assert "d-control.yaml:4:12: error [yaml]: control character U+0000 (NUL)" in out
    assert "missing.yaml: error [input]: no such file or folder" in out
    assert "e-ok" not in out
    assert out.strip().endswith("validate: 5 error(s), 0 warning(s) in 3 document(s)")


def test_utf8_bom_is_read(validate_cli, tmp_path):
    f = tmp_path / "bom.yaml"
    f.write_bytes(b"\xef\xbb\xbf" + CM.format(name="bom").encode())
    assert validate_cli(f)[0] == 0


def test_list_items_are_validated_and_located_inside_the_list(validate_cli, tmp_path):
    f = tmp_path / "list.yaml"
    f.write_text("apiVersion: v1\nkind: List\nitems:\n"
                 "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: ok}\n"
                 "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: bad}\n  data: {k: 1}\n"
                 "- apiVersion: v1\n  kind: ConfigMapList\n  items:\n  - apiVersion: v1\n    kind: ConfigMap\n"
                 "    metadata: {name: nested}\n    dta: {}\n")
    code, out, _ = validate_cli(f, "-o", "json")
    assert code == 1
    report = json.loads(out)
    got = sorted((x["line"], x["col"], x["path"], x["name"]) for x in report["findings"])
    assert got == [(10, 13, "items[1].data.k", "bad"), (17, 5, "items[2].items[0].dta", "nested")]
    assert report["summary"]["documents"] == 3


def test_empty_standard_input_and_a_named_file_with_no_object_are_named(validate_cli, lint_cli, preview_cli, tmp_path):
    # kubectl apply -f (k8s.io/kubectl v0.36.3 pkg/cmd/apply/apply.go RunApply; the pinned kubectl says the same):
    # "error: no objects passed to apply" when nothing given holds an object: an empty file, one of comments only,
    # one of `---` lines only. Beside a file with objects it skips such a file silently. kdt names each such
    # file in one located line: an `input` error (exit 2) when the run has no object, else a warning (exit 0).
    # (kubeconform passes a blank file with 0 resources, tests/reader/test_kubeconform_acceptance.py.)
    for cli in (validate_cli, lint_cli):
        code, out, err = cli("-", stdin="")
        assert code == 2 and "error [input]: the input holds no Kubernetes object" in out and "Traceback" not in err
    (tmp_path / "comments.yaml").write_text("# only a comment\n# and another\n")
    (tmp_path / "blank.yaml").write_text("")
    (tmp_path / "markers.yaml").write_text("---\n# nothing here\n---\n")
    (tmp_path / "cm.yaml").write_text(CM.format(name="ok"))
    alone = ('error [input]: no Kubernetes object in this file (it is empty or holds only comments): kubectl apply '
             'says "no objects passed to apply"')
    beside = ("warning [input]: no Kubernetes object in this file (it is empty or holds only comments): kubectl apply "
              "-f skips it and applies the other files")
    names = ("comments.yaml", "blank.yaml", "markers.yaml")
    for cli in (validate_cli, lint_cli, preview_cli):
        code, out, err = cli(*(tmp_path / n for n in names))
        assert code == 2 and "Traceback" not in err, (cli, out)
        assert [line for line in out.splitlines() if "[input]" in line] == \
            [f"{tmp_path / n}:1:1: {alone}" for n in sorted(names)], out
        code, out, _ = cli(tmp_path / "comments.yaml", tmp_path / "cm.yaml")
        assert code == 0, out
        assert [line for line in out.splitlines() if "[input]" in line] == [f"{tmp_path / 'comments.yaml'}:1:1: {beside}"]


def test_a_folder_walk_says_nothing_of_a_file_with_no_object(validate_cli, lint_cli, preview_cli, tmp_path):
    # `kubectl apply -f DIR` skips such a file without a word; a folder of manifests may well hold commented-out
    # examples, so a walk stays quiet (and a folder with no object at all is "0 document(s)", not an error: a
    # walk is also how a repository or a pre-commit change set is checked, where "nothing to check" is an answer).
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "commented.yaml").write_text("# apiVersion: v1\n# kind: ConfigMap\n")
    (tmp_path / "d" / "cm.yaml").write_text(CM.format(name="ok"))
    for cli in (validate_cli, lint_cli, preview_cli):
        code, out, _ = cli(tmp_path / "d")
        assert code == 0 and "[input]" not in out and "0 error(s), 0 warning(s)" in out, out
    (tmp_path / "d" / "cm.yaml").unlink()
    for cli in (validate_cli, lint_cli):
        code, out, _ = cli(tmp_path / "d")
        assert code == 0 and "[input]" not in out, out


def test_junit_output_is_valid_against_the_common_junit_xsd(validate_cli, tmp_path):
    f = tmp_path / "mixed.yaml"
    f.write_text(CM.format(name="ok") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {k: 1}\n"
                 "---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: i}, data: {k: 2}}\n")
    code, out, _ = validate_cli(f, "-o", "junit")
    assert code == 1
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(out)
    assert 'file="' not in out
    # the failing List item is one test case, the one its document has (not a second one)
    assert out.count('name="ConfigMap/i (doc 2 items[0])"') == 1


def test_a_tool_config_in_a_folder_is_skipped_and_counted_named_it_is_an_error(validate_cli, tmp_path):
    (tmp_path / ".pre-commit-config.yaml").write_text("repos:\n  - repo: local\n    hooks: []\n")
    (tmp_path / "compose.yaml").write_text("services:\n  web: {image: nginx}\n")
    (tmp_path / "hooks.yaml").write_text("- id: hook\n  entry: x\n")
    (tmp_path / "cm.yaml").write_text(CM.format(name="x"))
    code, out, _ = validate_cli(tmp_path)
    assert code == 0 and out.strip() == ("validate: 0 error(s), 0 warning(s) in 1 document(s); "
                                         "3 file(s) skipped: no Kubernetes object in them")
    # Named explicitly, a document without a kind is what kubectl refuses (kubeconform: "missing 'kind' key").
    code, out, _ = validate_cli(tmp_path / "compose.yaml", tmp_path / "hooks.yaml", tmp_path / "cm.yaml")
    assert code == 1 and "compose.yaml:1:1: error [yaml]: missing 'kind' key" in out
    assert "hooks.yaml:1:1: error [yaml]: the document is a list, not an object" in out
    # Half an identity, named or in a folder, is an error.
    (tmp_path / "half.yaml").write_text("kind: ConfigMap\nmetadata:\n  name: x\n")
    for args in ((tmp_path / "half.yaml",), (tmp_path,)):
        code, out, _ = validate_cli(*args)
        assert code == 1 and "half.yaml:1:1: error" in out and "apiVersion" in out

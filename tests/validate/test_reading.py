"""Reading what kubectl reads (#13): odd keys, Lists, empty input, unreadable files; never a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import xmlschema

from kdt.documents import key_string, load_stream

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"
JUNIT_XSD = Path(__file__).resolve().parents[1] / "fixtures" / "junit-10.xsd"


def test_keys_kubectl_reads_as_strings():
    # sigs.k8s.io/yaml turns int, bool and float keys into strings (float: Go's 'g' format, float32).
    docs, findings = load_stream("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
                                 "data:\n  5: x\n  true: y\n  1.5: z\n  -3: w\n", "k.yaml")
    assert findings == []
    assert docs[0].data["data"] == {"5": "x", "true": "y", "1.5": "z", "-3": "w"}
    assert [key_string(v) for v in (False, 10, 1e6, 0.1, 123456.0)] == ["false", "10", "1e+06", "0.1", "123456"]


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
    (tmp_path / "b-binary.yaml").write_bytes(b"\xff\xfe\x00bad")
    (tmp_path / "c-invalid.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: 1}\n")
    (tmp_path / "d-intkeys.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata:\n  5: x\n")
    code, out, err = validate_cli(tmp_path)
    assert "Traceback" not in err and err == ""
    assert code == 2          # an unreadable file: exit 2, after every file's result
    assert "a-template.yaml:4:3: error [yaml]" in out
    assert "b-binary.yaml:1: error [input]: not UTF-8 text (line 1, byte 1 of the line)" in out
    assert "c-invalid.yaml:4:11: error [schema] ConfigMap/c data.k: 1 is not of type string" in out
    assert "d-intkeys" not in out
    assert out.strip().endswith("validate: 3 error(s), 0 warning(s) in 3 document(s)")


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


def test_empty_input_is_an_error(validate_cli, lint_cli, tmp_path):
    for cli in (validate_cli, lint_cli):
        code, out, err = cli("-", stdin="")
        assert code == 2 and "error [input]: the input holds no Kubernetes object" in out and "Traceback" not in err
    (tmp_path / "empty.yaml").write_text("# only a comment\n")
    assert validate_cli(tmp_path / "empty.yaml")[0] == 2
    # An empty file among others found in a folder is no error (kubectl apply -f folder/ takes it).
    (tmp_path / "cm.yaml").write_text(CM.format(name="x"))
    assert validate_cli(tmp_path)[0] == 0


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


def test_a_tool_config_among_the_manifests_is_not_judged(validate_cli, tmp_path):
    (tmp_path / ".pre-commit-config.yaml").write_text("repos:\n  - repo: local\n    hooks: []\n")
    (tmp_path / "compose.yaml").write_text("services:\n  web: {image: nginx}\n")
    (tmp_path / "cm.yaml").write_text(CM.format(name="x"))
    code, out, _ = validate_cli(tmp_path / ".pre-commit-config.yaml", tmp_path / "compose.yaml", tmp_path / "cm.yaml")
    assert code == 0 and "error" not in out.replace("0 error(s)", "")
    # Something that looks like an object but lacks its identity is still an error.
    (tmp_path / "half.yaml").write_text("metadata:\n  name: x\n")
    code, out, _ = validate_cli(tmp_path / "half.yaml")
    assert code == 1 and "apiVersion is missing" in out and "kind is missing" in out

"""kdt validate end to end: exit codes, located errors, every output format parsed back."""
from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
F = "tests/validate/fixtures"


def test_valid_files_exit_0(validate_cli):
    code, out, err = validate_cli(f"{F}/pytorchjob-valid.yaml", f"{F}/kubernetes-valid.yaml", f"{F}/argocd-valid.yaml")
    assert (code, err) == (0, "")
    assert out.strip() == "validate: 0 error(s), 0 warning(s) in 5 document(s)"


def test_invalid_file_exit_1_one_grep_able_line_per_error(validate_cli):
    code, out, _ = validate_cli(f"{F}/pytorchjob-errors.yaml")
    assert code == 1
    lines = out.strip().splitlines()
    assert len(lines) == 5 and lines[-1] == "validate: 4 error(s), 0 warning(s) in 1 document(s)"
    assert lines[0] == (f"{F}/pytorchjob-errors.yaml:9:5: error [schema] PyTorchJob/ddp-errors "
                        "spec.elasticPolicy.maxReplica: unknown field 'maxReplica' (did you mean 'maxReplicas'?) (doc 0)")


def test_folder_argument_validates_every_yaml_file(validate_cli, tmp_path):
    for name in ("pytorchjob-valid.yaml", "jobset-valid.yaml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    code, out, _ = validate_cli(tmp_path)
    assert code == 0 and "in 2 document(s)" in out


def test_syntax_error_duplicate_key_and_non_mapping_are_errors_not_crashes(validate_cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"
                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  name: c\n---\n"
                   "- kind: ConfigMap\n- kind: Secret\n---\n"
                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d\ndata: {}\n")
    code, out, err = validate_cli(bad)
    assert code == 1 and "Traceback" not in err
    lines = [ln for ln in out.splitlines() if "error [yaml]" in ln]
    assert len(lines) == 3, out
    dup, lst, syn = lines
    assert dup.startswith(f"{bad}:9:3: error [yaml]") and "duplicate key 'name'" in dup and "(doc 1)" in dup
    assert lst.startswith(f"{bad}:11:1: error [yaml]") and "list of objects" in lst
    assert ":17:" in syn and "YAML syntax error" in syn and "(doc 3)" in syn


def test_stdin(validate_cli):
    code, out, _ = validate_cli("-", stdin=(FIXTURES / "trainer-misspelt.yaml").read_text())
    assert code == 1 and out.startswith("<stdin>:9:5: error [schema] TrainJob/job-typo spec.trainer.numNode")


def test_unknown_kind_exit_1_or_with_the_flag_a_warning_and_exit_0(validate_cli, tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w}\n")
    code, out, _ = validate_cli(f)
    assert code == 1 and f"{f}:2:7: error [schema] Widget/w kind: no schema for kind Widget" in out
    code, out, _ = validate_cli(f, "--ignore-missing-schemas")
    assert code == 0 and f"{f}:2:7: warning [schema]" in out and "0 error(s), 1 warning(s)" in out


@pytest.mark.parametrize("args,message", [
    (["--kubernetes-version", "1.9", f"{F}/jobset-valid.yaml"], "--kubernetes-version 1.9: no schemas for it"),
    (["--trainer-version", "2.2", f"{F}/jobset-valid.yaml"], "--trainer-version 2.2: not supported; choose one of 2.1, 2.3"),
    (["-o", "xml", f"{F}/jobset-valid.yaml"], "invalid choice: 'xml'"),
])
def test_usage_errors_exit_2_with_one_line(validate_cli, args, message):
    code, out, err = validate_cli(*args)
    assert code == 2 and out == "" and message in err and "Traceback" not in err


def test_a_missing_file_is_its_own_finding_and_the_others_are_validated(validate_cli):
    # kubeconform: "fixtures/not-here - failed validation: lstat ...: no such file or directory", the rest judged.
    code, out, err = validate_cli("no/such/file.yaml", f"{F}/pytorchjob-errors.yaml")
    assert code == 2 and err == "" and "no/such/file.yaml: error [input]: no such file or folder" in out
    assert "pytorchjob-errors.yaml:" in out and "validate: 5 error(s)" in out


def test_not_utf8_is_located_and_names_the_reader_that_refuses_it(validate_cli, tmp_path):
    f = tmp_path / "latin1.yaml"
    f.write_bytes(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: caf\xe9}\n")
    code, out, err = validate_cli(f)
    # kustomize (go-yaml) refuses the byte; kubectl apply -f reads U+FFFD in its place: an error, located, exit 1.
    assert code == 1 and err == ""
    assert f"{f}:3:21: error [yaml]: not UTF-8 text (byte 0xE9 at line 3, column 21): kubectl kustomize refuses" in out


def test_output_file_is_written_whole_or_not_at_all(validate_cli, tmp_path):
    report = tmp_path / "report.json"
    code, out, _ = validate_cli(f"{F}/pytorchjob-errors.yaml", "-o", "json", "--output", report)
    assert code == 1 and out == "" and len(json.loads(report.read_text())["findings"]) == 4
    failed = tmp_path / "never.json"
    code, _, _ = validate_cli("--kubernetes-version", "1.9", "missing.yaml", "-o", "json", "--output", failed)
    assert code == 2 and not failed.exists() and list(tmp_path.iterdir()) == [report]


def test_json_format(validate_cli):
    code, out, _ = validate_cli(f"{F}/pytorchjob-errors.yaml", f"{F}/jobset-valid.yaml", "-o", "json")
    payload = json.loads(out)
    assert code == 1 and payload["summary"]["errors"] == 4 and payload["summary"]["documents"] == 2
    first = payload["findings"][0]
    assert {k: first[k] for k in ("file", "doc", "line", "col", "path", "kind", "name", "rule", "level")} == {
        "file": f"{F}/pytorchjob-errors.yaml", "doc": 0, "line": 9, "col": 5, "path": "spec.elasticPolicy.maxReplica",
        "kind": "PyTorchJob", "name": "ddp-errors", "rule": "schema", "level": "error"}


def test_junit_format_one_suite_per_file_one_case_per_document(validate_cli):
    code, out, _ = validate_cli(f"{F}/pytorchjob-errors.yaml", f"{F}/kubernetes-valid.yaml", "-o", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    assert code == 1 and root.tag == "testsuites" and root.get("failures") == "1" and root.get("tests") == "3"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {f"{F}/pytorchjob-errors.yaml", f"{F}/kubernetes-valid.yaml"}
    cases = suites[f"{F}/kubernetes-valid.yaml"].findall("testcase")
    assert [c.get("name") for c in cases] == ["Service/ranks (doc 0)", "StatefulSet/ranks (doc 1)"]
    assert all(c.find("failure") is None for c in cases)
    (bad,) = suites[f"{F}/pytorchjob-errors.yaml"].findall("testcase")
    failures = bad.findall("failure")
    assert len(failures) == 4 and {f.get("type") for f in failures} == {"schema"}
    assert failures[0].get("message") == "spec.elasticPolicy.maxReplica: unknown field 'maxReplica' (did you mean 'maxReplicas'?)"
    assert f"{F}/pytorchjob-errors.yaml:9:5" in failures[0].text


def test_sarif_format_matches_the_official_schema(validate_cli, sarif_schema, tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w}\n")
    code, out, _ = validate_cli(f"{F}/pytorchjob-errors.yaml", f, "--ignore-missing-schemas", "-o", "sarif")
    sarif = json.loads(out)
    jsonschema.Draft4Validator(sarif_schema).validate(sarif)
    assert code == 1 and sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "schema" in rules and "yaml" in rules
    results = run["results"]
    assert [r["level"] for r in results].count("error") == 4 and [r["level"] for r in results].count("warning") == 1
    first = next(r for r in results if r["level"] == "error")
    assert rules[first["ruleIndex"]] == first["ruleId"] == "schema"
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": f"{F}/pytorchjob-errors.yaml", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 9, "startColumn": 5}


KUSTOMIZATION = """\
{marker}apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namePrefix: test-
resources:
  - trainjob.yaml
"""


def overlay(tmp_path: Path, marker: str) -> Path:
    folder = tmp_path / "overlay"
    folder.mkdir()
    (folder / "kustomization.yaml").write_text(KUSTOMIZATION.format(marker=marker))
    text = (FIXTURES / "trainer-2.1-valid.yaml").read_text().split("---\n")[1]
    (folder / "trainjob.yaml").write_text(text)
    return folder


def test_overlay_marker_selects_the_trainer_version(validate_cli, tmp_path):
    folder = overlay(tmp_path, "# kdt:trainer-version=2.1\n")
    code, out, _ = validate_cli(folder)
    assert code == 0, out
    code, out, _ = validate_cli(folder, "--trainer-version", "2.3")   # the flag wins over the marker
    assert code == 1 and "spec.podTemplateOverrides: unknown field" in out


def test_rendered_overlay_errors_name_the_overlay_and_the_source_file(validate_cli, tmp_path, sarif_schema):
    folder = overlay(tmp_path, "# kdt:trainer-version=2.3\n")
    code, out, _ = validate_cli(folder)
    assert code == 1
    lines = out.strip().splitlines()[:-1]
    assert len(lines) == 2
    for ln in lines:
        assert ln.startswith(f"{folder} (rendered):") and "TrainJob/test-job-21" in ln
        assert f"source {folder / 'trainjob.yaml'}" in ln
    code, out, _ = validate_cli(folder, "-o", "sarif")
    sarif = json.loads(out)
    jsonschema.Draft4Validator(sarif_schema).validate(sarif)
    res = {r["properties"]["jsonPath"]: r["locations"][0]["physicalLocation"] for r in sarif["runs"][0]["results"]}
    src = (folder / "trainjob.yaml").as_uri()
    # Regions are those of the source file, not of the rendered stream.
    assert res["spec.podTemplateOverrides"]["artifactLocation"]["uri"] == src
    assert res["spec.podTemplateOverrides"]["region"] == {"startLine": 17, "startColumn": 3}
    assert res["spec.trainer.numProcPerNode"]["region"] == {"startLine": 12, "startColumn": 5}


def test_render_failure_exits_2(validate_cli, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "kustomization.yaml").write_text("resources:\n  - missing.yaml\n")
    code, out, _ = validate_cli(folder)
    assert code == 2 and "error [render]" in out and "kustomize failed" in out


def test_crd_gives_other_operators_kinds_a_schema(validate_cli):
    objects, crd = f"{F}/crd-widgets-objects.yaml", f"{F}/crd-widgets.yaml"
    code, out, _ = validate_cli(objects)
    assert code == 1 and out.count("no schema for kind Widget") == 4 and "--crd" in out
    code, out, err = validate_cli("--crd", crd, objects, "-o", "json")
    assert code == 1 and err == ""
    found = json.loads(out)["findings"]
    got = sorted((f["doc"], f["path"], f["message"].split(" (")[0]) for f in found)
    assert got == [
        (1, "metadata.lables", "unknown field 'lables'"),
        (1, "spec", "missing required field 'size'"),
        (1, "spec.mode", "\"Slow\" is not one of: \"Fast\", \"Safe\""),
        (1, "spec.parts[0]", "missing required field 'name'"),
        (1, "spec.parts[0].nam", "unknown field 'nam'"),
        (1, "spec.quota", "\"lots\" does not match \"^[0-9]+(m|Gi)?$\""),
        (1, "spec.sise", "unknown field 'sise'"),
        (3, "apiVersion", "apiVersion 'example.com/v1alpha1' is not served for kind Widget; expected "
                          "example.com/v1 or example.com/v1beta1"),
    ]
    assert all(f["line"] for f in found)
    assert next(f for f in found if f["path"] == "spec.sise")["line"] == 24
    # a folder of CRDs works as well as the file; the project's own schemas still win for their kinds
    code, out, _ = validate_cli("--crd", str(FIXTURES / "crd-widgets.yaml"), f"{F}/pytorchjob-errors.yaml")
    assert code == 1 and "maxReplica" in out


def test_crd_usage_errors_are_one_line(validate_cli, tmp_path):
    code, out, err = validate_cli("--crd", str(tmp_path / "absent"), f"{F}/pytorchjob-valid.yaml")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "absent: no such file" in err
    empty = tmp_path / "x.yaml"
    empty.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    code, _, err = validate_cli("--crd", str(empty), f"{F}/pytorchjob-valid.yaml")
    assert code == 2 and "no CustomResourceDefinition" in err and "Traceback" not in err
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: apiextensions.k8s.io/v1\nkind: [\n")
    code, _, err = validate_cli("--crd", str(broken), f"{F}/pytorchjob-valid.yaml")
    assert code == 2 and "broken.yaml:" in err and "Traceback" not in err


def test_crd_whose_schema_cannot_be_compiled_is_one_line(validate_cli, tmp_path):
    crd = (FIXTURES / "crd-widgets.yaml").read_text().replace("format: int32", "format: int32\n                  pattern: '('")
    bad = tmp_path / "crd.yaml"
    bad.write_text(crd)
    code, out, err = validate_cli("--crd", str(bad), f"{F}/crd-widgets-objects.yaml")
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.strip().splitlines() == [err.strip()] and "widgets.example.com version v1" in err and "crd.yaml:" in err

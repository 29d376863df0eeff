"""kubeconform's file and standard-input semantics (#27), with the real command: `kdt validate` as users run it.

The reference for behaviour is kubeconform's acceptance.bats (yannh/kubeconform, its file and stdin tests);
the fixtures are written here. kubeconform's "fail" is a non-zero exit here: 1 for findings, 2 for an
input that cannot be read (a path that is not there, empty standard input), as kdt's exit codes say.

Differences kept on purpose (docs/validation.md says why):
- a duplicate key fails without kubeconform's -strict: the API server's strict field validation, kubectl's
  default, refuses it;
- a file named with another extension is read (kubectl reads it; kubeconform ignores it);
- in a folder, a file with no Kubernetes object in it (a CI config, a values file) is skipped and counted in
  the summary (#27); kubeconform fails it ("missing 'kind' key"); named, it fails here too;
- a blank or comments-only file named is a warning beside other files and an `input` error alone, as kubectl
  apply skips it or says "no objects passed to apply" (issue 43); kubeconform passes it silently.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

RC = "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: bob\nspec:\n  replicas: {replicas}\n" \
     "  selector: {{app: nginx}}\n  template:\n    metadata: {{name: nginx, labels: {{app: nginx}}}}\n" \
     "    spec:\n      containers:\n      - {{name: nginx, image: nginx, ports: [{{containerPort: 80}}]}}\n"
VALID = RC.format(replicas=2)
INVALID = RC.format(replicas='"asd"')
SVC = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s{i}\nspec:\n  ports: [{{port: {port}}}]\n"


def _list(items: list[str]) -> str:
    body = "".join("- " + "\n  ".join(item.rstrip("\n").split("\n")) + "\n" for item in items)
    return "apiVersion: v1\nkind: List\nitems:\n" + body if items else "apiVersion: v1\nkind: List\nitems: []\n"


def kdt(*args, stdin: str | None = None):
    """`kdt validate -o json ARGS` (tests/conftest.py puts this checkout's src first on PYTHONPATH)."""
    proc = subprocess.run([sys.executable, "-m", "kdt", "validate", "-o", "json", *map(str, args)],
                          input=stdin, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL if stdin is None else None)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else None
    return proc.returncode, report, proc.stderr


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    d = tmp_path_factory.mktemp("kubeconform")
    files = {
        "valid.yaml": VALID,
        "valid.json": json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "data": {"k": "v"}}),
        "blank.yaml": "",
        "comment.yaml": "# a comment\n",
        "multi_valid.yaml": "---\n".join(SVC.format(i=i, port=80 + i) for i in range(6)),
        "multi_invalid.yaml": "---\n".join([SVC.format(i=0, port=80), INVALID]),
        "invalid.yaml": INVALID,
        "missing_kind.yaml": "apiVersion: v1\nmetadata:\n  name: x\n",
        "missing_apiversion.yaml": "kind: ConfigMap\nmetadata:\n  name: x\n",
        "missing_kind_value.yaml": "apiVersion: v1\nkind:\nmetadata:\n  name: x\n",
        "list_valid.yaml": _list([SVC.format(i=i, port=90 + i) for i in range(6)]),
        "list_invalid.yaml": _list([VALID, INVALID]),
        "list_empty_valid.yaml": _list([]),
        "multi_with_list.yaml": SVC.format(i=7, port=7) + "---\n" + _list([SVC.format(i=8, port=8)]),
        "test_crd.yaml": "apiVersion: example.com/v1\nkind: TrainingJob\nmetadata:\n  name: t\nspec: {}\n",
        "duplicate_property.yaml": VALID.replace("  replicas: 2\n", "  replicas: 2\n  replicas: 3\n"),
        "manifest.txt": VALID,
    }
    for name, text in files.items():
        (d / name).write_text(text)
    folder = d / "folder"
    folder.mkdir()
    (folder / "a.yaml").write_text("---\n".join(SVC.format(i=i, port=100 + i) for i in range(4)))
    (folder / "b.YML").write_text("---\n".join(SVC.format(i=i + 4, port=200 + i) for i in range(3)))
    (folder / "notes.txt").write_text("not: [yaml\n")           # not a YAML or JSON name: not read
    (folder / "ci.yaml").write_text("on: [push]\njobs: {}\n")   # no Kubernetes object: skipped, counted
    return d


def test_valid_files_pass_with_their_resources_counted(fx):
    # "Pass when parsing a valid ... YAML file / JSON file / multi-document file / a file containing a List /
    # on valid, empty list / multi-yaml containing one resource, one list / a blank config file (with a comment)"
    code, report, _ = kdt(*(fx / n for n in ("valid.yaml", "valid.json", "multi_valid.yaml", "list_valid.yaml",
                                             "list_empty_valid.yaml", "multi_with_list.yaml", "blank.yaml",
                                             "comment.yaml")))
    # kubeconform passes the blank and the comments-only file without a word; kdt names each in a warning (issue 43:
    # kubectl apply skips such a file and applies the others, so the run still passes; alone it is kubectl's
    # "no objects passed to apply", tests/validate/test_reading.py).
    assert code == 0
    assert [(f["file"].rsplit("/", 1)[-1], f["level"], f["rule"], f["line"]) for f in report["findings"]] == [
        ("blank.yaml", "warning", "input", 1), ("comment.yaml", "warning", "input", 1)]
    assert report["summary"]["documents"] == 1 + 1 + 6 + 6 + 0 + 2 + 0 + 0


def test_invalid_files_fail_each_with_its_reason(fx):
    code, report, _ = kdt(*(fx / n for n in ("invalid.yaml", "multi_invalid.yaml", "list_invalid.yaml",
                                             "missing_kind.yaml", "missing_apiversion.yaml",
                                             "missing_kind_value.yaml")))
    assert code == 1
    by_file = {}
    for f in report["findings"]:
        by_file.setdefault(f["file"].rsplit("/", 1)[-1], []).append(f)
    assert [f["path"] for f in by_file["invalid.yaml"]] == ["spec.replicas"]
    assert [(f["doc"], f["path"]) for f in by_file["multi_invalid.yaml"]] == [(1, "spec.replicas")]
    assert [f["path"] for f in by_file["list_invalid.yaml"]] == ["items[1].spec.replicas"]
    for name, key in (("missing_kind.yaml", "kind"), ("missing_apiversion.yaml", "apiVersion"),
                      ("missing_kind_value.yaml", "kind")):
        assert [f"missing '{key}' key" in f["message"] for f in by_file[name]] == [True], by_file[name]
    assert report["summary"]["documents"] == 1 + 2 + 2


def test_a_folder_reads_yaml_and_json_of_any_case_and_skips_what_holds_no_object(fx):
    # "Pass when parsing a folder containing valid YAML files"
    code, report, _ = kdt(fx / "folder")
    assert code == 0 and report["findings"] == []
    assert report["summary"]["documents"] == 7 and report["summary"]["skipped_files"] == 1


def test_a_missing_path_fails_and_the_other_files_are_still_validated(fx):
    # "Return relevant error for non-existent file"
    code, report, _ = kdt(fx / "not-here", fx / "invalid.yaml")
    assert code == 2
    assert [(f["rule"], f["message"]) for f in report["findings"] if f["file"].endswith("not-here")] == \
        [("input", "no such file or folder")]
    assert any(f["path"] == "spec.replicas" for f in report["findings"])


def test_standard_input(fx):
    # "Pass when parsing a valid Kubernetes config YAML file (explicitly) on stdin"; "Fail when parsing an
    # invalid ... on stdin"; "Pass when parsing a List resource from stdin"; "Fail when parsing a List that
    # contains an invalid resource from stdin"; "Fail when not passing data to stdin"
    code, report, _ = kdt("-", stdin=VALID)
    assert code == 0 and report["findings"] == [] and report["summary"]["documents"] == 1
    code, report, _ = kdt("-", stdin=(fx / "list_valid.yaml").read_text())
    assert code == 0 and report["summary"]["documents"] == 6
    code, report, _ = kdt("-", stdin=INVALID)
    assert code == 1 and report["findings"][0]["file"] == "<stdin>"
    code, report, _ = kdt("-", stdin=(fx / "list_invalid.yaml").read_text())
    assert code == 1 and [f["path"] for f in report["findings"]] == ["items[1].spec.replicas"]
    code, report, _ = kdt("-", stdin="")
    assert code == 2 and report["findings"][0]["message"] == "the input holds no Kubernetes object"


def test_a_kind_without_schema_fails_unless_missing_schemas_are_ignored(fx):
    # "Fail when parsing a config with CRD"; "Pass ... ignoring missing schemas"
    assert kdt(fx / "test_crd.yaml")[0] == 1
    code, report, _ = kdt(fx / "test_crd.yaml", "--ignore-missing-schemas")
    assert code == 0 and [f["level"] for f in report["findings"]] == ["warning"]


def test_very_large_streams_from_a_file_and_from_standard_input(fx):
    # "Pass when parsing a very large file"; "... a very long stream from stdin" (100,000 there; 20,000 here)
    text = "---\n".join(SVC.format(i=i, port=1 + i % 60000) for i in range(20_000))
    (fx / "large.yaml").write_text(text)
    for args, stdin in (((fx / "large.yaml",), None), (("-",), text)):
        code, report, _ = kdt(*args, stdin=stdin)
        assert code == 0 and report["summary"]["documents"] == 20_000 and report["findings"] == []


def test_the_deliberate_differences(fx):
    # duplicate_property.yaml passes kubeconform without -strict; the API server (strict, kubectl's default)
    # refuses it, and so does kdt. A named file of another extension is read, as kubectl reads it.
    code, report, _ = kdt(fx / "duplicate_property.yaml", fx / "manifest.txt")
    assert code == 1 and [f["message"].split(":")[0] for f in report["findings"]] == ["duplicate key 'replicas'"]
    assert report["summary"]["documents"] == 2
    (fx / "folder-named").mkdir(exist_ok=True)
    (fx / "folder-named" / "ci.yaml").write_text("on: [push]\njobs: {}\n")
    code, report, _ = kdt(fx / "folder-named" / "ci.yaml")
    assert code == 1 and "missing 'kind' key" in report["findings"][0]["message"]

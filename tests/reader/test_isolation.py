"""One file never hides another (#36, #27): beside files kubectl refuses (a NUL, an alias bomb, 10,000 levels of
nesting, bytes that are not UTF-8) and a path that is not there, every command gives the valid file its
full result in every output format, each broken one its located error, and an exit code that tells of both.

Commands run in process (kdt.cli.main), so that the test costs no interpreter starts.
"""
from __future__ import annotations

import json
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from kdt.cli.main import main as kdt

JOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: good
spec:
  nprocPerNode: "2"
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: ghcr.io/example/trainer:latest
              command: ["torchrun", "train.py"]
              bogus: 1
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: ghcr.io/example/trainer:latest
              command: ["torchrun", "train.py"]
"""
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: "


def _laughs() -> str:
    lines = ["  a0: &a0 [" + ", ".join(["x"] * 9) + "]"]
    lines += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n  annotations:\n" + "\n".join(lines) + "\n"


BROKEN = {
    "b-nul.yaml": ((CM.format(name="nul") + '"a\x00b"\n  bad: [\n').encode(), (6, 8), "control character U+0000"),
    "c-bomb.yaml": (_laughs().encode(), (9, 32), "excessive aliasing"),
    "d-deep.yaml": ((CM.format(name="deep") + "[" * 10_000 + "]" * 10_000 + "\n").encode(), (6, 260), "nested more than"),
    "e-latin1.yaml": (CM.format(name="latin").encode() + b"caf\xe9\n", (6, 9), "not UTF-8 text"),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("isolation")
    (d / "a-good.yaml").write_text(JOB)
    for name, (data, _, _) in BROKEN.items():
        (d / name).write_bytes(data)
    return d


def _run(capsys, *args):
    start = time.perf_counter()
    code = kdt([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err, time.perf_counter() - start


def _located(text: str, folder) -> None:
    for name, (_, (line, col), message) in BROKEN.items():
        assert f"{folder / name}:{line}:{col}: error [yaml]" in text and message in text, (name, text[-3000:])
    assert f"{folder / 'missing.yaml'}: error [input]: no such file or folder" in text


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif"])
def test_validate_every_format(capsys, folder, fmt):
    code, out, err, took = _run(capsys, "validate", folder, folder / "missing.yaml", "-o", fmt)
    assert code == 2 and err == "" and took < 10
    if fmt == "text":
        _located(out, folder)
        assert f"{folder / 'a-good.yaml'}:17:15: error [schema] PyTorchJob/good " in out
        assert "unknown field 'bogus'" in out
    elif fmt == "json":
        report = json.loads(out)
        lines = "\n".join(f"{f['file']}:{f['line']}:{f['col']}: {f['level']} [{f['rule']}] {f['message']}"
                          if f["line"] else f"{f['file']}: {f['level']} [{f['rule']}]: {f['message']}"
                          for f in report["findings"])
        _located(lines, folder)
        assert any(f["file"].endswith("a-good.yaml") and "bogus" in f["message"] for f in report["findings"])
    elif fmt == "junit":
        root = ET.fromstring(out)
        failures = " ".join(f.get("message", "") + " " + (f.text or "") for f in root.iter("failure"))
        for _, (_, _, message) in BROKEN.items():
            assert message in failures
        assert "bogus" in failures and "no such file or folder" in failures
    else:
        results = json.loads(out)["runs"][0]["results"]
        texts = " ".join(r["message"]["text"] for r in results)
        for _, (_, _, message) in BROKEN.items():
            assert message in texts
        assert "bogus" in texts and "no such file or folder" in texts


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif"])
def test_lint_every_format(capsys, folder, fmt):
    code, out, err, took = _run(capsys, "lint", folder, folder / "missing.yaml", "-o", fmt)
    assert code == 2 and err == "" and took < 10
    # the good file's lint findings (a `latest` image) are there beside every broken file's error
    assert "image-tag" in out
    for _, (_, _, message) in BROKEN.items():
        assert message in out
    if fmt == "text":
        _located(out, folder)


@pytest.mark.parametrize("mode", [[], ["--summary"], ["--diff"], ["--explain"]])
def test_merge_preview_shows_the_valid_files_objects(capsys, folder, mode):
    files = [folder / n for n in ("a-good.yaml", *BROKEN)] + [folder / "missing.yaml"]
    code, out, err, took = _run(capsys, "merge-preview", *files, *mode)
    assert code == 2 and took < 10
    _located(err, folder)
    assert "good-worker-1" in out, out[:2000]


def test_render_writes_every_target_that_reads(capsys, folder):
    code, out, err, _ = _run(capsys, "render", folder / "a-good.yaml", *(folder / n for n in BROKEN), folder / "missing.yaml")
    assert code == 2 and "name: good" in out and "name: nul" not in out
    _located(err, folder)


def test_preview_and_argocd(capsys, folder):
    code, out, err, _ = _run(capsys, "preview", folder / "a-good.yaml", *(folder / n for n in BROKEN))
    assert code == 1 and "good" in out and "bogus" in out
    for _, (_, _, message) in BROKEN.items():
        assert message in out
    app = folder.parent / "app.yaml"
    app.write_text("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: app, namespace: argocd}\n"
                   "spec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n"
                   "  source: {repoURL: https://example.com/r.git, path: nowhere, targetRevision: main}\n")
    code, out, err, _ = _run(capsys, "argocd", "--no-render", app, folder / "b-nul.yaml", "-o", "json")
    report = json.loads(out)
    assert code == 1 and report["summary"]["targets"] == ["app"]
    assert any("control character" in f["message"] for f in report["findings"])


def test_run_refuses_a_hostile_file_at_once(capsys, folder):
    code, out, err, took = _run(capsys, "run", folder / "c-bomb.yaml")
    assert code == 2 and "excessive aliasing" in err and took < 5


def test_diff_gives_each_target_its_result(capsys, tmp_path):
    repo = tmp_path / "repo"
    for name in ("good", "bad"):
        (repo / "overlays" / name).mkdir(parents=True)
        (repo / "overlays" / name / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
        (repo / "overlays" / name / "cm.yaml").write_text(CM.format(name=name) + "v1\n")

    def git(*args):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "root")
    git("add", ".")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "base")
    (repo / "overlays" / "good" / "cm.yaml").write_text(CM.format(name="good") + "v2\n")
    (repo / "overlays" / "bad" / "cm.yaml").write_bytes((CM.format(name="bad") + '"a\x00b"\n').encode())
    for fmt in ("terminal", "markdown", "json"):
        code, out, err, _ = _run(capsys, "diff", "--repo", repo, "--base", "HEAD", "-o", fmt, "--color", "never")
        assert code == 2 and "overlays/good" in out and "overlays/bad" in out, (fmt, out, err)
        assert "v2" in out and "control characters" in out, (fmt, out)

"""An overlay that kubectl rejects fails the main job with kubectl's own message, never a traceback."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo_copy(tmp_path):
    """A copy of the repository's manifests and tooling, sharing the bootstrapped .venv."""
    for item in ("base", "components", "overlays", "scripts", "src", "Makefile", "pyproject.toml", "requirements.lock",
                 "requirements.txt", "requirements-tooling.lock", "requirements-tooling.txt"):
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, tmp_path / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, tmp_path / item)
    os.symlink(ROOT / ".venv", tmp_path / ".venv")
    return tmp_path


BREAKAGES = {
    "remove of a missing path": (
        "overlays/ddp/mnist.yaml", "- op: replace\n  path: /metadata/name",
        "- op: remove\n  path: /spec/noSuchField\n- op: replace\n  path: /metadata/name", "noSuchField"),
    "failing test op": (
        "overlays/elastic/elastic.yaml", "  value: pytorch", "  value: not-pytorch", "containers/0/name failed: test failed"),
    "missing patch file": (
        "overlays/ddp/kustomization.yaml", "path: mnist.yaml", "path: missing.yaml", "missing.yaml"),
}


@pytest.mark.parametrize("case", sorted(BREAKAGES))
def test_make_preview_fails_with_kubectls_message(repo_copy, case):
    rel, old, new, needle = BREAKAGES[case]
    f = repo_copy / rel
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1))
    # -o: the copy shares the bootstrapped .venv, which it must never rebuild (its editable install would point
    # the shared environment at this temporary copy)
    proc = subprocess.run(["make", "-s", "-o", ".venv/.tooling", "-o", ".venv/.full", "preview"], cwd=repo_copy,
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Traceback" not in out
    overlay = "overlays/" + rel.split("/")[1]
    line = next(l for l in out.splitlines() if "[render]" in l)
    assert line.startswith(f"{overlay}: error [render]") and "kubectl kustomize failed" in line and needle in line
    # the other overlays still render and show in the table
    assert "overlays/statefulset" in out


def test_render_exit_codes_and_one_line_errors(tmp_path):
    script = ["-m", "kdt", "render"]
    missing = subprocess.run([sys.executable, *script, str(tmp_path / "nope")], capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no such file" in missing.stderr
    ok = subprocess.run([sys.executable, *script, "--summary", "overlays/ddp"], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0
    row = next(l for l in ok.stdout.splitlines() if l.startswith("overlays/ddp"))
    assert row.split()[2:] == ["2", "1", "auto", "2"]


def test_render_output_file_is_all_or_nothing(tmp_path):
    out = tmp_path / "out.yaml"
    bad = subprocess.run([sys.executable, "-m", "kdt", "render", "--output", str(out), str(tmp_path / "nope")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and not out.exists() and list(tmp_path.iterdir()) == []
    good = subprocess.run([sys.executable, "-m", "kdt", "render", "--output", str(out), "overlays/ddp"],
                          cwd=ROOT, capture_output=True, text=True)
    assert good.returncode == 0 and "kind: PyTorchJob" in out.read_text()


def test_preview_runs_every_stage_on_the_repository():
    proc = subprocess.run([sys.executable, "-m", "kdt", "preview"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for overlay in ("ddp", "elastic", "fsdp", "fsdp-trainer-2.3", "statefulset"):
        assert f"overlays/{overlay} " in out and f"charts/trainer/ci/{overlay}.yaml" in out
    assert "overlays/ddp: 2 pods (mnist-ddp-master-0, mnist-ddp-worker-0)" in out
    assert "rendered, validated and linted: 0 error(s), 0 warning(s)" in out


def test_preview_reports_schema_lint_and_helm_lint_problems(repo_copy):
    """A misspelt field, a lint error and a chart value helm rejects, each located, in one run."""
    job = repo_copy / "base" / "pytorchjob.yaml"
    job.write_text(job.read_text().replace("cleanPodPolicy: Running", "cleanPodPolicy: Sometimes")
                   .replace("      replicas: 1                  # always", "      replicaz: 1                  # always"))
    shutil.copytree(ROOT / "charts", repo_copy / "charts", ignore=shutil.ignore_patterns("__pycache__"))
    values = repo_copy / "charts" / "trainer" / "ci" / "ddp.yaml"
    values.write_text(values.read_text() + "\nimage:\n  repository: ghcr.io/torch-k8s/trainer\n  tag: latest\n")
    proc = subprocess.run([sys.executable, "-m", "kdt", "preview"], cwd=repo_copy,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 1 and "Traceback" not in out + proc.stderr
    schema = [l for l in out.splitlines() if "[schema]" in l and "replicaz" in l]
    assert schema and schema[0].startswith("overlays/ddp (rendered):") and "source base/pytorchjob.yaml" in schema[0]
    assert any("cleanPodPolicy" in l and "error" in l for l in out.splitlines())
    assert any(l.startswith("charts/trainer/ci/ddp.yaml") and "latest" in l for l in out.splitlines())

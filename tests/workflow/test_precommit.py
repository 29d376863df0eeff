"""Our pre-commit hooks in another repository (#12): a broken manifest fails the commit with the located
error, a fixed one passes. pre-commit installs this repository (at HEAD) into its own environment."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import make_scratch_repo

ROOT = Path(__file__).resolve().parents[2]
PRE_COMMIT = str(Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "pre-commit")


def git(repo: Path, *args, check=True):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=repo,
                          capture_output=True, text=True, check=check, timeout=900)


def test_hooks_block_a_broken_manifest_and_pass_a_fixed_one(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    repo = make_scratch_repo(tmp_path)
    shutil.rmtree(repo / "deploy")              # charts need helm in the hook's environment: kept to yaml here
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {head}\n    hooks:\n      - id: kdt-validate\n      - id: kdt-lint\n")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache"), "KDT_NO_INSTALL": "1"}
    env.pop("KDT_ROOT", None)
    subprocess.run([PRE_COMMIT, "install"], cwd=repo, check=True, capture_output=True, env=env)
    job = repo / "apps" / "train" / "job.yaml"
    job.write_text(job.read_text().replace("replicas: 2", "replicas: 2\n      replica: 3"))
    git(repo, "add", "-A")
    bad = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "bad"],
                         cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    out = bad.stdout + bad.stderr
    assert bad.returncode != 0, out
    assert "kdt validate" in out and "Failed" in out
    assert ".pre-commit-config.yaml" not in out     # a config file among the manifests is not judged
    # job.yaml, a resource of apps/train's kustomization, is read as itself (#34); the kustomization.yaml of the
    # first commit is checked as the kustomization's output (the rendered object's own line numbers)
    assert ("apps/train/job.yaml:9:7: error [schema] PyTorchJob/demo spec.pytorchReplicaSpecs.Worker.replica: "
            "unknown field 'replica' (did you mean 'replicas'?) (doc 0)") in out, out[-3000:]
    assert "apps/train (rendered):8:7: error [schema] PyTorchJob/demo" in out, out[-3000:]
    job.write_text(job.read_text().replace("\n      replica: 3", ""))
    git(repo, "add", "-A")
    good = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "good"],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    assert good.returncode == 0, good.stdout + good.stderr
    assert git(repo, "log", "--oneline").stdout.count("\n") == 1

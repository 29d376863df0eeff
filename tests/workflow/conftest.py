"""Fixtures of the adoption tests: the built kdt wheel and a scratch repository laid out unlike this one."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

JOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: demo
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/train:1.0
              command: [torchrun, --nnodes=2, train.py]
"""
LOOSE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loose\ndata:\n  k: v\n"


def make_scratch_repo(where: Path) -> Path:
    """An app folder with a kustomization, a chart (this repository's, moved elsewhere), a loose YAML file."""
    repo = where / "platform-manifests"
    (repo / "apps" / "train").mkdir(parents=True)
    (repo / "apps" / "train" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [job.yaml]\n")
    (repo / "apps" / "train" / "job.yaml").write_text(JOB)
    shutil.copytree(ROOT / "charts" / "trainer", repo / "deploy" / "helm" / "trainer")
    (repo / "loose.yaml").write_text(LOOSE)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The kdt distribution, built from a copy of the repository (the build writes into its source tree)."""
    src = tmp_path_factory.mktemp("src") / "kdt"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info",
                                                              "__pycache__", ".pytest_cache", "tests", "training"))
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (whl,) = out.glob("k8s_training_check-*.whl")
    return whl

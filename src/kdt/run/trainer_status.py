"""Kubeflow Trainer's status endpoint for a local run (`kdt run` on a TrainJob of Trainer 2.2+): the samples'
progress reports land here as they would in `TrainJob.status.trainerStatus`.

The same API as Trainer's (kdt.operators.trainer_v2.status): `POST /apis/trainer.kubeflow.org/v1alpha1/
namespaces/NS/trainjobs/NAME/status` over HTTPS, a bearer token, an UpdateTrainJobStatusRequest, answered
200 with the request, or a Status of 403 (a token that is not this TrainJob's), 404 (another path or
TrainJob), 413 (over 64 KiB) or 422 (a payload that does not parse, or that the API server's validation of
`trainerStatus` refuses). The token is one per TrainJob, written to a file of the run: it stands for the
projected token whose audience names the TrainJob (a token for another TrainJob is refused, as Trainer's
authorizer refuses it). Served on a loopback address, from a thread of kdt.
"""
from __future__ import annotations

import json
import secrets
import shutil
import ssl
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from ..errors import UsageError
from ..operators.trainer_v2 import status as ST


def make_certificate(folder: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed P-256 certificate for `host` (its own CA: the file the trainer's containers trust), made
    with `openssl` for this run; (certificate, key)."""
    exe = shutil.which("openssl")
    if exe is None:
        raise UsageError("kdt run serves Trainer's status endpoint over HTTPS and needs the openssl command to make "
                         "its certificate; none is on PATH")
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "ca.crt", folder / "server.key"
    proc = subprocess.run([exe, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                           "-keyout", str(key), "-out", str(cert), "-days", "7", "-sha256",
                           "-subj", "/CN=kdt-trainer-status", "-addext", f"subjectAltName=IP:{host},DNS:localhost",
                           "-addext", "basicConstraints=critical,CA:TRUE",
                           "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
                           "-addext", "extendedKeyUsage=serverAuth"], capture_output=True, text=True)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise UsageError(f"openssl req failed: {lines[-1] if lines else proc.returncode}")
    key.chmod(0o600)
    return cert, key


@dataclass
class Job:
    namespace: str
    name: str
    token: str
    token_file: Path
    latest: dict | None = None
    updates: int = 0


@dataclass
class Endpoint:
    folder: Path
    ca_file: Path
    on_update: Callable[[Job, dict], None] = lambda job, status: None
    jobs: dict = field(default_factory=dict)           # (namespace, name) -> Job
    host: str = "127.0.0.1"
    port: int = 0
    refused: int = 0
    _server: ThreadingHTTPServer | None = None

    def add(self, namespace: str, name: str) -> Job:
        token = secrets.token_urlsafe(32)
        path = self.folder / f"{namespace}.{name}.token"
        path.write_text(token)
        path.chmod(0o600)
        job = self.jobs[(namespace, name)] = Job(namespace, name, token, path)
        return job

    def url(self, job: Job) -> str:
        return f"https://{self.host}:{self.port}{ST.status_path(job.namespace, job.name)}"

    def env(self, job: Job) -> dict[str, str]:
        """What the TrainJobStatus plugin gives the trainer's containers (here: this run's files)."""
        return {ST.ENV_URL: self.url(job), ST.ENV_CA: str(self.ca_file), ST.ENV_TOKEN: str(job.token_file)}

    def start(self, cert: Path, key: Path) -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                code, body = endpoint.handle(self.path, self.headers.get("Authorization", ""),
                                             int(self.headers.get("Content-Length") or 0), self.rfile)
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer((self.host, self.port), Handler)
        server.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        self.port = server.server_address[1]
        self._server = server
        threading.Thread(target=server.serve_forever, name="trainer-status", daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def handle(self, path: str, auth: str, length: int, body) -> tuple[int, dict]:
        where = ST.parse_path(path)
        job = self.jobs.get(where) if where else None
        if job is None:
            return _status(404, "NotFound", "Not found" if where is None else "Train job not found")
        parts = auth.split()
        if len(parts) != 2 or parts[0].lower() != "bearer" or not secrets.compare_digest(parts[1], job.token):
            self.refused += 1
            return _status(403, "Forbidden", "Forbidden")
        if length > ST.MAX_BODY:
            return _status(413, "RequestEntityTooLarge", "request body too large")
        try:
            request = json.loads(body.read(length) or b"null")
        except (ValueError, UnicodeDecodeError):
            request = None
        if not isinstance(request, dict):
            return _status(422, "Invalid", "Invalid payload")
        status = request.get("trainerStatus")
        if status is None:
            return 200, request
        why = ST.invalid(status)
        if why is not None:
            return _status(422, "Invalid", f"TrainJob.trainer.kubeflow.org \"{job.name}\" is invalid: {why}")
        job.latest, job.updates = dict(status), job.updates + 1
        self.on_update(job, job.latest)
        return 200, request


def _status(code: int, reason: str, message: str) -> tuple[int, dict]:
    """server.go badRequest: a metav1.Status."""
    return code, {"metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


def bar(status: dict, width: int = 20) -> str:
    """`[########------------] 40% ETA 1m05s loss=0.53 step=16/40`: a trainerStatus as one line."""
    pct = status.get("progressPercentage")
    metrics = {m.get("name"): m.get("value") for m in status.get("metrics") or [] if isinstance(m, dict)}
    parts = []
    if isinstance(pct, int):
        filled = round(width * pct / 100)
        parts.append(f"[{'#' * filled}{'-' * (width - filled)}] {pct:3d}%")
    eta = status.get("estimatedRemainingSeconds")
    if isinstance(eta, int):
        parts.append(f"ETA {eta // 60}m{eta % 60:02d}s" if eta >= 60 else f"ETA {eta}s")
    shown = [k for k in ("loss", "val_ppl", "accuracy", "target_tokens_per_s") if k in metrics]
    parts += [f"{k}={metrics[k]}" for k in shown]
    if "step" in metrics:
        parts.append(f"step={metrics['step']}" + (f"/{metrics['total_steps']}" if metrics.get("total_steps") else ""))
    return " ".join(parts)

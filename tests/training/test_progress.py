"""trainkit/progress.py against a real HTTPS server on loopback (a CA and serving certificate made by the
project's openssl helper, kdt.run.trainer_status.make_certificate): what Kubeflow Trainer's status server receives, the token read
again before each request, and an endpoint that is slow, refuses or is gone (one [WARN] line, training
goes on). The request's shape is Trainer v2.3.0's (pkg/statusserver/server.go, pkg/apis/trainer/v1alpha1/
trainjob_types.go TrainerStatus)."""
from __future__ import annotations

import io
import json
import re
import socket
import ssl
import subprocess
import threading
import time
from contextlib import redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from training_harness import PYTHON, TRAINING, base_env

from kdt.run.trainer_status import make_certificate
from trainkit.log import parse_line
from trainkit.progress import ProgressReporter, StepProgress, payload

pytestmark = pytest.mark.timeout(120)
PATH = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/demo/status"


class Certs:
    def __init__(self, folder):
        self.cert, self.key = make_certificate(folder)
        self.ca = self.cert                      # self-signed: its own CA


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Certs(tmp_path_factory.mktemp("pki"))


class StatusServer:
    """Records every POST (path, bearer token, body); answers as told (200, a status code, or late)."""

    def __init__(self, certs, *, code: int = 200, delay: float = 0.0):
        self.requests: list[dict] = []
        self.code, self.delay = code, delay
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body,
                                       "t": time.monotonic()})
                time.sleep(outer.delay)
                reply = json.dumps(body if outer.code == 200 else
                                   {"kind": "Status", "status": "Failure", "message": "Forbidden", "code": outer.code})
                try:
                    self.send_response(outer.code)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(reply.encode())
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(certs.cert), str(certs.key))
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}{PATH}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(certs):
    made = []

    def start(**kw):
        made.append(StatusServer(certs, **kw))
        return made[-1]
    yield start
    for s in made:
        s.close()


def _reporter(url, certs, token_file, **kw) -> ProgressReporter:
    return ProgressReporter(url, str(certs.ca), str(token_file), **kw)


def _warnings(text: str) -> list[dict]:
    return [f for tag, f in filter(None, map(parse_line, text.splitlines())) if tag == "WARN"]


def test_payload_is_trainers_request_within_its_limits():
    body = payload(140, -3.2, {"loss": 0.123456789, "ok": True, "skip": None, "x" * 70: "v" * 70,
                               **{f"m{i}": i for i in range(300)}}, now=0)
    status = body["trainerStatus"]
    assert status["progressPercentage"] == 100 and status["estimatedRemainingSeconds"] == 0
    assert status["lastUpdatedTime"] == "1970-01-01T00:00:00Z"      # RFC 3339, what metav1.Time reads
    metrics = status["metrics"]
    assert len(metrics) == 256                                       # MaxItems=256
    assert metrics[0] == {"name": "loss", "value": "0.123457"} and metrics[1] == {"name": "ok", "value": "true"}
    assert all(isinstance(m["value"], str) and 1 <= len(m["name"]) <= 64 and 1 <= len(m["value"]) <= 64
               for m in metrics)
    assert "progressPercentage" not in payload(None, None, {})["trainerStatus"]


def test_reports_reach_the_https_endpoint_with_the_token_read_again_each_time(server, certs, tmp_path):
    srv = server()
    token = tmp_path / "token"
    token.write_text("first\n")
    rep = _reporter(srv.url, certs, token, interval=0.1)
    progress = StepProgress(rep)
    progress.begin(0)
    progress.step(1, 4, {"loss": 2.5})
    deadline = time.monotonic() + 10
    while not srv.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    token.write_text("second\n")                                     # the kubelet rotated it
    progress.step(2, 4, {"loss": 2.0})
    progress.finish(4, 4, {"loss": 1.5})
    assert rep.failed == 0 and rep.sent == len(srv.requests) >= 2
    first, last = srv.requests[0], srv.requests[-1]
    assert first["path"] == PATH and first["auth"] == "Bearer first" and last["auth"] == "Bearer second"
    assert first["body"]["trainerStatus"]["progressPercentage"] == 25
    final = last["body"]["trainerStatus"]
    assert final["progressPercentage"] == 100 and final["estimatedRemainingSeconds"] == 0
    assert {"name": "loss", "value": "1.5"} in final["metrics"] and {"name": "step", "value": "4"} in final["metrics"]


def test_at_most_one_request_per_interval(server, certs, tmp_path):
    srv = server()
    (tmp_path / "token").write_text("t")
    rep = _reporter(srv.url, certs, tmp_path / "token", interval=0.5)
    t0 = time.monotonic()
    for step in range(1, 200):
        rep.update(step // 2, None, {"step": step})
        time.sleep(0.01)                                             # ~2 s of steps (more on a loaded machine)
    elapsed = time.monotonic() - t0
    rep.close()
    times = [r["t"] for r in srv.requests]
    assert 2 <= len(times) <= elapsed / 0.5 + 2
    assert all(b - a >= 0.45 for a, b in zip(times, times[1:-1]))   # the closing report may come early
    assert srv.requests[-1]["body"]["trainerStatus"]["metrics"] == [{"name": "step", "value": "199"}]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("case", ["slow", "refuses", "gone", "untrusted"])
def test_a_bad_endpoint_costs_one_warning_and_never_blocks(case, server, certs, tmp_path):
    (tmp_path / "token").write_text("t")
    if case == "gone":
        url = f"https://127.0.0.1:{_closed_port()}{PATH}"
    else:
        url = server(code=403 if case == "refuses" else 200, delay=3.0 if case == "slow" else 0.0).url
    ca = tmp_path / "other-ca.crt"
    if case == "untrusted":                                          # a CA file that did not sign the server
        ca.write_text(Certs(tmp_path / "other").ca.read_text())
    rep = ProgressReporter(url, str(ca if case == "untrusted" else certs.ca), str(tmp_path / "token"),
                           interval=0.05, timeout=1.0)
    out = io.StringIO()
    with redirect_stdout(out):
        blocked = 0.0
        for step in range(1, 40):
            t0 = time.monotonic()
            rep.update(step, 10.0, {"loss": 1.0 / step})
            blocked += time.monotonic() - t0
            time.sleep(0.02)
        rep.close(100, 0, {"loss": 0.01})
    assert blocked < 0.5                                             # update() never waited on the network (1 s a try)
    warnings = _warnings(out.getvalue())
    assert len(warnings) == 1 and rep.failed >= 2 and rep.sent == 0
    w = warnings[0]
    assert w["progress"] == "not reported" and w["action"] == "training goes on" and w["url"] == url
    expected = {"slow": r"timed out|Timeout", "refuses": r"^HTTP 403: Forbidden$", "gone": r"ConnectionRefused",
                "untrusted": r"SSLCertVerificationError|CERTIFICATE_VERIFY_FAILED"}[case]
    assert re.search(expected, w["error"]), w["error"]


def test_no_env_no_reporter_no_thread(monkeypatch):
    for name in ("KUBEFLOW_TRAINER_SERVER_URL", "KUBEFLOW_TRAINER_SERVER_CA_CERT", "KUBEFLOW_TRAINER_SERVER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    rep = ProgressReporter.from_env(rank=0)
    rep.update(1, 1, {"loss": 1})
    rep.close(100, 0, {})
    assert not rep.enabled and rep._thread is None
    assert not ProgressReporter.from_env(rank=1, environ={"KUBEFLOW_TRAINER_SERVER_URL": "https://x"}).enabled


@pytest.mark.timeout(400)        # one sample's interpreter: torch's import alone is minutes on a loaded machine
def test_a_sample_reports_its_steps_loss_and_evaluation(server, certs, tmp_path):
    """smoke.py through trainkit's loop: the reports follow its [TRAIN] steps up to 100 at [DONE]."""
    srv = server()
    (tmp_path / "token").write_text("sample-token")
    env = base_env(KUBEFLOW_TRAINER_SERVER_URL=srv.url, KUBEFLOW_TRAINER_SERVER_CA_CERT=certs.ca,
                   KUBEFLOW_TRAINER_SERVER_TOKEN=tmp_path / "token", TRAINKIT_PROGRESS_INTERVAL="0.2")
    proc = subprocess.run([PYTHON, str(TRAINING / "smoke.py"), "--samples", "256", "--batch", "16", "--epochs", "2",
                           "--log-every", "1", "--step-sleep", "0.05"], env=env, capture_output=True, text=True,
                          timeout=360)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [p for p in map(parse_line, proc.stdout.splitlines()) if p]
    assert not [f for tag, f in lines if tag == "WARN"]
    losses = {int(f["step"]): float(f["loss"]) for tag, f in lines if tag == "TRAIN"}
    reports = [{m["name"]: m["value"] for m in r["body"]["trainerStatus"]["metrics"]} | r["body"]["trainerStatus"]
               for r in srv.requests]
    assert len(reports) >= 3 and all(r["auth"] == "Bearer sample-token" for r in srv.requests)
    assert all(r["total_steps"] == "32" for r in reports)          # 256 samples / 16 per step x 2 epochs
    steps = [int(r["step"]) for r in reports]
    assert steps == sorted(steps) and steps[-1] == max(losses) == 32
    for r in reports:
        assert float(r["loss"]) == pytest.approx(losses[int(r["step"])], rel=1e-5)   # 6 significant digits
        expected = 100 if int(r["step"]) == 32 else min(99, 100 * int(r["step"]) // 32)
        assert r["progressPercentage"] == expected
    assert reports[-1]["estimatedRemainingSeconds"] == 0 and "accuracy" in reports[-1]
    assert any(0 < r.get("estimatedRemainingSeconds", 0) for r in reports[:-1])

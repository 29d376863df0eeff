"""kdt run's stand-in for Kubeflow Trainer's status endpoint (kdt/run/trainer_status.py), over real HTTPS:
what it accepts and refuses as Trainer v2.3.0's server and the API server's validation of trainerStatus do
(pkg/statusserver/server.go, pkg/apis/trainer/v1alpha1/trainjob_types.go), and trainkit's reporter
(training/trainkit/progress.py) reaching it with the env kdt gives the trainer's containers."""
from __future__ import annotations

import json
import ssl
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kdt.run import trainer_status as TS

ROOT = Path(__file__).resolve().parents[2]
STAMP = "2026-11-28T12:00:00Z"


@pytest.fixture
def endpoint(tmp_path):
    seen = []
    cert, key = TS.make_certificate(tmp_path / "ts")
    ep = TS.Endpoint(tmp_path / "ts", cert, on_update=lambda job, st: seen.append((job.name, st)))
    ep.add("default", "demo")
    ep.add("team", "other")
    ep.start(cert, key)
    ep.seen = seen
    yield ep
    ep.stop()


def post(ep, path: str, body, token: str | None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    req = urllib.request.Request(f"https://127.0.0.1:{ep.port}{path}", data=data, method="POST", headers=headers)
    ctx = ssl.create_default_context(cafile=str(ep.ca_file))
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_report_is_kept_and_answered_with_the_request(endpoint):
    job = endpoint.jobs[("default", "demo")]
    body = {"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 65,
                              "metrics": [{"name": "loss", "value": "0.53"}], "lastUpdatedTime": STAMP}}
    assert post(endpoint, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/demo/status", body,
                job.token) == (200, body)
    assert endpoint.seen == [("demo", body["trainerStatus"])] and job.latest == body["trainerStatus"]
    assert TS.bar(job.latest) == "[########------------]  40% ETA 1m05s loss=0.53"
    assert post(endpoint, endpoint.url(job).split(str(endpoint.port))[1], {}, job.token) == (200, {})   # no status: nothing


@pytest.mark.parametrize("path,token,body,code,says", [
    ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/demo/status", "other", {}, 403, "Forbidden"),
    ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/demo/status", None, {}, 403, "Forbidden"),
    ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/nope/status", "demo", {}, 404, "Train job not found"),
    ("/healthz", "demo", {}, 404, "Not found"),
    ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/demo/status", "demo", b"{not json", 422,
     "Invalid payload"),
    ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/demo/status", "demo",
     {"trainerStatus": {"progressPercentage": 101, "lastUpdatedTime": STAMP}}, 422,
     "trainerStatus.progressPercentage: Invalid value: 101"),
    ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/demo/status", "demo",
     {"trainerStatus": {"progressPercentage": 5}}, 422, "lastUpdatedTime is required when trainerStatus is present"),
    ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/demo/status", "demo",
     {"trainerStatus": {"metrics": [{"name": "loss", "value": 0.5}], "lastUpdatedTime": STAMP}}, 422,
     "trainerStatus.metrics[0].value"),
])
def test_refusals_are_trainers(endpoint, path, token, body, code, says):
    tokens = {"demo": endpoint.jobs[("default", "demo")].token, "other": endpoint.jobs[("team", "other")].token}
    got, status = post(endpoint, path, body, tokens.get(token))
    assert got == code and status["code"] == code and status["status"] == "Failure" and says in status["message"]
    assert endpoint.seen == []


def test_trainkits_reporter_reaches_it_with_the_env_kdt_gives(endpoint):
    sys.path.insert(0, str(ROOT / "training"))
    from trainkit.progress import ProgressReporter
    job = endpoint.jobs[("team", "other")]
    rep = ProgressReporter.from_env(rank=0, environ=endpoint.env(job))
    rep.update(50, 12.0, {"loss": 0.25, "step": 5, "total_steps": 10})
    rep.close(100, 0, {"loss": 0.125, "step": 10, "total_steps": 10})
    assert rep.failed == 0 and rep.sent >= 1
    assert job.latest["progressPercentage"] == 100 and TS.bar(job.latest).endswith("loss=0.125 step=10/10")

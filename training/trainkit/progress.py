"""Progress, ETA and metrics to Kubeflow Trainer's status endpoint, when the TrainJob's pod has one.

Trainer v2.2+ with its ``TrainJobStatus`` alpha gate on injects into every trainer container
(pkg/runtime/framework/plugins/trainjobstatus/trainjobstatus.go at v2.3.0, ``createEnvVars``):

- ``KUBEFLOW_TRAINER_SERVER_URL``: ``https://<webhook service>.<namespace>.svc:<port>`` +
  ``/apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status``
  (pkg/statusserver/utils.go ``StatusUrl``; port 10443 by default, pkg/apis/config/v1alpha1/defaults.go);
- ``KUBEFLOW_TRAINER_SERVER_CA_CERT``: ``/var/run/secrets/kubeflow/trainer/ca.crt``, the CA of the server's
  certificate (the webhook's);
- ``KUBEFLOW_TRAINER_SERVER_TOKEN``: ``/var/run/secrets/kubeflow/trainer/token``, a projected service-account
  token with audience ``trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status``
  (``TokenAudience``), valid one hour and rotated by the kubelet: it is read again before every request.

The request is ``POST {"trainerStatus": {"progressPercentage": 0..100, "estimatedRemainingSeconds": >= 0,
"metrics": [{"name", "value"}], "lastUpdatedTime": RFC 3339}}`` with ``Authorization: Bearer <token>``
(pkg/statusserver/server.go ``handleTrainJobRuntimeStatus``; limits from pkg/apis/trainer/v1alpha1/
trainjob_types.go ``TrainerStatus`` and ``Metric``: at most 256 metrics, name and value 1 to 64 characters,
the value a string). The server applies it to ``TrainJob.status.trainerStatus``.

One process reports (rank 0 of the job). :meth:`ProgressReporter.update` only stores the latest figures;
a daemon thread sends the latest at most every ``TRAINKIT_PROGRESS_INTERVAL`` seconds (5 by default,
what Trainer's guide asks of a client: docs/user-guides/trainjob-progress.md, "Implementation Guidance"),
each request with a timeout. An endpoint that is slow, refuses or is gone costs one ``[WARN]`` line and
the reports, never the training. Torch-free.
"""
from __future__ import annotations

import json
import os
import ssl
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

from .log import log

URL_ENV = "KUBEFLOW_TRAINER_SERVER_URL"
CA_ENV = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
TOKEN_ENV = "KUBEFLOW_TRAINER_SERVER_TOKEN"
INTERVAL_ENV = "TRAINKIT_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 5.0
TIMEOUT_S = 5.0
MAX_METRICS = 256          # TrainerStatus.metrics MaxItems
MAX_CHARS = 64             # Metric.name and Metric.value MaxLength


def _metric_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = str(value)
    return text[:MAX_CHARS]


def payload(progress: int | None, eta_s: float | None, metrics: dict, now: float | None = None) -> dict:
    """The request body Trainer's status server reads (UpdateTrainJobStatusRequest), within its limits."""
    status: dict = {}
    if progress is not None:
        status["progressPercentage"] = max(0, min(100, int(progress)))
    if eta_s is not None:
        status["estimatedRemainingSeconds"] = max(0, min(2**31 - 1, int(round(eta_s))))
    items = [{"name": str(k)[:MAX_CHARS], "value": _metric_value(v)}
             for k, v in metrics.items() if v is not None and str(k) and _metric_value(v)]
    if items:
        status["metrics"] = items[:MAX_METRICS]
    stamp = datetime.fromtimestamp(time.time() if now is None else now, tz=timezone.utc)
    status["lastUpdatedTime"] = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"trainerStatus": status}


class ProgressReporter:
    """Sends the latest progress from a background thread; disabled (every call a no-op) without the env."""

    def __init__(self, url: str | None, ca_file: str | None, token_file: str | None, *,
                 interval: float = DEFAULT_INTERVAL, timeout: float = TIMEOUT_S, rank: int = 0):
        self.url, self.ca_file, self.token_file = url, ca_file, token_file
        self.interval, self.timeout, self.rank = interval, timeout, rank
        self.enabled = bool(url) and rank == 0
        self.sent = 0               # requests the server answered 200
        self.failed = 0
        self.warned = False
        self._latest: dict | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None

    @classmethod
    def from_env(cls, rank: int = 0, environ=None) -> "ProgressReporter":
        env = os.environ if environ is None else environ
        raw = env.get(INTERVAL_ENV, "").strip()
        try:
            interval = float(raw) if raw else DEFAULT_INTERVAL
        except ValueError:
            interval = DEFAULT_INTERVAL
        return cls(env.get(URL_ENV) or None, env.get(CA_ENV) or None, env.get(TOKEN_ENV) or None,
                   interval=max(0.05, interval), rank=rank)

    # -- the training loop's side: never blocks -------------------------------------------------
    def update(self, progress: int | None, eta_s: float | None, metrics: dict) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._latest = payload(progress, eta_s, metrics)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="trainkit-progress", daemon=True)
            self._thread.start()

    def close(self, progress: int | None = None, eta_s: float | None = None, metrics: dict | None = None) -> None:
        """Send the last figures (when given) and stop; waits at most one request's timeout."""
        if not self.enabled:
            return
        if progress is not None or metrics:
            self.update(progress, eta_s, metrics or {})
        self._closing = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 1.0)

    # -- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._lock:
                body, self._latest = self._latest, None
            if body is not None:
                self._post(body)
            if self._closing:
                with self._lock:
                    if self._latest is None:
                        return
                continue
            self._wake.wait(self.interval)
            self._wake.clear()

    def _post(self, body: dict) -> None:
        try:
            with open(self.token_file or "", encoding="utf-8") as f:      # rotated by the kubelet: read each time
                token = f.read().strip()
            context = ssl.create_default_context(cafile=self.ca_file) if self.ca_file else None
            req = urllib.request.Request(self.url, data=json.dumps(body).encode(), method="POST",
                                         headers={"Authorization": f"Bearer {token}",
                                                  "Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=self.timeout, context=context) as resp:
                resp.read()
            self.sent += 1
        except Exception as exc:      # noqa: BLE001 - whatever the endpoint does, training goes on
            self.failed += 1
            if not self.warned:
                self.warned = True
                log("WARN", rank=self.rank, progress="not reported", url=self.url, error=_describe(exc),
                    action="training goes on")


def _describe(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        try:
            message = json.loads(exc.read() or b"{}").get("message")
        except Exception:            # noqa: BLE001
            message = None
        return f"HTTP {exc.code}" + (f": {message}" if message else "")
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason if isinstance(exc.reason, Exception) else exc
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class StepProgress:
    """Figures of a step loop for the reporter: percentage (99 at most until the end), ETA from this run's
    pace, and the metrics given."""

    def __init__(self, reporter: ProgressReporter):
        self.reporter = reporter
        self.t0: float | None = None
        self.first_step = 0

    def begin(self, step: int) -> None:
        """The loop starts (or resumes) at ``step``: the pace is measured from here."""
        self.t0, self.first_step = time.monotonic(), step

    def step(self, step: int, total: int | None, metrics: dict) -> None:
        if not self.reporter.enabled:
            return
        now = time.monotonic()
        if self.t0 is None:
            self.t0, self.first_step = now, step - 1
        progress = eta = None
        if total:
            progress = min(99, int(100 * step / total))
            done = step - self.first_step
            if done > 0:
                eta = (now - self.t0) / done * max(0, total - step)
        self.reporter.update(progress, eta, dict(metrics, step=step, total_steps=total))

    def finish(self, step: int, total: int | None, metrics: dict) -> None:
        self.reporter.close(100, 0, dict(metrics, step=step, total_steps=total))

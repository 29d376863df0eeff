"""Kubeflow Trainer's TrainJob status endpoint (the `TrainJobStatus` alpha feature gate, v2.2+), as v2.3.0 has it.

With the gate on, the manager serves HTTPS on the status server's port (10443 by default:
pkg/apis/config/v1alpha1/defaults.go) and its TrainJobStatus plugin gives every container of the trainer's
pods three env vars and a projected volume (pkg/runtime/framework/plugins/trainjobstatus/trainjobstatus.go):
the URL, the CA of the server's certificate (the webhook's: a `<trainjob>-tls-config` ConfigMap) and a
service-account token whose audience names the TrainJob (expiring after an hour, rotated by the kubelet).
A POST of an UpdateTrainJobStatusRequest is authorised when the token verifies for that audience and names a
pod of the TrainJob's namespace (pkg/statusserver/auth.go), then applied to `status.trainerStatus` with
field owner `trainer-status` (pkg/statusserver/server.go). The feature gate is off by default
(pkg/features/features.go) and the plugin is registered only when it is on (plugins/registry.go).
"""
from __future__ import annotations

import re
from datetime import datetime

GATE = "TrainJobStatus"
# trainjobstatus.go
ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
MOUNT_PATH = "/var/run/secrets/kubeflow/trainer"
CA_FILE = "ca.crt"
TOKEN_FILE = "token"
TOKEN_VOLUME = "kubeflow-trainer-token"
TOKEN_EXPIRY_S = 3600
PORT = 10443                      # defaults.go StatusServer.Port
FIELD_OWNER = "trainer-status"    # server.go client.FieldOwner
MAX_BODY = 1 << 16                # server.go maxBodySize
# trainjob_types.go TrainerStatus / Metric
MAX_METRICS = 256
MAX_METRIC_CHARS = 64
INT32_MAX = 2**31 - 1
_PATH = re.compile(r"^/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/([^/]+)/trainjobs/([^/]+)/status$")


def status_path(namespace: str, name: str) -> str:
    """utils.go StatusUrl."""
    return f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"


def token_audience(namespace: str, name: str) -> str:
    """utils.go TokenAudience."""
    return f"trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"


def parse_path(path: str) -> tuple[str, str] | None:
    m = _PATH.match(path.split("?", 1)[0])
    return (m.group(1), m.group(2)) if m else None


def _int(value, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def invalid(status) -> str | None:
    """Why the API server refuses this `trainerStatus` (the CRD's schema and rule at v2.3.0), or None."""
    if not isinstance(status, dict):
        return "trainerStatus: must be an object"
    p = status.get("progressPercentage")
    if p is not None and not _int(p, 0, 100):
        return f"trainerStatus.progressPercentage: Invalid value: {p!r}: must be an integer from 0 to 100"
    eta = status.get("estimatedRemainingSeconds")
    if eta is not None and not _int(eta, 0, INT32_MAX):
        return f"trainerStatus.estimatedRemainingSeconds: Invalid value: {eta!r}: must be an integer of 0 or more"
    metrics = status.get("metrics")
    if metrics is not None:
        if not isinstance(metrics, list) or len(metrics) > MAX_METRICS:
            return f"trainerStatus.metrics: Too many: must have at most {MAX_METRICS} items"
        for i, m in enumerate(metrics):
            for key in ("name", "value"):
                v = m.get(key) if isinstance(m, dict) else None
                if not isinstance(v, str) or not 1 <= len(v) <= MAX_METRIC_CHARS:
                    return (f"trainerStatus.metrics[{i}].{key}: Invalid value: {v!r}: a string of 1 to "
                            f"{MAX_METRIC_CHARS} characters")
    stamp = status.get("lastUpdatedTime")
    if not stamp:
        return "trainerStatus: Invalid value: \"object\": lastUpdatedTime is required when trainerStatus is present"
    try:
        datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return f"trainerStatus.lastUpdatedTime: Invalid value: {stamp!r}: not an RFC 3339 time"
    return None

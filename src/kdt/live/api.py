"""The API server's REST interface for what polls and reports many times a second (the node agent of
kdt/live/node.py, `kdt run --live`): one kept-alive HTTPS connection with the kubeconfig's client
certificate, JSON in and out. One-off calls go through the pinned kubectl (cluster.Client.kubectl).

Paths are the API server's own (`/api/v1/namespaces/default/pods`); an answer that is not 2xx raises
ApiError with the server's Status message and code (404 and 409 are the ones callers look at).
"""
from __future__ import annotations

import http.client
import json
import ssl
import threading
import urllib.parse
from pathlib import Path

from ..errors import UsageError


class ApiError(UsageError):
    def __init__(self, code: int, message: str, reason: str = ""):
        super().__init__(f"API server: {code} {reason}: {message}".rstrip(": "))
        self.code, self.reason, self.detail = code, reason, message


class Api:
    def __init__(self, server: str, ca: str, cert: str, key: str, timeout: float = 30.0):
        u = urllib.parse.urlparse(server)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 443
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.check_hostname = False       # the run's CA signs the server for 127.0.0.1 and its names
        self.ctx.load_cert_chain(cert, key)
        self.timeout = timeout
        self._local = threading.local()

    @classmethod
    def from_kubeconfig(cls, path: Path) -> "Api":
        """A kubeconfig as kdt.live.controlplane writes it (certificate files, not inline data)."""
        cfg = json.loads(Path(path).read_text())
        ctx_name = cfg["current-context"]
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
        return cls(cluster["server"], cluster["certificate-authority"], user["client-certificate"], user["client-key"])

    def _conn(self) -> http.client.HTTPSConnection:
        c = getattr(self._local, "conn", None)
        if c is None:
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=self.timeout)
            self._local.conn = c
        return c

    def request(self, method: str, path: str, body=None, content_type: str = "application/json",
                params: dict | None = None):
        if params:
            path += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (0, 1):
            c = self._conn()
            try:
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                raw = r.read()
                break
            except (http.client.HTTPException, OSError):
                c.close()
                self._local.conn = None
                if attempt:
                    raise
        obj = json.loads(raw) if raw else {}
        if not 200 <= r.status < 300:
            raise ApiError(r.status, str(obj.get("message") or raw[:300]), str(obj.get("reason") or ""))
        return obj

    # -- the verbs ---------------------------------------------------------------------------------------
    def get(self, path: str, **params):
        return self.request("GET", path, params=params)

    def items(self, path: str, **params) -> list[dict]:
        return list(self.get(path, **params).get("items") or [])

    def create(self, path: str, obj: dict):
        return self.request("POST", path, obj)

    def merge_patch(self, path: str, patch: dict):
        return self.request("PATCH", path, patch, "application/merge-patch+json")

    def strategic_patch(self, path: str, patch: dict):
        return self.request("PATCH", path, patch, "application/strategic-merge-patch+json")

    def delete(self, path: str, grace: int | None = None, uid: str | None = None, missing_ok: bool = True):
        body: dict = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace is not None:
            body["gracePeriodSeconds"] = grace
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            return self.request("DELETE", path, body)
        except ApiError as e:
            if missing_ok and e.code in (404, 409):
                return None
            raise

    def close(self) -> None:
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None


def pod_path(namespace: str, name: str = "", sub: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/pods" + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")

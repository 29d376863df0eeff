"""The live control plane for the tests: one per Trainer release per test session, shared by the xdist
workers (the first worker to ask starts it with `kdt cluster up`; the others attach to it), owned by the
session's main process: it stops when that process ends (KDT_LIVE_OWNER_PID), and at the session's end."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys

import pytest

from kdt.live import build
from kdt.live.cluster import attach

KDT = [sys.executable, "-m", "kdt"]


def _owner() -> int:
    # an xdist worker is a child of the session's main process
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()


def cluster_name(release: str) -> str:
    return f"pytest-{_owner()}-trainer-{release}"


@pytest.fixture(scope="session")
def live(session_folder):
    """``live(release)``: a client of the session's control plane running Trainer `release`."""
    started = {}

    def get(release: str = "2.3"):
        if release in started:
            return started[release]
        name = cluster_name(release)
        state = build.cache_root() / "clusters" / name / "state.json"
        with open(session_folder("live") / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                st = json.loads(state.read_text())
                os.kill(st["pid"], 0)
            except (OSError, ValueError, KeyError):
                proc = subprocess.run([*KDT, "cluster", "up", "--name", name, "--trainer", release], capture_output=True,
                                      text=True, env={**os.environ, "KDT_LIVE_OWNER_PID": str(_owner())}, timeout=900)
                assert proc.returncode == 0, proc.stderr[-2000:]
                st = json.loads(state.read_text())
        started[release] = attach(st)
        return started[release]

    return get


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    clusters = build.cache_root() / "clusters"
    if not clusters.is_dir():
        return
    for folder in clusters.glob(f"pytest-{os.getpid()}-*"):
        subprocess.run([*KDT, "cluster", "down", "--name", folder.name], capture_output=True, timeout=120)

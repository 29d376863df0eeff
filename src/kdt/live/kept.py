"""A kept control plane (`kdt cluster up --name NAME`): where it lives and the state its daemon writes.

The daemon (kdt.live.daemon) writes `state.json` in the control plane's folder once it is ready and removes it
when it stops; `state(name)` is the one reader (`kdt cluster status`/`down`, `kdt run --live --cluster`): the
state while its daemon is alive, else None. Below every other module of kdt.live that reads it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from .build import cache_root


def alive(pid: int) -> bool:
    """Whether a process of that pid exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def folder(name: str) -> Path:
    """The folder of the control plane kept under `name` (in the user's cache, beside the built binaries)."""
    return cache_root() / "clusters" / name


def state_at(where: Path) -> dict | None:
    """The state the daemon of the control plane in `where` wrote, while that daemon is alive; else None."""
    try:
        st = json.loads((where / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return st if alive(int(st.get("pid", 0))) else None


def state(name: str) -> dict | None:
    """The kept control plane `name`'s state (its kubeconfig, server, releases, ports, components), None when
    it is not up."""
    return state_at(folder(name))


def daemon_pid(where: Path) -> int | None:
    """The pid of the daemon starting (or running) the control plane in `where`, while it is alive."""
    try:
        pid = int((where / "daemon.pid").read_text())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def find(trainer: str, training_operator: str, fingerprint: str) -> tuple[str, dict] | None:
    """A running control plane `kdt cluster up` keeps with these releases, started from the same cluster file
    (kdt.cluster_file.Cluster.fingerprint), for `--live` to judge on instead of starting one: (its name, its
    state). $KDT_LIVE_CLUSTER names the one to use; else `default` first, then by name, leaving out those a test
    session owns (KDT_LIVE_OWNER_PID: they go when the session does)."""
    named = os.environ.get("KDT_LIVE_CLUSTER")
    if named:
        names = [named]
    else:
        try:
            names = sorted((p.name for p in (cache_root() / "clusters").iterdir() if p.is_dir()),
                           key=lambda n: (n != "default", n))
        except OSError:
            return None
    for name in names:
        st = state(name)
        if st and st.get("trainer") == trainer and st.get("training_operator") == training_operator \
                and st.get("cluster_file") == fingerprint and (named or not st.get("owner")):
            return name, st
    return None

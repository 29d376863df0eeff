"""Renders kept between runs: a warm `make preview` does not run kubectl and helm again for what has not changed.

A render of a target inside the repository (kdt.paths.ROOT) is stored in the user's cache folder
(`$KDT_CACHE_DIR`, else `$XDG_CACHE_HOME/kdt/render`, else `~/.cache/kdt/render`: nothing is written into the
repository), keyed
by the command line (kubectl or helm, its path, size and modification time, the target, the chart, the
`--set` values, GOGC aside) and by a fingerprint of the repository's files: every file's path, size and
modification time (nanoseconds), the git and virtual-environment folders and caches aside. Any file
edited, added or removed anywhere in the tree is another fingerprint, so nothing is served stale; what a
render reads from outside the tree (kustomize's default load restrictor refuses that, remote bases aside)
is not watched, and a target outside the repository is never cached. Only renders that succeeded are
kept. `KDT_RENDER_CACHE=0` turns it off. Files are written whole (a temporary file renamed), so runs in
parallel never read half of one; entries unused for two weeks are removed now and then.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

from .paths import ROOT

_SKIP = {".git", ".venv", "__pycache__", ".pytest_cache", "node_modules", ".mypy_cache"}
_UNUSED_S = 14 * 24 * 3600


def folder() -> Path:
    base = os.environ.get("KDT_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kdt" / "render"


def enabled() -> bool:
    return os.environ.get("KDT_RENDER_CACHE", "1") != "0"


def _fingerprint(root: str) -> str:
    h = hashlib.sha256()
    stack = [root]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.name in _SKIP:
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                    continue
                st = e.stat(follow_symlinks=True)
            except OSError:
                continue
            h.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


_batch: list[str] = []


@contextlib.contextmanager
def batch():
    """One fingerprint for the renders started inside (kdt.render.render_all: a run's targets, rendered while
    nothing edits the tree); outside, each render takes its own (a process that edits files between renders
    is never served the render of before)."""
    _batch.append(_fingerprint(str(ROOT)) if enabled() else "")
    try:
        yield
    finally:
        _batch.pop()


def _inside(path) -> bool:
    try:
        Path(path).resolve().relative_to(ROOT)
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def key(cmd: list[str], paths: list) -> str | None:
    """The cache key of a render command whose inputs are `paths`, or None when it is not to be cached."""
    if not enabled() or not all(_inside(p) for p in paths if p is not None):
        return None
    try:
        st = os.stat(cmd[0])
    except OSError:
        return None
    head = json.dumps([cmd, st.st_size, st.st_mtime_ns, os.environ.get("KDT_ROOT", "")])
    return hashlib.sha256(f"{head}\0{(_batch[-1] if _batch else _fingerprint(str(ROOT)))}".encode()).hexdigest()


def get(k: str | None) -> str | None:
    if k is None:
        return None
    path = folder() / f"{k}.yaml"
    try:
        text = path.read_text()
        os.utime(path)            # used: kept
        return text
    except (OSError, UnicodeDecodeError):
        return None


def put(k: str | None, text: str) -> None:
    if k is None:
        return
    where = folder()
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, where / f"{k}.yaml")
        if int.from_bytes(os.urandom(1), "little") < 8:      # about one write in 32
            _prune(where)
    except OSError:
        pass          # no writable cache folder: no cache, the same output


def _prune(where: Path) -> None:
    now = time.time()
    for p in where.glob("*"):
        try:
            if now - p.stat().st_mtime > _UNUSED_S:
                p.unlink()
        except OSError:
            pass

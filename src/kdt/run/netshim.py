"""The network of a local run: every pod gets a loopback address of its own, and its names resolve to it.

`netshim.c` is preloaded (LD_PRELOAD) into every process of a pod: pod and
Service names resolve to the pods' addresses (getaddrinfo), a pod's wildcard
binds go to its own address (so two pods may listen on the same port, as on a
cluster), and gethostname/uname answer the pod's hostname. It is compiled once
per machine with the C compiler (cc) into the user's cache folder.
"""
from __future__ import annotations

import hashlib
import ipaddress
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import UsageError

SOURCE = Path(__file__).with_name("netshim.c")
# 127.0.0.0/8 is loopback on Linux: pod k of a run answers on 127.<net>.<k // 250>.<k % 250 + 1>; each
# run takes a `net` of its own (64-254), so runs side by side keep their ports apart too.
NETS = range(64, 255)


def pod_ip(k: int, net: int = 77) -> str:
    return str(ipaddress.IPv4Address(f"127.{net}.0.0") + (k // 250) * 256 + k % 250 + 1)


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "kdt"


def library() -> Path:
    """The compiled shim (built on first use; a new source means a new file)."""
    code = SOURCE.read_bytes()
    out = cache_dir() / f"netshim-{hashlib.sha256(code).hexdigest()[:12]}.so"
    if out.is_file():
        return out
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise UsageError("kdt run maps pod names to loopback addresses with a small preloaded library it compiles "
                         "once, and finds no C compiler (cc or gcc; set CC)")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".netshim-", suffix=".so")
    os.close(fd)
    try:
        proc = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", tmp, str(SOURCE), "-ldl", "-lpthread"],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise UsageError(f"kdt run: compiling {SOURCE.name} with {cc} failed: {' '.join(proc.stderr.split())[:300]}")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def write_hosts(path: Path, names: dict[str, list[str]]) -> None:
    """`ip name...` lines, the table the shim reads (KDT_RUN_HOSTS); replaced whole, so a process reading it
    while a live run rewrites it sees the old table or the new one, and reads the new one at its next lookup."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(f"{ip} {' '.join(ns)}\n" for ip, ns in names.items()))
    os.replace(tmp, path)

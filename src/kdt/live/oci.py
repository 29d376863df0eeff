"""Small OCI images written without a container engine: the pause image a real node's sandboxes run, and the
tiny busybox image the node tests run (no torch: fast).

An archive is an OCI image layout in a tar (image-spec v1.1.0 image-layout.md: `oci-layout`, `index.json`,
`blobs/sha256/`): one uncompressed layer, its config and its manifest, the manifest's descriptor in
`index.json` annotated with `io.containerd.image.name` and `org.opencontainers.image.ref.name`, which
`ctr images import` reads as the image's name (containerd v2.4.2 core/images/archive/importer.go). Same
files, same bytes: the archive is reproducible (mtime 0, sorted entries).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError


@dataclass
class Image:
    """What goes into one image: files (path in the image -> (bytes, mode)), symlinks, directories (mode), and
    the config's entrypoint, user, env and working directory."""
    ref: str
    files: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)
    dirs: dict = field(default_factory=dict)
    entrypoint: list | None = None
    cmd: list | None = None
    user: str = ""
    env: list = field(default_factory=lambda: ["PATH=/bin:/usr/bin:/sbin:/usr/sbin"])
    workdir: str = "/"


def _layer(img: Image) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        entries = sorted({**{p: ("dir", m) for p, m in img.dirs.items()},
                          **{p: ("link", t) for p, t in img.links.items()},
                          **{p: ("file", v) for p, v in img.files.items()}}.items())
        for path, (kind, val) in entries:
            ti = tarfile.TarInfo(path.lstrip("/"))
            ti.mtime, ti.uid, ti.gid = 0, 0, 0
            if kind == "dir":
                ti.type, ti.mode = tarfile.DIRTYPE, val
                tar.addfile(ti)
            elif kind == "link":
                ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, val, 0o777
                tar.addfile(ti)
            else:
                data, mode = val
                ti.size, ti.mode = len(data), mode
                tar.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    ti = tarfile.TarInfo("blobs/sha256/" + digest.split(":")[1])
    ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
    tar.addfile(ti, io.BytesIO(data))
    return {"digest": digest, "size": len(data)}


def write(img: Image, out: Path) -> Path:
    """Write `img` as an OCI archive at `out` (atomically); returns `out`."""
    layer = _layer(img)
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    cfg = {"architecture": "amd64", "os": "linux",
           "config": {k: v for k, v in (("Entrypoint", img.entrypoint), ("Cmd", img.cmd), ("User", img.user),
                                        ("Env", img.env), ("WorkingDir", img.workdir)) if v},
           "rootfs": {"type": "layers", "diff_ids": [diff_id]}, "history": [{"created_by": "kdt.live.oci"}]}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        def meta(name: str, data: bytes) -> None:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
            tar.addfile(ti, io.BytesIO(data))
        meta("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        lay = _blob(tar, layer)
        conf = _blob(tar, json.dumps(cfg, sort_keys=True).encode())
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **conf},
                    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **lay}]}
        man = _blob(tar, json.dumps(manifest, sort_keys=True).encode())
        index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                 "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", **man,
                                "platform": {"architecture": "amd64", "os": "linux"},
                                "annotations": {"io.containerd.image.name": img.ref,
                                                "org.opencontainers.image.ref.name": img.ref}}]}
        meta("index.json", json.dumps(index, sort_keys=True).encode())
    os.replace(tmp, out)
    return out


def busybox(ref: str, user: str = "", busybox_path: str = "/bin/busybox", extra: dict | None = None) -> Image:
    """Debian's busybox-static as a whole userland (/bin/sh, sleep, cat, ...: busybox's applets as links)."""
    exe = Path(busybox_path)
    if not exe.is_file():
        raise UsageError(f"{busybox_path}: not found (Debian's busybox-static provides it)")
    names = subprocess.run([str(exe), "--list"], capture_output=True, text=True).stdout.split()
    img = Image(ref, user=user, entrypoint=None, cmd=["/bin/sh"])
    img.dirs.update({"bin": 0o755, "tmp": 0o1777, "etc": 0o755, "home": 0o755, "home/user": 0o777, "data": 0o777})
    img.files["bin/busybox"] = (exe.read_bytes(), 0o755)
    img.files["etc/passwd"] = (b"root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n", 0o644)
    img.files["etc/group"] = (b"root:x:0:\nuser:x:1000:\n", 0o644)
    for n in names:
        if n != "busybox":
            img.links[f"bin/{n}"] = "busybox"
    for path, data in (extra or {}).items():       # e.g. {"app/train.sh": b"..."}: the image's own code
        img.dirs.setdefault(path.rsplit("/", 1)[0], 0o755)
        img.files[path] = (data, 0o755)
    return img


def pause_binary(source: Path, out: Path, version: str) -> Path:
    """Kubernetes' pause (build/pause/linux/pause.c of the pinned k8s.io/kubernetes module), built as its
    Makefile builds it: gcc -Os -Wall -Werror -static -DVERSION=..."""
    if out.is_file():
        return out
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise UsageError("a real node needs a C compiler for its pause image (no gcc or cc on PATH)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    proc = subprocess.run([cc, "-Os", "-Wall", "-Werror", "-static", f"-DVERSION={version}", "-o", str(tmp),
                           str(source)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(f"building the pause image from {source} failed: {proc.stderr.strip()[-300:]}")
    os.replace(tmp, out)
    return out


def pause(ref: str, binary: Path) -> Image:
    img = Image(ref, entrypoint=["/pause"], user="65535:65535", env=[])
    img.files["pause"] = (binary.read_bytes(), 0o755)
    return img

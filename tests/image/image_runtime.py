"""Run a built image with runc (Debian's), as containerd runs a pod's container: the image's rootfs from
containers-storage (buildah mount), an OCI runtime spec made from the image's own config (user, env,
working directory, command), private namespaces (the network namespace has only loopback).

`make test` builds the images first (scripts/image.py --engine buildah, cached in containers-storage);
these helpers only read and run them.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

RUN_TIMEOUT_S = 600


@dataclass
class Ran:
    rc: int
    stdout: str
    stderr: str


def inspect(ref: str) -> dict:
    """The image's buildah inspection (OCIv1 config, labels), or AssertionError saying how to build it."""
    proc = subprocess.run(["buildah", "inspect", "--type", "image", ref], capture_output=True, text=True)
    assert proc.returncode == 0, (f"image {ref} is not in containers-storage: `make test` builds it first "
                                  f"(python3 scripts/image.py --engine buildah --target ...): {proc.stderr.strip()}")
    return json.loads(proc.stdout)


class Container:
    """One buildah working container of the image (its rootfs mounted), run any number of times by runc."""

    def __init__(self, ref: str):
        self.ref = ref
        self.config = inspect(ref)["OCIv1"]["config"]
        self.name = subprocess.run(["buildah", "from", "--pull-never", ref], capture_output=True, text=True,
                                   check=True).stdout.strip()
        self.rootfs = subprocess.run(["buildah", "mount", self.name], capture_output=True, text=True,
                                     check=True).stdout.strip()
        self.bundle = Path(tempfile.mkdtemp(prefix="kdt-runc-"))

    def close(self) -> None:
        subprocess.run(["buildah", "umount", self.name], capture_output=True)
        subprocess.run(["buildah", "rm", self.name], capture_output=True)
        shutil.rmtree(self.bundle, ignore_errors=True)

    def spec(self, args: list[str] | None, env: dict[str, str]) -> dict:
        spec_path = self.bundle / "config.json"
        spec_path.unlink(missing_ok=True)
        subprocess.run(["runc", "spec", "--bundle", str(self.bundle)], check=True, capture_output=True)
        spec = json.loads(spec_path.read_text())
        uid, _, gid = (self.config.get("User") or "0:0").partition(":")
        image_env = dict(e.split("=", 1) for e in self.config.get("Env") or [])
        image_env.update(env)
        spec["root"] = {"path": self.rootfs, "readonly": False}
        spec["process"].update(
            terminal=False, cwd=self.config.get("WorkingDir") or "/",
            user={"uid": int(uid), "gid": int(gid or uid)},
            args=args if args is not None else (self.config.get("Entrypoint") or []) + (self.config.get("Cmd") or []),
            env=[f"{k}={v}" for k, v in image_env.items()])
        # The kubelet gives every pod an /etc/hosts (localhost, the pod's name), as docker run does; a
        # debootstrap rootfs has none, and torchrun's --standalone store listens on `localhost`.
        hosts = self.bundle / "hosts"
        hosts.write_text("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\ttrainer-0\n")
        spec["hostname"] = "trainer-0"
        spec["mounts"].append({"destination": "/etc/hosts", "type": "bind", "source": str(hosts),
                               "options": ["rbind", "ro"]})
        # The pod's /dev/shm is larger than runc's default 64 MiB (torch's worker processes share tensors there).
        for mount in spec["mounts"]:
            if mount["destination"] == "/dev/shm":
                mount["options"] = [o for o in mount["options"] if not o.startswith("size=")] + ["size=1g"]
        return spec

    def run(self, args: list[str] | None = None, env: dict[str, str] | None = None,
            timeout: int = RUN_TIMEOUT_S) -> Ran:
        spec = self.spec(args, env or {})
        (self.bundle / "config.json").write_text(json.dumps(spec))
        cid = f"kdt-image-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            proc = subprocess.run(["runc", "run", "--bundle", str(self.bundle), cid], capture_output=True,
                                  text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        finally:
            subprocess.run(["runc", "delete", "--force", cid], capture_output=True)
        return Ran(proc.returncode, proc.stdout, proc.stderr)

#!/usr/bin/env python3
"""Build (and optionally push) the training image, training/Dockerfile, with docker buildx.

    make image                          GPU variant, tagged from the git revision, loaded locally
    make image TARGET=cpu               CPU variant (tag suffix -cpu)
    make image IMAGE=reg.example.com/ml/trainer:1.2.3 PUSH=1

Settings come from the environment (what `make image VAR=...` passes) or from
the flags, which win:
  IMAGE     full reference; default <IMAGE_REPOSITORY>:<git revision>[-dirty][-cpu]
            (IMAGE_REPOSITORY from src/kdt/versions.py). A reference without
            a tag gets the revision tag.
  PUSH      1 pushes to the registry (buildx --push); otherwise the image is
            loaded into the local engine (--load). Opt-in.
  TARGET    gpu (default), cpu, or tensorflow (training/Dockerfile.tensorflow, tag suffix -tensorflow)
  PLATFORM  e.g. linux/amd64 (default: the builder's own platform)

Exit codes: 0 built; 2 bad settings; 3 no usable Docker engine (no docker
binary, `docker info` fails, or no buildx plugin), said in one line; otherwise
the exit code of `docker buildx build`.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kdt import versions  # noqa: E402
from kdt.cli import Parser, invoke  # noqa: E402
from kdt.errors import UsageError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = "training/Dockerfile"
DOCKERFILE_TENSORFLOW = "training/Dockerfile.tensorflow"
VARIANTS = ("gpu", "cpu")                 # the VARIANT build-arg of training/Dockerfile
TARGETS = VARIANTS + ("tensorflow",)      # tensorflow: training/Dockerfile.tensorflow
SUFFIX = {"gpu": "", "cpu": "-cpu", "tensorflow": "-tensorflow"}
NO_ENGINE = 3
PROBE_TIMEOUT_S = 30
DEFAULT_SOURCE = "https://github.com/torch-k8s/torch-k8s"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
# A reference's last path component carries the tag: registry:5000/x/y:tag.
_HAS_TAG = re.compile(r":[\w][\w.-]{0,127}$")


class NoEngine(Exception):
    """No Docker engine to build with; exit 3 with one line."""


def _git(*args: str) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def revision() -> tuple[str, str]:
    """(full commit, tag): the tag is the 12-digit short commit, `-dirty` when the tree has changes."""
    full = _git("rev-parse", "HEAD")
    if not full:
        return "unknown", "dev"
    short = _git("rev-parse", "--short=12", "HEAD") or full[:12]
    status = _git("status", "--porcelain")
    return full, short + ("-dirty" if status else "")


def source_url() -> str:
    """The repository URL for org.opencontainers.image.source: the git remote `origin` as https, if any."""
    url = _git("remote", "get-url", "origin") or ""
    m = re.match(r"^git@([^:]+):(.+?)(?:\.git)?$", url)
    if m:
        return f"https://{m.group(1)}/{m.group(2)}"
    if url.startswith("https://"):
        return url.removesuffix(".git")
    return DEFAULT_SOURCE


def flag(value: str, name: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise UsageError(f"{name}={value!r}: expected 1 or 0")


def image_ref(image: str, tag: str, target: str) -> str:
    """The full reference to build: IMAGE as given, or the project's repository with the revision tag."""
    suffix = SUFFIX[target]
    if not image:
        return f"{versions.IMAGE_REPOSITORY}:{tag}{suffix}"
    if any(c.isspace() for c in image) or image.startswith("-"):
        raise UsageError(f"IMAGE={image!r}: not an image reference")
    if "@" in image or _HAS_TAG.search(image.rsplit("/", 1)[-1]):
        return image
    return f"{image}:{tag}{suffix}"


def build_command(image: str, target: str, push: bool, platform: str, rev: str) -> list[str]:
    cmd = ["docker", "buildx", "build",
           "--file", DOCKERFILE_TENSORFLOW if target == "tensorflow" else DOCKERFILE,
           *([] if target == "tensorflow" else ["--build-arg", f"VARIANT={target}"]),
           "--build-arg", f"VERSION={versions.IMAGE_TAG}",
           "--build-arg", f"REVISION={rev}",
           "--build-arg", f"SOURCE={source_url()}",
           "--tag", image]
    if platform:
        cmd += ["--platform", platform]
    cmd += ["--push" if push else "--load", "."]
    return cmd


def check_engine() -> None:
    """Raise NoEngine unless a docker binary, a reachable engine and the buildx plugin are all there."""
    if shutil.which("docker") is None:
        raise NoEngine("no Docker engine: `docker` is not on PATH (install Docker, or build where one runs)")
    for probe, what in ((["docker", "info"], "no Docker engine: `docker info` failed"),
                        (["docker", "buildx", "version"], "cannot build: the docker buildx plugin is missing")):
        try:
            proc = subprocess.run(probe, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise NoEngine(f"no Docker engine: `{' '.join(probe)}` did not answer in {PROBE_TIMEOUT_S} s") from None
        except OSError as exc:
            raise NoEngine(f"no Docker engine: cannot run docker ({exc.strerror})") from None
        if proc.returncode != 0:
            detail = next((line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()), "")
            raise NoEngine(what + (f": {detail}" if detail else ""))


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="image", description=__doc__)
    p.add_argument("--image", default=os.environ.get("IMAGE", ""), help="full image reference (env IMAGE)")
    p.add_argument("--target", default=os.environ.get("TARGET", "") or "gpu",
                   help="gpu, cpu or tensorflow (env TARGET; default gpu)")
    p.add_argument("--push", action="store_const", const="1", default=os.environ.get("PUSH", ""),
                   help="push to the registry instead of loading locally (env PUSH=1)")
    p.add_argument("--platform", default=os.environ.get("PLATFORM", ""),
                   help="target platform, e.g. linux/amd64 (env PLATFORM)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the docker buildx command and exit, without a Docker engine")
    args = p.parse_args(argv)

    target = args.target.strip().lower()
    if target not in TARGETS:
        raise UsageError(f"TARGET={args.target!r}: expected gpu, cpu or tensorflow")
    push = flag(args.push, "PUSH")
    platform = args.platform.strip()
    if platform and not re.fullmatch(r"[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?(,[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?)*", platform):
        raise UsageError(f"PLATFORM={platform!r}: expected e.g. linux/amd64")
    if "," in platform and not push:
        raise UsageError(f"PLATFORM={platform}: several platforms need PUSH=1 (the local engine loads one)")
    full, tag = revision()
    image = image_ref(args.image.strip(), tag, target)
    cmd = build_command(image, target, push, platform, full)

    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    try:
        check_engine()
    except NoEngine as exc:
        print(f"image: {exc}", file=sys.stderr)
        return NO_ENGINE
    print(f"image: building {image} ({target}, {'push' if push else 'load'})", file=sys.stderr)
    rc = subprocess.run(cmd, cwd=ROOT).returncode
    if rc != 0:
        print(f"image: docker buildx build failed (exit {rc})", file=sys.stderr)
        return rc
    print(f"image: {'pushed' if push else 'built'} {image}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(invoke(main))

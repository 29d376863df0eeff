#!/usr/bin/env python3
"""Build (and optionally push or export) the training image, training/Dockerfile, with docker buildx or buildah.

    make image                          GPU variant, tagged from the git revision, loaded locally
    make image TARGET=gpu-debian        GPU variant made from Debian's packages and PyPI's hashed wheels only
    make image TARGET=cpu               CPU variant (tag suffix -cpu)
    make image IMAGE=reg.example.com/ml/trainer:1.2.3 PUSH=1
    python3 scripts/image.py --target gpu-debian --archive /tmp/trainer.oci.tar   (for `ctr images import`)

Settings come from the environment (what `make image VAR=...` passes) or from
the flags, which win:
  ENGINE    docker (docker buildx) or buildah (daemonless: a Debian package that
            reads the Dockerfile and keeps a layer cache with --layers in
            containers-storage). Default: docker when a Docker engine answers,
            else buildah; the choice is said in one line.
  IMAGE     full reference; default <IMAGE_REPOSITORY>:<git revision>[-dirty][suffix]
            (IMAGE_REPOSITORY from src/kdt/versions.py), also tagged
            <IMAGE_REPOSITORY>:<IMAGE_TAG>[suffix], the reference the manifests
            run. A reference without a tag gets the revision tag.
  PUSH      1 pushes to the registry; otherwise the image stays in the local engine. Opt-in.
  TARGET    gpu (default: the pytorch/pytorch base), gpu-debian (a debootstrap
            Debian base + the lock's CUDA torch wheels, hashes checked, no
            registry image), cpu (tag suffix -cpu), tensorflow (the
            tensorflow/tensorflow base) or tensorflow-debian (tag suffix -tensorflow)
  PLATFORM  e.g. linux/amd64 (default: the builder's own platform)
  ARCHIVE   after the build, write the image as an archive there (buildah: an OCI
            archive; docker: `docker save`), which `ctr -n k8s.io images import` reads

Exit codes: 0 built; 1 the build stopped (a wheel whose sha256 is not the lock's,
debootstrap failed: one line naming it); 2 bad settings; 3 no build engine (the
engines tried, said in one line); otherwise the exit code of the engine's build.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))
import image_debian  # noqa: E402
from kdt import versions  # noqa: E402
from kdt.cli import Parser, invoke  # noqa: E402
from kdt.errors import UsageError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = "training/Dockerfile"
DOCKERFILE_TENSORFLOW = "training/Dockerfile.tensorflow"
VARIANTS = ("gpu", "gpu-debian", "cpu")   # the VARIANT build-arg of training/Dockerfile
TF_VARIANTS = ("tensorflow", "tensorflow-debian")   # the VARIANT build-arg of training/Dockerfile.tensorflow
TARGETS = VARIANTS + TF_VARIANTS
DEBIAN_TARGETS = ("gpu-debian", "tensorflow-debian")
SUFFIX = {"gpu": "", "gpu-debian": "", "cpu": "-cpu", "tensorflow": "-tensorflow", "tensorflow-debian": "-tensorflow"}
ENGINES = ("docker", "buildah")
NO_ENGINE = 3
PROBE_TIMEOUT_S = 30
DEFAULT_SOURCE = "https://github.com/torch-k8s/torch-k8s"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
# A reference's last path component carries the tag: registry:5000/x/y:tag.
_HAS_TAG = re.compile(r":[\w][\w.-]{0,127}$")


class NoEngine(Exception):
    """No engine to build with; exit 3 with one line."""


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


def release_ref(target: str) -> str:
    """The reference the shipped manifests run (src/kdt/versions.py), e.g. ghcr.io/torch-k8s/trainer:0.1.0."""
    return f"{versions.IMAGE_REPOSITORY}:{versions.IMAGE_TAG}{SUFFIX[target]}"


def _probe(cmd: list[str], what: str) -> str | None:
    """None when `cmd` succeeds, else why not (one phrase)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"`{' '.join(cmd)}` did not answer in {PROBE_TIMEOUT_S} s"
    except OSError as exc:
        return f"cannot run {cmd[0]} ({exc.strerror})"
    if proc.returncode == 0:
        return None
    detail = next((line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()), "")
    return what + (f": {detail}" if detail else "")


def docker_problem() -> str | None:
    """None when a docker binary, a reachable engine and the buildx plugin are all there, else the first gap."""
    if shutil.which("docker") is None:
        return "no Docker engine: `docker` is not on PATH"
    return (_probe(["docker", "info"], "no Docker engine: `docker info` failed")
            or _probe(["docker", "buildx", "version"], "cannot build: the docker buildx plugin is missing"))


def buildah_problem() -> str | None:
    if shutil.which("buildah") is None:
        return "no buildah: `buildah` is not on PATH"
    return _probe(["buildah", "info"], "no buildah: `buildah info` failed")


HOW_TO_GET_ONE = "install Docker with buildx, or `apt-get install buildah` (Debian/Ubuntu)"


def choose_engine(wanted: str) -> tuple[str, str]:
    """(engine, the one line saying why), or NoEngine naming what was tried."""
    probes = {"docker": docker_problem, "buildah": buildah_problem}
    if wanted:
        problem = probes[wanted]()
        if problem:
            raise NoEngine(f"ENGINE={wanted}: {problem} ({HOW_TO_GET_ONE})")
        return wanted, f"engine {wanted} (ENGINE={wanted})"
    docker = docker_problem()
    if docker is None:
        return "docker", "engine docker (a Docker engine with buildx answers)"
    buildah = buildah_problem()
    if buildah is None:
        return "buildah", f"engine buildah ({docker})"
    raise NoEngine(f"{docker}; {buildah} ({HOW_TO_GET_ONE})")


class Engine:
    """What the Debian base (image_debian) asks of the engine: does an image exist, import a rootfs."""

    def __init__(self, name: str):
        self.name = name

    def has_image(self, ref: str) -> bool:
        cmd = ["buildah", "inspect", "--type", "image", ref] if self.name == "buildah" \
            else ["docker", "image", "inspect", ref]
        return subprocess.run(cmd, capture_output=True).returncode == 0

    def import_rootfs(self, rootfs: Path, ref: str, labels: dict[str, str]) -> None:
        env = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        if self.name == "docker":
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
            changes = [a for k, v in labels.items() for a in ("--change", f"LABEL {k}={shlex.quote(v)}")]
            subprocess.run(["docker", "import", "--change", f"ENV {env}", *changes, "-", ref],
                           stdin=tar.stdout, check=True, capture_output=True)
            tar.wait()
            return
        ctr = subprocess.run(["buildah", "from", "scratch"], capture_output=True, text=True, check=True).stdout.strip()
        try:
            mnt = subprocess.run(["buildah", "mount", ctr], capture_output=True, text=True, check=True).stdout.strip()
            subprocess.run(["cp", "-a", f"{rootfs}/.", mnt], check=True)
            subprocess.run(["buildah", "umount", ctr], check=True, capture_output=True)
            subprocess.run(["buildah", "config", "--env", env, "--cmd", "/bin/bash",
                            *[a for k, v in labels.items() for a in ("--label", f"{k}={v}")], ctr],
                           check=True, capture_output=True)
            subprocess.run(["buildah", "commit", "--quiet", ctr, ref], check=True, capture_output=True)
        finally:
            subprocess.run(["buildah", "rm", ctr], capture_output=True)


def build_args(target: str, rev: str, debian: dict[str, str]) -> list[str]:
    args = {"VARIANT": target}
    args.update(VERSION=versions.IMAGE_TAG, REVISION=rev, SOURCE=source_url(), **debian)
    return [a for k, v in args.items() for a in ("--build-arg", f"{k}={v}")]


def build_command(image: str, target: str, push: bool, platform: str, rev: str, engine: str = "docker",
                  wheels: str = "", base: str = "") -> list[str]:
    """The engine's build command. A Debian target builds on the local base with the wheel cache as the
    `wheels` build context and no network. buildah builds to `image` (the script's temporary name)."""
    debian = {"DEBIAN_BASE": base, "PIP_NO_INDEX": "1"} if target in DEBIAN_TARGETS else {}
    dockerfile = DOCKERFILE_TENSORFLOW if target in TF_VARIANTS else DOCKERFILE
    if engine == "buildah":
        # buildah 1.28's layer cache does not see a new build-arg value in a LABEL (it reused the previous
        # commit's revision label): the labels that change per build are given on the command line too.
        labels = {"revision": rev, "version": versions.IMAGE_TAG, "source": source_url()}
        cmd = ["buildah", "bud", "--layers", "--file", dockerfile,
               *[a for k, v in labels.items() for a in ("--label", f"org.opencontainers.image.{k}={v}")]]
    else:
        cmd = ["docker", "buildx", "build", "--file", dockerfile]
    cmd += build_args(target, rev, debian)
    if target in DEBIAN_TARGETS:
        cmd += ["--build-context", f"wheels={wheels or '<wheel cache>'}", "--network", "none"]
    cmd += ["--tag", image]
    if platform:
        cmd += ["--platform", platform]
    if engine == "docker":
        cmd += ["--push" if push else "--load"]
    return cmd + ["."]


def check_engine() -> None:
    """Raise NoEngine unless a docker binary, a reachable engine and the buildx plugin are all there."""
    problem = docker_problem()
    if problem:
        raise NoEngine(problem)


def _run_build(cmd: list[str], engine: str) -> int:
    rc = subprocess.run(cmd, cwd=ROOT).returncode
    if rc != 0:
        what = "buildah bud" if engine == "buildah" else "docker buildx build"
        print(f"image: {what} failed (exit {rc}); nothing tagged", file=sys.stderr)
    return rc


def _finish_buildah(tmp: str, tags: list[str], push: bool, archive: str) -> int:
    """Tag the finished build (only now), drop its temporary name, then push or export if asked."""
    subprocess.run(["buildah", "tag", tmp, *tags], check=True)
    subprocess.run(["buildah", "rmi", tmp], check=True, capture_output=True)
    if push:
        for tag in tags:
            rc = subprocess.run(["buildah", "push", tag, f"docker://{tag}"]).returncode
            if rc != 0:
                print(f"image: buildah push {tag} failed (exit {rc})", file=sys.stderr)
                return rc
    if archive:
        return write_archive("buildah", tags[-1], archive)
    return 0


def write_archive(engine: str, ref: str, archive: str) -> int:
    """The image as an archive `ctr -n k8s.io images import` reads, written to a temporary name first."""
    path = Path(archive).resolve()
    if not path.parent.is_dir():
        print(f"image: ARCHIVE={archive}: folder {path.parent} does not exist", file=sys.stderr)
        return 2
    part = path.with_name(path.name + ".part")
    part.unlink(missing_ok=True)
    cmd = ["buildah", "push", "--quiet", ref, f"oci-archive:{part}:{ref}"] if engine == "buildah" \
        else ["docker", "save", "--output", str(part), ref]
    print(f"image: writing {ref} to {path}", file=sys.stderr, flush=True)
    rc = subprocess.run(cmd).returncode
    if rc != 0:
        part.unlink(missing_ok=True)
        print(f"image: {' '.join(cmd[:2])} failed (exit {rc}); no archive written", file=sys.stderr)
        return rc
    part.replace(path)
    print(str(path))
    return 0


def parse(argv: list[str] | None):
    env = os.environ.get
    p = Parser(prog="image", description=__doc__)
    p.add_argument("--engine", default=env("ENGINE", ""), help="docker or buildah (env ENGINE; default: detected)")
    p.add_argument("--image", default=env("IMAGE", ""), help="full image reference (env IMAGE)")
    p.add_argument("--target", default=env("TARGET", "") or "gpu", help=f"{', '.join(TARGETS)} (env TARGET)")
    p.add_argument("--push", action="store_const", const="1", default=env("PUSH", ""),
                   help="push to the registry instead of keeping it local (env PUSH=1)")
    p.add_argument("--platform", default=env("PLATFORM", ""), help="target platform, e.g. linux/amd64 (env PLATFORM)")
    p.add_argument("--archive", default=env("ARCHIVE", ""), help="also write the image to this archive (env ARCHIVE)")
    p.add_argument("--lock", action="store_true",
                   help="regenerate the target's hashed lock (gpu-debian, tensorflow-debian) and exit")
    p.add_argument("--dry-run", action="store_true", help="print the build command and exit, without an engine")
    args = p.parse_args(argv)
    args.target = args.target.strip().lower()
    if args.target not in TARGETS:
        raise UsageError(f"TARGET={args.target!r}: expected {', '.join(TARGETS[:-1])} or {TARGETS[-1]}")
    args.engine = args.engine.strip().lower()
    if args.engine and args.engine not in ENGINES:
        raise UsageError(f"ENGINE={args.engine!r}: expected docker or buildah")
    args.push = flag(args.push, "PUSH")
    args.platform = args.platform.strip()
    if args.platform and not re.fullmatch(
            r"[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?(,[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?)*", args.platform):
        raise UsageError(f"PLATFORM={args.platform!r}: expected e.g. linux/amd64")
    if "," in args.platform and not args.push:
        raise UsageError(f"PLATFORM={args.platform}: several platforms need PUSH=1 (the local engine loads one)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    target = args.target
    if args.lock:
        if target not in DEBIAN_TARGETS:
            raise UsageError(f"--lock: TARGET={target} has no hashed lock (gpu-debian or tensorflow-debian have)")
        extra = (f"tensorflow[and-cuda]=={versions.TENSORFLOW}",) if target == "tensorflow-debian" else ()
        try:
            print(image_debian.write_lock(target, extra).relative_to(ROOT))
        except image_debian.BuildStop as exc:
            print(f"image: {exc}", file=sys.stderr)
            return 1
        return 0
    full, tag = revision()
    image = image_ref(args.image.strip(), tag, target)
    tags = [image] + ([release_ref(target)] if not args.image.strip() else [])
    if args.dry_run:
        print(shlex.join(build_command(image, target, args.push, args.platform, full, args.engine or "docker")))
        return 0
    try:
        engine, why = choose_engine(args.engine)
    except NoEngine as exc:
        print(f"image: {exc}", file=sys.stderr)
        return NO_ENGINE
    print(f"image: {why}", file=sys.stderr, flush=True)
    try:
        wheels = str(image_debian.ensure_wheels(target)) if target in DEBIAN_TARGETS else ""
        base = image_debian.ensure_base(Engine(engine)) if target in DEBIAN_TARGETS else ""
    except image_debian.BuildStop as exc:
        print(f"image: {exc}; nothing tagged", file=sys.stderr)
        return 1
    build_as = f"localhost/torch-k8s/build:{target}-{os.getpid()}" if engine == "buildah" else image
    cmd = build_command(build_as, target, args.push, args.platform, full, engine, wheels, base)
    if engine == "docker":
        cmd[-1:-1] = [a for t in tags[1:] for a in ("--tag", t)]
    print(f"image: building {image} ({target}, {'push' if args.push else 'local'})", file=sys.stderr, flush=True)
    rc = _run_build(cmd, engine)
    if rc != 0:
        return rc
    if engine == "buildah":
        rc = _finish_buildah(build_as, tags, args.push, args.archive)
    elif args.archive:
        rc = write_archive("docker", tags[-1], args.archive)
    if rc == 0:
        print(f"image: {'pushed' if args.push else 'built'} {' '.join(tags)}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(invoke(main))

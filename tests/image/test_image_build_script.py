"""scripts/image.py (make image): the buildx command it runs, and one line + exit 3 without an engine.

No Docker engine runs here: the tests put a fake `docker` first on PATH (or
none at all) and look at what the script asked it to do.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from image_support import IMAGE_SCRIPT, ROOT
from kdt import versions

FAKE_DOCKER = """#!/bin/sh
# A stand-in for the docker CLI: logs each call, then behaves as FAKE_MODE says.
printf '%s\\n' "$*" >> "$FAKE_LOG"
case "$1 $2" in
  "info "*) [ "$FAKE_MODE" = no-daemon ] && { echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1; }; echo "Server Version: 28.2.2"; exit 0 ;;
  "buildx version") [ "$FAKE_MODE" = no-buildx ] && { echo "docker: unknown command: docker buildx" >&2; exit 1; }; echo "github.com/docker/buildx v0.24.0"; exit 0 ;;
  "buildx build") [ "$FAKE_MODE" = build-fails ] && { echo "ERROR: failed to solve" >&2; exit 17; }; exit 0 ;;
esac
exit 0
"""

FAKE_BUILDAH = """#!/bin/sh
# A stand-in for buildah: logs each call as `buildah ...`, then behaves as FAKE_MODE says.
printf 'buildah %s\\n' "$*" >> "$FAKE_LOG"
case "$1" in
  info) exit 0 ;;
  inspect) exit 1 ;;
  bud) [ "$FAKE_MODE" = bud-fails ] && { echo "error building at STEP" >&2; exit 9; }; exit 0 ;;
  push) case "$4" in oci-archive:*) p=${4#oci-archive:}; echo archive > "${p%%:*}" ;; esac; exit 0 ;;
esac
exit 0
"""


def bin_dir(tmp_path: Path, docker: bool) -> Path:
    """A PATH folder holding git (the script tags from it) and, if asked, the fake docker."""
    d = tmp_path / "bin"
    d.mkdir()
    git = shutil.which("git")
    assert git, "git is needed to tag the image from the revision"
    (d / "git").symlink_to(git)
    if docker:
        fake = d / "docker"
        fake.write_text(FAKE_DOCKER)
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return d


def run_script(tmp_path: Path, *args: str, docker: bool = True, mode: str = "ok", buildah: bool = False,
               **env: str):
    log = tmp_path / "docker.log"
    path = bin_dir(tmp_path, docker)
    if buildah:
        fake = path / "buildah"
        fake.write_text(FAKE_BUILDAH)
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    environ = {"PATH": str(path), "HOME": str(tmp_path), "FAKE_LOG": str(log), "FAKE_MODE": mode, **env}
    proc = subprocess.run([sys.executable, str(IMAGE_SCRIPT), *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got: {text!r}"
    return lines[0]


def test_no_docker_binary(tmp_path):
    proc, calls = run_script(tmp_path, docker=False)
    assert proc.returncode == 3
    assert proc.stdout == ""
    line = one_line(proc.stderr)
    assert "no Docker engine" in line and "`docker` is not on PATH" in line
    assert "Traceback" not in proc.stderr


def test_no_daemon(tmp_path):
    proc, calls = run_script(tmp_path, mode="no-daemon")
    assert proc.returncode == 3
    line = one_line(proc.stderr)
    assert line.startswith("image: no Docker engine: `docker info` failed: Cannot connect to the Docker daemon")
    assert calls == ["info"]   # it stopped before building


def test_no_buildx(tmp_path):
    proc, calls = run_script(tmp_path, mode="no-buildx")
    assert proc.returncode == 3
    assert "buildx plugin is missing" in one_line(proc.stderr)
    assert not any(c.startswith("buildx build") for c in calls)


def test_default_build_is_tagged_from_the_revision_and_loaded(tmp_path):
    proc, calls = run_script(tmp_path)
    assert proc.returncode == 0, proc.stderr
    build = [c for c in calls if c.startswith("buildx build")]
    assert len(build) == 1
    words = build[0].split()
    short, full = git("rev-parse", "--short=12", "HEAD"), git("rev-parse", "HEAD")
    tag = words[words.index("--tag") + 1]
    assert tag in (f"{versions.IMAGE_REPOSITORY}:{short}", f"{versions.IMAGE_REPOSITORY}:{short}-dirty")
    assert (tag.endswith("-dirty")) == bool(git("status", "--porcelain"))
    assert words[words.index("--file") + 1] == "training/Dockerfile"
    assert f"REVISION={full}" in words and f"VERSION={versions.IMAGE_TAG}" in words and "VARIANT=gpu" in words
    assert "--load" in words and "--push" not in words
    assert words[-1] == "."   # the context is the repo root (the script runs there)


def test_image_push_and_target_from_the_environment(tmp_path):
    proc, calls = run_script(tmp_path, IMAGE="registry.example.com:5000/ml/trainer:1.2.3", PUSH="1",
                             TARGET="cpu", PLATFORM="linux/amd64")
    assert proc.returncode == 0, proc.stderr
    words = next(c for c in calls if c.startswith("buildx build")).split()
    assert words[words.index("--tag") + 1] == "registry.example.com:5000/ml/trainer:1.2.3"
    assert "--push" in words and "--load" not in words
    assert "VARIANT=cpu" in words
    assert words[words.index("--platform") + 1] == "linux/amd64"


def test_image_without_tag_gets_the_revision_tag(tmp_path):
    proc, calls = run_script(tmp_path, "--dry-run", IMAGE="registry.example.com:5000/ml/trainer", TARGET="cpu")
    assert proc.returncode == 0
    words = proc.stdout.split()
    tag = words[words.index("--tag") + 1]
    assert tag.startswith(f"registry.example.com:5000/ml/trainer:{git('rev-parse', '--short=12', 'HEAD')}")
    assert tag.endswith("-cpu")
    assert calls == []   # --dry-run needs no engine


def test_build_failure_passes_its_exit_code(tmp_path):
    proc, _ = run_script(tmp_path, mode="build-fails")
    assert proc.returncode == 17
    assert proc.stderr.strip().splitlines()[-1] == "image: docker buildx build failed (exit 17); nothing tagged"


@pytest.mark.parametrize("env, message", [
    ({"TARGET": "arm"}, "TARGET='arm': expected gpu, gpu-debian, cpu, tensorflow or tensorflow-debian"),
    ({"ENGINE": "podman"}, "ENGINE='podman': expected docker or buildah"),
    ({"PUSH": "maybe"}, "PUSH='maybe': expected 1 or 0"),
    ({"PLATFORM": "linux/amd64,linux/arm64"}, "several platforms need PUSH=1"),
    ({"IMAGE": "--push"}, "not an image reference"),
])
def test_bad_settings_are_one_line_exit_2(tmp_path, env, message):
    proc, calls = run_script(tmp_path, **env)
    assert proc.returncode == 2
    assert message in one_line(proc.stderr)
    assert calls == []


def test_flags_win_over_the_environment(tmp_path):
    proc, _ = run_script(tmp_path, "--dry-run", "--target", "cpu", "--image", "a/b:c", TARGET="gpu", IMAGE="x/y:z")
    assert proc.returncode == 0
    assert "VARIANT=cpu" in proc.stdout and "--tag a/b:c" in proc.stdout


def test_help(tmp_path):
    proc, _ = run_script(tmp_path, "--help")
    assert proc.returncode == 0 and "docker buildx" in proc.stdout and "PUSH" in proc.stdout


def test_repository_is_the_one_the_manifests_name():
    """The default IMAGE is the repository components/image rewrites `trainer` to."""
    text = (ROOT / "components" / "image" / "kustomization.yaml").read_text()
    assert f"newName: {versions.IMAGE_REPOSITORY}" in text
    assert os.path.basename(versions.IMAGE_REPOSITORY) == "trainer"


def test_no_engine_at_all_names_both_and_how_to_get_one(tmp_path):
    proc, calls = run_script(tmp_path, docker=False)
    line = one_line(proc.stderr)
    assert proc.returncode == 3
    assert "`docker` is not on PATH" in line and "`buildah` is not on PATH" in line
    assert "apt-get install buildah" in line


def test_engine_buildah_asked_for_but_missing_is_exit_3(tmp_path):
    proc, calls = run_script(tmp_path, ENGINE="buildah")
    assert proc.returncode == 3
    assert one_line(proc.stderr).startswith("image: ENGINE=buildah: no buildah: `buildah` is not on PATH")
    assert calls == []


def test_without_docker_buildah_builds_to_a_temporary_name_then_tags(tmp_path):
    proc, calls = run_script(tmp_path, docker=False, buildah=True)
    assert proc.returncode == 0, proc.stderr
    assert "image: engine buildah (no Docker engine: `docker` is not on PATH)" in proc.stderr.splitlines()
    bud = next(c for c in calls if c.startswith("buildah bud")).split()
    assert "--layers" in bud and bud[-1] == "."
    tmp = bud[bud.index("--tag") + 1]
    assert tmp.startswith("localhost/torch-k8s/build:gpu-")
    short = git("rev-parse", "--short=12", "HEAD")
    tag = next(c for c in calls if c.startswith("buildah tag")).split()
    assert tag[2] == tmp and tag[3].startswith(f"{versions.IMAGE_REPOSITORY}:{short}")
    assert tag[4] == f"{versions.IMAGE_REPOSITORY}:{versions.IMAGE_TAG}"   # what the manifests run
    assert calls.index(" ".join(tag)) < calls.index(f"buildah rmi {tmp}")


def test_a_failed_buildah_build_tags_nothing(tmp_path):
    proc, calls = run_script(tmp_path, docker=False, buildah=True, mode="bud-fails")
    assert proc.returncode == 9
    assert proc.stderr.strip().splitlines()[-1] == "image: buildah bud failed (exit 9); nothing tagged"
    assert not any(c.startswith(("buildah tag", "buildah push")) for c in calls)


def test_archive_is_written_for_ctr_import(tmp_path):
    archive = tmp_path / "trainer.oci.tar"
    proc, calls = run_script(tmp_path, "--archive", str(archive), docker=False, buildah=True, TARGET="tensorflow")
    assert proc.returncode == 0, proc.stderr
    release = f"{versions.IMAGE_REPOSITORY}:{versions.IMAGE_TAG_TENSORFLOW}"
    assert f"buildah push --quiet {release} oci-archive:{archive}.part:{release}" in calls
    assert archive.read_text() == "archive\n" and not archive.with_name(archive.name + ".part").exists()
    assert proc.stdout.strip() == str(archive)


def test_a_wheel_whose_hash_is_not_the_locks_stops_the_build_naming_it(tmp_path, image_script):
    """Every wheel of the lock is in the cache, but not the bytes PyPI published: one line, exit 1, no build."""
    lock = image_script.image_debian.read_lock(ROOT / "training" / "requirements-image.lock")
    wheels = tmp_path / "cache" / "wheels"
    wheels.mkdir(parents=True)
    for _, name, version, _ in lock:
        (wheels / f"{name.replace('-', '_')}-{version}-py3-none-any.whl").write_text("not the wheel")
    proc, calls = run_script(tmp_path, docker=False, buildah=True, TARGET="gpu-debian",
                             KDT_IMAGE_CACHE=str(tmp_path / "cache"))
    assert proc.returncode == 1
    line = proc.stderr.strip().splitlines()[-1]
    first = lock[0]
    assert line.startswith(f"image: training/requirements-image.lock:{first[0]}: {first[1].replace('-', '_')}-{first[2]}-")
    assert "the lock says" in line and line.endswith("nothing tagged")
    assert not any(c.startswith(("buildah bud", "buildah tag")) for c in calls)


def test_check_wheels_names_the_mismatching_wheel(tmp_path, image_script):
    d = image_script.image_debian
    good, bad = tmp_path / "good-1.0-py3-none-any.whl", tmp_path / "torch-2.13.0-cp311-cp311-linux_x86_64.whl"
    good.write_text("good")
    bad.write_text("tampered")
    lock = tmp_path / "lock"
    lock.write_text(f"good==1.0 \\\n    --hash=sha256:{d._sha256(good)}\n# a comment\n"
                    f"torch==2.13.0 \\\n    --hash=sha256:{'0' * 64}\n")
    entries = d.read_lock(lock)
    assert [(n, name) for n, name, _, _ in entries] == [(1, "good"), (4, "torch")]
    with pytest.raises(d.BuildStop, match=rf"{lock}:4: {bad.name} has sha256 {d._sha256(bad)}, the lock says 0+"):
        d.check_wheels(lock, entries, tmp_path)


def test_a_lock_entry_without_hash_is_one_line(tmp_path, image_script):
    d = image_script.image_debian
    lock = tmp_path / "lock"
    lock.write_text("torch==2.13.0\n")
    with pytest.raises(d.BuildStop, match=r":1: expected `name==version --hash=sha256:...`, got 'torch==2.13.0'"):
        d.read_lock(lock)


def test_an_unreachable_debian_mirror_is_one_line(tmp_path, image_script, monkeypatch):
    """The real debootstrap against a mirror nobody answers at: one line naming it, nothing left behind."""
    d = image_script.image_debian

    class NoImages:
        def has_image(self, ref):
            return False

        def import_rootfs(self, *a, **k):
            raise AssertionError("nothing to import")

    monkeypatch.setenv("KDT_IMAGE_CACHE", str(tmp_path))
    monkeypatch.setenv("DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
    with pytest.raises(d.BuildStop, match=r"^debootstrap bookworm from http://127.0.0.1:9/debian failed: E: .*127.0.0.1:9"):
        d.ensure_base(NoImages())
    assert [p.name for p in tmp_path.iterdir()] == ["debootstrap.log"]


def test_buildah_gets_the_changing_labels_on_its_command_line(tmp_path):
    """buildah 1.28 --layers reuses a cached LABEL step whose build-arg changed: the labels go on the command line."""
    proc, calls = run_script(tmp_path, docker=False, buildah=True)
    assert proc.returncode == 0, proc.stderr
    bud = next(c for c in calls if c.startswith("buildah bud")).split()
    labels = {bud[i + 1] for i, w in enumerate(bud) if w == "--label"}
    assert f"org.opencontainers.image.revision={git('rev-parse', 'HEAD')}" in labels
    assert f"org.opencontainers.image.version={versions.IMAGE_TAG}" in labels

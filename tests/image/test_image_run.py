"""The built images, run by runc: the contract the manifests rely on, checked inside the image itself.

`make test` builds them first with buildah (python3 scripts/image.py --engine buildah --target gpu-debian,
then tensorflow-debian; cached in containers-storage, see docs/image.md); here they are only read and run,
as the kubelet's runtime would: the image's own user, environment, working directory and command.
"""
from __future__ import annotations

import json
import subprocess

import pytest
from image_runtime import Container, inspect
from image_support import ROOT
from kdt import versions

GPU_IMAGE = f"{versions.IMAGE_REPOSITORY}:{versions.IMAGE_TAG}"
TF_IMAGE = f"{versions.IMAGE_REPOSITORY}:{versions.IMAGE_TAG_TENSORFLOW}"

# What a process of the image's user sees: its ids, what it may write, what the code looks like, torch and
# the CUDA libraries its wheel needs (no GPU here: the driver, libcuda.so.1, comes from the node).
PROBE = r"""
import ctypes, glob, importlib.util, json, os, subprocess, sys
out = {"uid": os.getuid(), "gid": os.getgid(), "home": os.environ["HOME"], "writable": {}, "readonly": {}}
for d in ["/checkpoints", "/data", "/out", "/models", os.environ["HOME"], os.environ["HF_HOME"]]:
    try:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, ".probe"), "w") as f:
            f.write("x")
        os.remove(os.path.join(d, ".probe"))
        out["writable"][d] = True
    except OSError as e:
        out["writable"][d] = e.strerror
for d in ["/app", "/app/training", "/app/training/trainkit"]:
    try:
        open(os.path.join(d, ".probe"), "w").close()
        out["readonly"][d] = "written"
    except OSError as e:
        out["readonly"][d] = e.strerror
sources = glob.glob("/app/training/**/*.py", recursive=True)
out["sources"] = len(sources)
out["uncompiled"] = [p for p in sources if not os.path.exists(importlib.util.cache_from_source(p))]
import torch
out["torch"], out["cuda"] = torch.__version__, torch.version.cuda
out["dlopen"] = {}
for lib in ["libcudart.so.13", "libnccl.so.2", "libcudnn.so.9", "libcublas.so.13"]:
    try:
        out["dlopen"][lib] = ctypes.CDLL(lib)._name
    except OSError as e:
        out["dlopen"][lib] = "ERROR " + str(e)
libtorch_cuda = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")
ldd = subprocess.run(["ldd", libtorch_cuda], capture_output=True, text=True).stdout
out["unresolved"] = sorted(l.split()[0] for l in ldd.splitlines() if "not found" in l)
out["resolved"] = {l.split()[0]: l.split()[2] for l in ldd.splitlines() if "=>" in l and "not found" not in l}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def gpu():
    c = Container(GPU_IMAGE)
    yield c
    c.close()


@pytest.fixture(scope="module")
def probe(gpu):
    ran = gpu.run(["python3", "-c", PROBE])
    assert ran.rc == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


def head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_image_is_this_checkouts_build(gpu):
    """The reference the manifests run carries this commit, its version and this checkout's code."""
    labels = gpu.config["Labels"]
    assert labels["org.opencontainers.image.revision"] == head()
    assert labels["org.opencontainers.image.version"] == versions.IMAGE_TAG
    assert labels["io.torch-k8s.image.variant"] == "gpu-debian"
    for sample in sorted((ROOT / "training").glob("*.py")) + sorted((ROOT / "training" / "trainkit").glob("*.py")):
        inside = f"{gpu.rootfs}/app/{sample.relative_to(ROOT)}"
        assert open(inside, "rb").read() == sample.read_bytes(), f"{inside} is not this checkout's {sample.name}"


def test_user_is_numeric_non_root_so_runAsNonRoot_holds(gpu, probe):
    # The kubelet admits runAsNonRoot without a runAsUser only for a numeric, non-zero image user.
    uid, _, gid = gpu.config["User"].partition(":")
    assert (uid, gid) == ("1000", "1000")
    assert (probe["uid"], probe["gid"]) == (1000, 1000)


def test_data_dirs_and_home_caches_are_writable(probe):
    assert probe["home"] == "/home/trainer"
    assert probe["writable"] == {d: True for d in probe["writable"]}, probe["writable"]
    assert set(probe["writable"]) >= {"/checkpoints", "/data", "/out", "/models", "/home/trainer",
                                      "/home/trainer/.cache/huggingface"}


def test_code_is_read_only_and_compiled(probe):
    assert probe["readonly"] == {d: "Permission denied" for d in probe["readonly"]}, probe["readonly"]
    assert probe["sources"] > 10
    assert probe["uncompiled"] == []


def test_torch_is_the_locks_cuda_build_and_its_cuda_libraries_resolve(probe):
    assert probe["torch"].split("+")[0] == "2.13.0"
    assert probe["cuda"], "torch.version.cuda is unset: not a CUDA build"
    assert not [v for v in probe["dlopen"].values() if v.startswith("ERROR")], probe["dlopen"]
    # Every library libtorch_cuda.so links resolves inside the image; the driver (libcuda.so.1, which the
    # node's NVIDIA container toolkit mounts) is opened only when a GPU is used, so it is not among them.
    assert probe["unresolved"] == [], probe["unresolved"]
    for lib in ("libcudart.so.13", "libnccl.so.2"):
        assert "/nvidia/" in probe["resolved"].get(lib, ""), (lib, probe["resolved"])


def test_debian_package_versions_are_recorded_in_the_image(gpu):
    listing = open(f"{gpu.rootfs}/usr/share/torch-k8s/debian-packages.txt").read().splitlines()
    assert any(line.startswith("python3=3.11") for line in listing), listing[:5]
    assert open(f"{gpu.rootfs}/usr/share/torch-k8s/requirements-image.lock").read() == \
        (ROOT / "training" / "requirements-image.lock").read_text()


def test_torchrun_two_ranks_on_cpu_runs_to_the_end(gpu):
    ran = gpu.run(["python3", "-m", "trainkit.torchrun", "--standalone", "--nproc-per-node=2",
                   "/app/training/smoke.py", "--checkpoint-dir=/checkpoints/two-ranks", "--epochs=1", "--samples=512"])
    assert ran.rc == 0, (ran.stdout + ran.stderr)[-3000:]
    done = [line for line in ran.stdout.splitlines() if "[DONE]" in line]
    assert done and "weights_sha256=" in done[-1], ran.stdout[-2000:]


def test_default_command_is_the_smoke_run(gpu):
    assert gpu.config["Cmd"][:3] == ["python3", "-m", "trainkit.torchrun"]
    ran = gpu.run()
    assert ran.rc == 0, (ran.stdout + ran.stderr)[-3000:]
    assert "[DONE]" in ran.stdout


def test_tensorflow_image_imports_and_its_sample_answers_help():
    c = Container(TF_IMAGE)
    try:
        assert c.config["User"] == "1000:1000"
        assert c.config["Labels"]["org.opencontainers.image.revision"] == head()
        assert c.config["Labels"]["org.opencontainers.image.version"] == versions.IMAGE_TAG
        ran = c.run(["python3", "-c", "import tensorflow as tf; print('tf', tf.__version__)"])
        assert ran.rc == 0, ran.stderr[-3000:]
        assert f"tf {versions.TENSORFLOW}" in ran.stdout
        ran = c.run()    # the default command: tf_mnist.py --help
        assert ran.rc == 0 and "usage:" in ran.stdout, (ran.stdout + ran.stderr)[-2000:]
    finally:
        c.close()


def test_inspect_names_the_build_command_when_the_image_is_missing():
    with pytest.raises(AssertionError, match="scripts/image.py --engine buildah"):
        inspect(f"{versions.IMAGE_REPOSITORY}:no-such-tag-kdt")

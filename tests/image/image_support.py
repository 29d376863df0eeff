"""Fixtures for the training image tests: the Dockerfile read once, the build script as a module."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (str(HERE), str(ROOT / "src")):
    if p not in sys.path:
        sys.path.insert(0, p)

from image_layout import Dockerfile, DockerIgnore  # noqa: E402

DOCKERFILE = ROOT / "training" / "Dockerfile"
DOCKERFILE_TENSORFLOW = ROOT / "training" / "Dockerfile.tensorflow"
IMAGE_SCRIPT = ROOT / "scripts" / "image.py"


def load_image_script():
    spec = importlib.util.spec_from_file_location("image_script", IMAGE_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def image_script():
    return load_image_script()


@pytest.fixture(scope="session")
def dockerfile() -> Dockerfile:
    return Dockerfile.read(DOCKERFILE)


@pytest.fixture(scope="session")
def layouts(dockerfile, image_script):
    """The final image's layout for every variant `make image TARGET=` builds."""
    return {v: dockerfile.layout(VARIANT=v) for v in image_script.VARIANTS}


@pytest.fixture(scope="session")
def tf_layouts():
    """The TensorFlow variant's layout (training/Dockerfile.tensorflow, `make image TARGET=tensorflow`)."""
    return {"tensorflow": Dockerfile.read(DOCKERFILE_TENSORFLOW).layout()}


@pytest.fixture(scope="session")
def dockerignore() -> DockerIgnore:
    return DockerIgnore.read(ROOT / ".dockerignore")

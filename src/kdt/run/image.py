"""What the project's own image gives a container, read from its Dockerfile (one fact, one place).

The image (kdt.versions.IMAGE_REPOSITORY) is built from training/Dockerfile, and
its `-tensorflow` tag from training/Dockerfile.tensorflow (scripts/image.py).
A local run gives a container of that image the Dockerfile's last ENV values,
its WORKDIR and CMD, with `/app/training` being the repository's `training/`.
Any other image gives nothing: its command runs as a program of this machine.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from .. import versions

APP_TRAINING = "/app/training"
# How to fill the claims a sample of the image reads, for a run without a cluster: the script named in a
# command -> what writes its inputs offline (training/make_tiny_llm.py: a random-weight Llama, its tokenizer
# and JSONL data; docs/llm-finetune.md).
FILLERS = {
    "llm_finetune.py": ("python3 training/make_tiny_llm.py DIR --name base writes them offline, then "
                        "--volume datasets-pvc=DIR/data --volume models-pvc=DIR/models (docs/llm-finetune.md)"),
}


@dataclass
class ImageFacts:
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = ""
    cmd: list[str] = field(default_factory=list)
    entrypoint: list[str] = field(default_factory=list)
    dockerfile: Path | None = None


def dockerfile_for(image: str, root: Path) -> Path | None:
    repo, _, tag = str(image).rpartition(":") if ":" in str(image).rsplit("/", 1)[-1] else (str(image), "", "")
    if repo.split("@")[0] != versions.IMAGE_REPOSITORY:
        return None
    name = "Dockerfile.tensorflow" if tag.endswith("-tensorflow") else "Dockerfile"
    path = root / "training" / name
    return path if path.is_file() else None


def _instructions(text: str):
    """(INSTRUCTION, rest) with continuation lines joined and comment lines inside them dropped."""
    buf: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") or (not line and not buf):
            continue
        cont = line.endswith("\\")
        buf.append(line[:-1].strip() if cont else line)
        if not cont:
            joined = " ".join(x for x in buf if x)
            buf = []
            word, _, rest = joined.partition(" ")
            yield word.upper(), rest.strip()


def _json_or_shell(rest: str) -> list[str]:
    try:
        value = json.loads(rest)
        if isinstance(value, list):
            return [str(v) for v in value]
    except ValueError:
        pass
    return ["/bin/sh", "-c", rest]


def facts(image: str, root: Path) -> ImageFacts:
    path = dockerfile_for(image, root)
    out = ImageFacts(dockerfile=path)
    if path is None:
        return out
    for word, rest in _instructions(path.read_text()):
        if word == "FROM":
            out = ImageFacts(dockerfile=path)     # a new stage: only the last one is the image
        elif word == "ENV":
            if "=" in rest.split(" ", 1)[0]:
                for item in shlex.split(rest):
                    k, _, v = item.partition("=")
                    out.env[k] = v
            else:
                k, _, v = rest.partition(" ")
                out.env[k] = v.strip()
        elif word == "WORKDIR":
            out.workdir = rest
        elif word == "CMD":
            out.cmd = _json_or_shell(rest)
        elif word == "ENTRYPOINT":
            out.entrypoint = _json_or_shell(rest)
    return out

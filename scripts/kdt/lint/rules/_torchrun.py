"""How a container's torchrun is configured, as far as the manifest says (not a rule)."""
from __future__ import annotations

import re

from ..pods import as_int, command_line
from ._util import d, lst

_RESTART_FLAGS = ("--max-restarts", "--max_restarts")
_BACKEND_FLAGS = ("--rdzv-backend", "--rdzv_backend")


def _tokens(cmd: list[str]) -> list[str]:
    """Words of a command line, also inside `sh -c` strings."""
    return [t.strip("'\";") for part in cmd for t in str(part).split()]


def flag(cmd: list[str], names: tuple[str, ...]) -> str | None:
    """The last value given to any of `names` (`--x=v` or `--x v`); None if absent."""
    tokens = _tokens(cmd)
    found = None
    for i, t in enumerate(tokens):
        key, eq, val = t.partition("=")
        if key in names:
            found = val if eq else (tokens[i + 1] if i + 1 < len(tokens) else None)
    return found.strip("'\";") if found is not None else None


def max_restarts(cmd: list[str]) -> int | None:
    return as_int(flag(cmd, _RESTART_FLAGS))


def env_value(c: dict, name: str):
    for e in lst(c.get("env")):
        if d(e).get("name") == name:
            return d(e).get("value")
    return None


def restarts(doc, c: dict) -> tuple[int, str] | None:
    """(count, where it comes from) when this container's torchrun restarts workers in place."""
    n = max_restarts(command_line(c))
    if n:
        return n, f"--max-restarts={n}"
    n = as_int(env_value(c, "PET_MAX_RESTARTS"))
    if n:
        return n, f"PET_MAX_RESTARTS={n}"
    if doc.kind == "PyTorchJob" and c.get("name") == "pytorch":
        n = as_int(doc.get(("spec", "elasticPolicy", "maxRestarts")))
        if n:
            return n, f"elasticPolicy.maxRestarts={n}"
    return None


def rdzv_backend(doc, c: dict) -> str:
    """The rendezvous backend torchrun will use: the flag, PET_RDZV_BACKEND, the operator's, else static."""
    cmd = command_line(c)
    if "--standalone" in _tokens(cmd):
        return "c10d"
    value = flag(cmd, _BACKEND_FLAGS) or env_value(c, "PET_RDZV_BACKEND")
    if value:
        return str(value)
    if doc.kind == "PyTorchJob" and isinstance(doc.get(("spec", "elasticPolicy")), dict):
        return str(doc.get(("spec", "elasticPolicy", "rdzvBackend")) or "c10d")   # the operator's PET_RDZV_BACKEND
    return "static"


# Words of a command line that start distributed PyTorch training.
_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "trainkit.torchrun")
# Environment a distributed training container reads (torchrun's PET_*, the process-group env).
_DIST_ENV = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_RDZV_ENDPOINT", "MASTER_ADDR", "WORLD_SIZE")


def launches_distributed(c: dict) -> bool:
    """Whether a container runs distributed PyTorch training: a torchrun launcher or its environment."""
    tokens = _tokens(command_line(c))
    if any(t in _LAUNCHERS or t.endswith("/torchrun") for t in tokens):
        return True
    names = {d(e).get("name") for e in lst(c.get("env"))}
    return any(n in names for n in _DIST_ENV)


# The torch release an image carries, where its name says it:
#   pytorch/pytorch:2.4.1-cuda12.1-cudnn9-runtime   (the official images: the tag starts with the torch version)
#   any/image:torch2.3-..., any/image:v1-pt2.3      (a `torch` or `pt` word followed by the version)
_OFFICIAL = re.compile(r"^(?:(?:docker\.io|index\.docker\.io)/)?pytorch/pytorch(?:-nightly)?:v?(\d+)\.(\d+)")
_TAGGED = re.compile(r":(?:.*[^a-z])?(?:torch|pt)-?v?(\d+)\.(\d+)", re.IGNORECASE)


def image_torch_version(image: str) -> tuple[int, int] | None:
    """(major, minor) of torch in `image` when its name or tag says it; None when it cannot be read."""
    image = str(image or "").split("@")[0]
    m = _OFFICIAL.match(image) or _TAGGED.search(image)
    return (int(m.group(1)), int(m.group(2))) if m else None

"""How a container's torchrun is configured, as far as the manifest says (not a rule)."""
from __future__ import annotations

import re

from ... import kinds as K
from ...operators.training_operator_v1 import facts as TO1
from ...operators.torchrun import LAUNCHERS as _LAUNCHERS, rdzv_conf
from ..pods import as_int, command_line, runtime_for
from ._util import d, lst, replica_specs

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
    if K.PYTORCHJOB.matches(doc) and c.get("name") == TO1.CONTAINER_NAME:
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
    if K.PYTORCHJOB.matches(doc) and isinstance(doc.get(("spec", "elasticPolicy")), dict):
        return str(doc.get(("spec", "elasticPolicy", "rdzvBackend")) or "c10d")   # the operator's PET_RDZV_BACKEND
    return "static"


# Words of a command line that start distributed PyTorch training: kdt.operators.torchrun.LAUNCHERS.
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


_REF = re.compile(r"\$(?:\{(\w+)\}|\((\w+)\)|(\w+))")


def expand_env(text: str, c: dict) -> str:
    """`${NAME}`, `$(NAME)` and `$NAME` replaced by the container's literal env value (others kept)."""
    def one(m):
        value = env_value(c, next(g for g in m.groups() if g))
        return str(value) if value is not None else m.group(0)
    return _REF.sub(one, str(text))


_conf = rdzv_conf     # kdt.operators.torchrun: how torchrun reads --rdzv-conf


def rdzv_settings(doc, c: dict) -> tuple[dict[str, str], str]:
    """The rendezvous settings torchrun gets (`--rdzv-conf`, else PET_RDZV_CONF, else a PyTorchJob's
    elasticPolicy.rdzvConf, which the operator passes as PET_RDZV_CONF), and where they come from."""
    cmd = command_line(c)
    value = flag(cmd, ("--rdzv-conf", "--rdzv_conf"))
    if value is not None:
        return _conf(expand_env(value, c)), "--rdzv-conf"
    value = env_value(c, "PET_RDZV_CONF")
    if value is not None:
        return _conf(value), "PET_RDZV_CONF"
    if K.PYTORCHJOB.matches(doc):
        pairs = {str(d(p).get("key")): str(d(p).get("value")) for p in lst(doc.get(("spec", "elasticPolicy", "rdzvConf")))}
        if pairs:
            return pairs, "elasticPolicy.rdzvConf"
    return {}, ""


def node_count(doc, c: dict, replicas: int | None, pool) -> int | None:
    """The most nodes the rendezvous waits for: `--nnodes` (MAX of MIN:MAX), PET_NNODES, else the
    workload's (a PyTorchJob's sum of replicas or elasticPolicy.maxReplicas, a TrainJob's numNodes,
    the pod template's replicas); None for a value the manifest does not spell out."""
    raw = flag(command_line(c), ("--nnodes",)) or env_value(c, "PET_NNODES")
    if raw is not None:
        raw = expand_env(raw, c)                 # ${NNODES} of a literal env NNODES
        n = as_int(str(raw).split(":")[-1])
        if n is not None:
            return n
        if not str(raw).startswith("$(PET_NNODES"):
            return None                          # a shell variable: not guessed
    if K.PYTORCHJOB.matches(doc):
        top = as_int(doc.get(("spec", "elasticPolicy", "maxReplicas")))
        return top or sum(as_int(d(r).get("replicas", 1)) or 0 for r in replica_specs(doc).values())
    if K.TRAINJOB.matches(doc):
        n = as_int(doc.get(("spec", "trainer", "numNodes")))
        if n is None:
            runtime = runtime_for(doc, pool)
            n = as_int(runtime.get(("spec", "mlPolicy", "numNodes"))) if runtime is not None else None
        return n
    return replicas


def setting_path(path: tuple, c: dict, key: str, where: str = "--rdzv-conf") -> tuple:
    """Where `key=` is written, given where rdzv_settings found the settings: a PyTorchJob's
    elasticPolicy.rdzvConf, the container's env (PET_RDZV_CONF), else the command or args word (a
    `sh -c` script as a whole), the literal env value a `$(VAR)` of the command line brings in, or the
    command. `path` is the container's path."""
    if where == "elasticPolicy.rdzvConf":
        return ("spec", "elasticPolicy", "rdzvConf")
    if where == "PET_RDZV_CONF":
        return path + ("env",)
    for part in ("command", "args"):
        for i, word in enumerate(lst(c.get(part))):
            if f"{key}=" in str(word):
                return path + (part, i)
    for i, e in enumerate(lst(c.get("env"))):
        if f"{key}=" in str(d(e).get("value", "")):
            return path + ("env", i, "value")
    return path + (("command",) if "command" in c else ("args",) if "args" in c else ())

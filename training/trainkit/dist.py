"""The torchrun environment, device/backend choice and determinism switches.

Reads only what torchrun (or the Kubeflow operators through torchrun) puts in
the environment: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``TORCHELASTIC_RESTART_COUNT``,
``MASTER_ADDR``/``MASTER_PORT``. A script started with plain ``python`` runs
as a world of one.
"""
from __future__ import annotations

import os
import random
import socket
import sys
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from .log import log


@dataclass(frozen=True)
class DistEnv:
    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    group_rank: int
    restart_count: int
    device: torch.device
    backend: str

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def num_nodes(self) -> int:
        return max(1, self.world_size // max(1, self.local_world_size))


def _int_env(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def read_env() -> dict:
    """The torchrun variables, with the defaults of a world of one."""
    return {
        "rank": _int_env("RANK", 0),
        "local_rank": _int_env("LOCAL_RANK", 0),
        "world_size": _int_env("WORLD_SIZE", 1),
        "local_world_size": _int_env("LOCAL_WORLD_SIZE", 1),
        "group_rank": _int_env("GROUP_RANK", 0),
        "restart_count": _int_env("TORCHELASTIC_RESTART_COUNT", 0),
    }


def pick_device(prefer: str = "auto", local_rank: int = 0) -> tuple[torch.device, str]:
    """``cuda:LOCAL_RANK`` with NCCL when GPUs exist, otherwise ``cpu`` with gloo."""
    if prefer not in ("auto", "cpu", "cuda"):
        raise ValueError(prefer)
    use_cuda = prefer == "cuda" or (prefer == "auto" and torch.cuda.is_available())
    if use_cuda:
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda asked for, but no GPU is visible")
        return torch.device("cuda", local_rank % torch.cuda.device_count()), "nccl"
    return torch.device("cpu"), "gloo"


def process_age_s() -> float | None:
    """Seconds since this process was created (forked or exec'd); None where /proc is missing."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return round(max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK")), 2)
    except (OSError, ValueError, IndexError):
        return None


def worker_start() -> str:
    """"warm": forked by trainkit.torchrun's fork server with torch preloaded; "cold": a fresh interpreter."""
    return "warm" if "trainkit.warm" in sys.modules else "cold"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed(prefer_device: str = "auto", timeout_s: float | None = None,
                     mode: str = "ddp") -> DistEnv:
    """Initialise the default process group from the torchrun environment.

    On GPUs the group is ``cpu:gloo,cuda:nccl`` so that CPU-side collectives
    (checkpoint coordination, asynchronous DCP saves) have a backend too.
    """
    env = read_env()
    if "WORLD_SIZE" not in os.environ:  # plain `python sample.py`: a world of one
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        os.environ.setdefault("RANK", "0")
        os.environ.setdefault("WORLD_SIZE", "1")
    device, backend = pick_device(prefer_device, env["local_rank"])
    if timeout_s is None:
        timeout_s = float(os.environ.get("TRAINKIT_PG_TIMEOUT", "600"))
    if device.type == "cuda":
        torch.cuda.set_device(device)
        pg_backend = "cpu:gloo,cuda:nccl"
    else:
        pg_backend = "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=pg_backend, rank=env["rank"], world_size=env["world_size"],
                                timeout=timedelta(seconds=timeout_s))
    denv = DistEnv(device=device, backend=backend, **env)
    log("DDP", rank=denv.rank, world_size=denv.world_size, local_rank=denv.local_rank,
        local_world_size=denv.local_world_size, group_rank=denv.group_rank,
        restart=denv.restart_count, backend=backend, device=str(device), mode=mode,
        pid=os.getpid(), host=socket.gethostname(), start=worker_start(), startup_s=process_age_s(),
        threads=torch.get_num_threads())
    return denv


def cleanup() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def set_determinism(seed: int, deterministic: bool) -> None:
    """Seed every generator; with ``deterministic``, also forbid nondeterministic kernels."""
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np
        np.random.seed(seed % (2**32))
    except ImportError:  # pragma: no cover
        pass
    if deterministic:
        # cuBLAS needs a fixed workspace to be deterministic; harmless on CPU.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True


def rng_state(device: torch.device) -> dict:
    """This process's random generator states (Python, NumPy, torch CPU and CUDA)."""
    state = {"python": random.getstate(), "torch": torch.get_rng_state()}
    try:
        import numpy as np
        state["numpy"] = np.random.get_state()
    except ImportError:  # pragma: no cover
        pass
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy as np
        np.random.set_state(state["numpy"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)

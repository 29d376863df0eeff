"""Resources a pod asks for, as the summary, lint and the operators count them: GPUs, CPU, memory.

One GPU counter for every stage: a resource whose name ends in `/gpu` (nvidia.com/gpu, amd.com/gpu,
...), the larger of limits and requests (a GPU request must equal its limit: extended resources,
Kubernetes core/v1 ResourceRequirements).
"""
from __future__ import annotations

from typing import Any

from .fields import as_dict, as_int, as_list, quantity

GPU_SUFFIX = "/gpu"


def resources(c: dict) -> dict:
    """A container's resources; a TrainJob's trainer carries them as resourcesPerNode."""
    return as_dict(c.get("resources") or c.get("resourcesPerNode"))


def container_gpus(c: dict) -> int:
    res = resources(c)
    best = 0
    for section in ("limits", "requests"):
        for name, v in as_dict(res.get(section)).items():
            if str(name).endswith(GPU_SUFFIX):
                best = max(best, as_int(v, 0))
    return best


def pod_gpus(pod_spec: dict, container_name: str | None = None) -> int:
    return sum(container_gpus(c) for c in as_list(pod_spec.get("containers"))
               if isinstance(c, dict) and (container_name is None or c.get("name") == container_name))


def pod_requests(pod_spec: dict) -> tuple[float, float]:
    """(CPU cores, memory bytes) the pod's containers request."""
    cpu = mem = 0.0
    for c in as_list(pod_spec.get("containers")):
        if isinstance(c, dict):
            req = as_dict(as_dict(c.get("resources")).get("requests"))
            cpu += quantity(req.get("cpu"))
            mem += quantity(req.get("memory"))
    return cpu, mem


def procs_per_node(value: Any, gpus: int) -> tuple[str, int]:
    """(as shown, count) of a processes-per-node setting: an integer, or auto/gpu (one per GPU, 1 on CPU)."""
    n = as_int(value)
    if n:
        return str(n), n
    if value in (None, "auto", "gpu"):
        return ("auto" if value != "gpu" else "gpu"), (gpus or 1)
    return str(value), 1

"""trainkit: launch, checkpoint and recovery helpers shared by the training samples.

Imported from the samples' own folder (``/app/training/trainkit`` in the
image); reads only the torchrun environment, knows nothing of Kubernetes.

The torch-free modules (args, checkpoint, log) are imported here; the ones
that need torch (dist, loop, sampler) on first use of one of their names
(PEP 562), so ``trainkit.log`` and ``trainkit.mnist_data`` import without torch:
the TensorFlow sample shares them in an image that has no torch. (``log`` is
bound here, eagerly, so that it stays the function, not the submodule.)
"""
from __future__ import annotations

import importlib

from .args import add_common_args
from .checkpoint import (CheckpointInfo, CheckpointManager, atomic_write, clean_stale, inspect_checkpoint,
                         latest_checkpoint, list_checkpoints, prune)
from .log import format_line, log, parse_line

_EAGER = ["add_common_args", "CheckpointInfo", "CheckpointManager", "atomic_write", "clean_stale", "inspect_checkpoint",
          "latest_checkpoint", "list_checkpoints", "prune", "format_line", "log", "parse_line"]
_WHERE = {
    **dict.fromkeys(("DistEnv", "cleanup", "init_distributed", "pick_device", "read_env", "set_determinism"), "dist"),
    **dict.fromkeys(("PREEMPT_EXIT_CODE", "PreemptionHandler", "Trainer", "TrainResult", "weights_digest"), "loop"),
    **dict.fromkeys(("Batch", "ElasticSampler"), "sampler"),
}
__all__ = _EAGER + list(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'trainkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))

"""trainkit: launch, checkpoint and recovery helpers shared by the training samples.

Imported from the samples' own folder (``/app/training/trainkit`` in the
image); reads only the torchrun environment, knows nothing of Kubernetes.

Names are loaded on first use (PEP 562), so a torch-free submodule
(``trainkit.log``, ``trainkit.mnist_data``) imports without torch: the
TensorFlow sample shares them in an image that has no torch.
"""
from __future__ import annotations

import importlib

_WHERE = {
    "add_common_args": "args",
    **dict.fromkeys(("CheckpointInfo", "CheckpointManager", "atomic_write", "clean_stale", "inspect_checkpoint",
                     "latest_checkpoint", "list_checkpoints", "prune"), "checkpoint"),
    **dict.fromkeys(("DistEnv", "cleanup", "init_distributed", "pick_device", "read_env", "set_determinism"), "dist"),
    **dict.fromkeys(("format_line", "log", "parse_line"), "log"),
    **dict.fromkeys(("PREEMPT_EXIT_CODE", "PreemptionHandler", "Trainer", "TrainResult", "weights_digest"), "loop"),
    **dict.fromkeys(("Batch", "ElasticSampler"), "sampler"),
}
__all__ = list(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'trainkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))

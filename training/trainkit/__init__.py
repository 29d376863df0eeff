"""trainkit: launch, checkpoint and recovery helpers shared by the training samples.

Imported from the samples' own folder (``/app/training/trainkit`` in the
image); reads only the torchrun environment, knows nothing of Kubernetes.
"""
from .args import add_common_args
from .checkpoint import (CheckpointInfo, CheckpointManager, atomic_write, clean_stale, inspect_checkpoint,
                         latest_checkpoint, list_checkpoints, prune)
from .dist import DistEnv, cleanup, init_distributed, pick_device, read_env, set_determinism
from .log import format_line, log, parse_line
from .loop import PREEMPT_EXIT_CODE, PreemptionHandler, Trainer, TrainResult, weights_digest
from .sampler import Batch, ElasticSampler

__all__ = [
    "add_common_args", "CheckpointInfo", "CheckpointManager", "atomic_write", "clean_stale",
    "inspect_checkpoint", "latest_checkpoint", "list_checkpoints", "prune", "DistEnv", "cleanup",
    "init_distributed", "pick_device", "read_env", "set_determinism", "format_line", "log", "parse_line",
    "PREEMPT_EXIT_CODE", "PreemptionHandler", "Trainer", "TrainResult", "weights_digest", "Batch",
    "ElasticSampler",
]

"""torchtune on Trainer v2: the command the torch plugin writes for `tune run`, and what its webhook refuses.

A TrainJob whose trainer command is `tune run` gets no PET_MASTER_* env; the torch plugin appends to the
command a rendezvous endpoint (multi-node or multi-device), the recipe and `--config` file chosen from
the node count, processes, GPUs and the LoRA/QLoRA args, and the runtime's immutable settings
(pkg/runtime/framework/plugins/torch/torch.go EnforceMLPolicy, torchtune.go getRecipeAndConfig,
extractOverridesFromRuntime, validateTorchTune; constants in pkg/constants/constants.go), at v2.1.0 and
v2.3.0 (differences noted). What the recipes themselves do in the container is torchtune's, not modelled.
"""
from __future__ import annotations

from .shapes import Shape
from .facts import NODE, TORCHTUNE_ENTRYPOINT, TRAINER_PORT

ARG_RDZV_ENDPOINT = "--rdzv_endpoint"
ARG_CONFIG = "--config"
FULL_SINGLE, FULL_SINGLE_SUFFIX = "full_finetune_single_device", "_full_single_device"
FULL_DISTRIBUTED = "full_finetune_distributed"
FULL_MULTI_DEVICES_SUFFIX, FULL_MULTI_NODES_SUFFIX = "_full", "_full_multinode"
LORA_SINGLE, LORA_SINGLE_SUFFIX, QLORA_SINGLE_SUFFIX = "lora_finetune_single_device", "_lora_single_device", "_qlora_single_device"
LORA_DISTRIBUTED, LORA_DISTRIBUTED_SUFFIX, QLORA_DISTRIBUTED_SUFFIX = "lora_finetune_distributed", "_lora", "_qlora"
LORA_ATTN_MODULES = "model.lora_attn_modules"
QUANTIZE_BASE = "model.quantize_base"
USE_DORA = "model.use_dora"
# TorchTuneImmutableConfigs: what the runtime's `node` command sets and the trainer args may not.
IMMUTABLE_CONFIGS = frozenset({"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"})
LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B = "llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B"
SUPPORTED_MODELS = frozenset({LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B})


def is_torchtune(command) -> bool:
    return isinstance(command, list) and command == TORCHTUNE_ENTRYPOINT


def model_of(runtime_name: str) -> str:
    """getModelFromRuntimeRef: `torchtune-llama3.2-1b` -> `llama3_2/1B` ("" unless three dash-separated parts)."""
    parts = str(runtime_name).split("-")
    if len(parts) != 3:
        return ""
    return f"{parts[1].replace('.', '_')}/{parts[2].upper()}"


def _lora(args: list) -> bool:
    return any(LORA_ATTN_MODULES in str(a) for a in args)


def _bool_arg(args: list, item: str) -> bool:
    for a in args:
        name, sep, value = str(a).partition("=")
        if sep and item in name and value.strip().lower() == "true":
            return True
    return False


def _qlora(args: list, shape: Shape) -> bool:
    """isUseQLoraFinetune: 2.3 reads `key=True` values (DoRA on means no QLoRA); 2.1 only looked for the keys."""
    if not shape.torchtune_reads_values:
        quantize = False
        for a in args:
            if USE_DORA in str(a):
                return False
            if QUANTIZE_BASE in str(a):
                quantize = True
        return quantize
    return not _bool_arg(args, USE_DORA) and _bool_arg(args, QUANTIZE_BASE)


def recipe_and_config(nodes: int, nproc, gpus: int, args: list, runtime_name: str, shape: Shape) -> tuple[str, str]:
    """getRecipeAndConfig. `nproc` is an int, or a word ("auto", ...) for intstr's string form."""
    one_device = isinstance(nproc, int) and nproc == 1 or gpus == 1
    recipe, suffix = FULL_DISTRIBUTED, FULL_MULTI_DEVICES_SUFFIX
    if nodes == 1 and one_device:
        if _qlora(args, shape):
            recipe, suffix = LORA_SINGLE, QLORA_SINGLE_SUFFIX
        elif _lora(args):
            recipe, suffix = LORA_SINGLE, LORA_SINGLE_SUFFIX
        else:
            recipe, suffix = FULL_SINGLE, FULL_SINGLE_SUFFIX
    elif nodes == 1 and _qlora(args, shape):
        recipe, suffix = LORA_DISTRIBUTED, QLORA_DISTRIBUTED_SUFFIX
    elif nodes == 1 and _lora(args):
        recipe, suffix = LORA_DISTRIBUTED, LORA_DISTRIBUTED_SUFFIX
    elif nodes > 1:
        suffix = FULL_MULTI_NODES_SUFFIX
    return recipe, f"{model_of(runtime_name)}{suffix}"


def command(trainjob: str, nodes: int, nproc, gpus: int, args: list, runtime_name: str, node_command: list,
            shape: Shape) -> list[str]:
    """What EnforceMLPolicy appends to `tune run`: the rendezvous endpoint (several nodes, or several
    processes or GPUs on one), recipe, `--config`, and the immutable settings of the runtime's `node` command."""
    out = []
    if nodes > 1 or (isinstance(nproc, int) and nproc > 1) or (not isinstance(nproc, int) and gpus > 1):
        out.append(f"{ARG_RDZV_ENDPOINT}={trainjob}-{NODE}-0-0.{trainjob}:{TRAINER_PORT}")
    recipe, config = recipe_and_config(nodes, nproc, gpus, args, runtime_name, shape)
    out += [recipe, ARG_CONFIG, config]
    out += [str(c) for c in node_command or [] if str(c).split("=")[0] in IMMUTABLE_CONFIGS]
    return out


def rejections(runtime_name: str, nodes: int, nproc, gpus: int, args: list, shape: Shape) -> list[tuple[tuple, str]]:
    """validateTorchTune: (path, message) of what the webhook refuses of a `tune run` TrainJob."""
    out = []
    model = model_of(runtime_name)
    if model not in SUPPORTED_MODELS:
        out.append((("spec", "runtimeRef", "name"),
                    f"must have a supported pretrained model, invalid model configured: {model}"))
    if nodes > 1 and model != LLAMA3_3_70B:
        out.append((("spec", "trainer", "numNodes"), f"must be 1 for {model} model"))
    _, config = recipe_and_config(nodes, nproc, gpus, args, runtime_name, shape)
    if QLORA_DISTRIBUTED_SUFFIX in config:
        if model == QWEN2_5_1_5B:
            out.append((("spec", "runtimeRef", "name"), f"QLoRA is not supported for {model} model"))
        if QLORA_SINGLE_SUFFIX not in config and model in (LLAMA3_2_1B, LLAMA3_2_3B):
            out.append((("spec", "trainer", "numProcPerNode"), f"must be auto or 1 for {model} model when using QLoRA"))
            out.append((("spec", "trainer", "resourcesPerNode"),
                        f"must have gpu resource with value 1 for {model} model when using QLoRA"))
    if shape.torchtune_single_node_lora:
        if nodes > 1 and (_lora(args) or _qlora(args, shape)):
            out.append((("spec", "trainer", "numNodes"),
                        "LoRA fine-tuning is not supported for multi-node training in TorchTune"))
        for i, a in enumerate(args):
            key = str(a).split("=", 1)[0]
            if key in IMMUTABLE_CONFIGS:
                out.append((("spec", "trainer", "args", i),
                            f"must not set immutable config {key!r} in trainer args; it is managed by the runtime"))
    return out

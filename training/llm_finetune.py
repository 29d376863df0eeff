#!/usr/bin/env python3
"""Causal-LM fine-tuning (LoRA or full) with torchrun: DDP, or FSDP2 for models that do not fit one device.

    torchrun --nnodes=$NNODES --nproc_per_node=$NPROC_PER_NODE ... training/llm_finetune.py \\
        --model-local-dir /models/llama --tokenizer-local-dir /models/llama --local-files-only \\
        --train-file /data/train.jsonl --val-file /data/val.jsonl --output-dir /out/my-run

Data (trainkit/textdata.py): JSON lines of ``{"text"}``, ``{"prompt", "completion"}`` or chat
``{"messages"}`` (rendered by the tokenizer's chat template), mixed freely; read lazily through a byte
offset index; loss on completion / assistant tokens only where the record has them; records packed into
rows of ``--seq-len`` tokens (a block-diagonal mask, positions restarting per record) or, with
``--no-packing``, padded per micro-batch. The data order is trainkit's ElasticSampler: deterministic,
resumed mid-epoch from the checkpoint's position.

Model: ``--model-local-dir`` (and ``--tokenizer-local-dir``) load a folder with ``from_pretrained``;
``--model-id`` a hub id, with ``HUGGINGFACE_HUB_TOKEN`` for gated models; ``--local-files-only`` never
contacts the hub. ``--finetune lora`` (peft; the adapter is what is saved) or ``full``. Precision:
bf16 on GPUs that have it (autocast under DDP, FSDP2's mixed precision), fp32 on CPU. Gradient
accumulation (``--micro-batch-size``) synchronises gradients once per step; ``--max-grad-norm``
clips; the learning rate warms up linearly and decays on a cosine.

Outputs under ``--output-dir`` (seed 003's ``/out/<run>``): ``checkpoints/`` (trainkit: atomic,
resumable), ``best`` (a symlink to the model or adapter of the lowest validation loss so far, with
its tokenizer and ``best.json``), ``final/`` and ``report.json`` (tokens/s, steps, best perplexity,
wall time, peak memory). Validation loss and perplexity at every epoch end and every ``--eval-every``
steps. MLflow when ``MLFLOW_TRACKING_URI`` is set (trainkit/tracking.py).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from trainkit import (ElasticSampler, Trainer, add_common_args, atomic_write, clean_stale, cleanup,  # noqa: E402
                      init_distributed, log, set_determinism)
from trainkit.args import check_ft_args  # noqa: E402
from trainkit.checkpoint import fsync_dir, swap_in, tmp_sibling  # noqa: E402
from trainkit.textdata import IGNORE, DataError, Item, JsonlIndex, TokenizedSet, check_tokenizer, collate  # noqa: E402
from trainkit.tracking import Tracker  # noqa: E402

PROG = "llm_finetune"
BEST_LINK = "best"


class UsageError(Exception):
    """A problem with the flags or the model/tokenizer folders: one line, exit 2."""


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_common_args(p, epochs=1, batch_size=8, lr=2e-4, checkpoint_every=50)
    m = p.add_argument_group("model")
    m.add_argument("--model-id", default=None, help="hub id (or local folder) of the base model")
    m.add_argument("--model-local-dir", default=None,
                   help="folder of a model snapshot (config.json + weights), e.g. /models/<name>")
    m.add_argument("--tokenizer-local-dir", default=None,
                   help="folder of the tokenizer (default: the model's folder or id)")
    m.add_argument("--local-files-only", action="store_true",
                   help="never contact the hub (offline clusters; set with /models)")
    m.add_argument("--finetune", choices=("lora", "full"), default="lora",
                   help="lora: train a LoRA adapter on the frozen model (peft); full: every weight")
    m.add_argument("--lora-r", type=int, default=16, help="LoRA rank")
    m.add_argument("--lora-alpha", type=int, default=32, help="LoRA scaling numerator")
    m.add_argument("--lora-dropout", type=float, default=0.05, help="dropout on the LoRA input")
    m.add_argument("--lora-target-modules", default="all-linear",
                   help="comma-separated module names, or all-linear (every linear layer but the output head)")
    m.add_argument("--parallel", choices=("ddp", "fsdp"), default="ddp",
                   help="ddp: a full replica per process; fsdp: FSDP2, parameters, gradients and optimizer "
                        "state sharded over all processes (per decoder layer)")
    m.add_argument("--precision", choices=("bf16", "fp32"), default=None,
                   help="default: bf16 on GPUs that support it, fp32 on CPU")
    m.add_argument("--activation-checkpointing", action="store_true", help="recompute activations in backward")
    m.add_argument("--attn-implementation", default="sdpa", help="attention kernel (sdpa, eager, flash_attention_2)")
    m.add_argument("--compile", action="store_true",
                   help="torch.compile each decoder layer's forward (the FSDP2 and checkpointing hooks stay eager)")
    m.add_argument("--reshard-after-forward", action=argparse.BooleanOptionalAction, default=True,
                   help="--parallel fsdp: free each layer's gathered parameters after its forward (ZeRO-3); "
                        "--no-reshard-after-forward keeps them until backward (more memory, fewer all-gathers)")
    d = p.add_argument_group("data")
    d.add_argument("--train-file", default="/data/train.jsonl", help="training JSON lines")
    d.add_argument("--val-file", default="/data/val.jsonl", help="validation JSON lines ('' to skip validation)")
    d.add_argument("--seq-len", type=int, default=1024, help="tokens per row (packing) / longest record kept")
    d.add_argument("--packing", action=argparse.BooleanOptionalAction, default=True,
                   help="pack records into rows of --seq-len tokens; --no-packing pads each micro-batch")
    d.add_argument("--micro-batch-size", type=int, default=0,
                   help="rows per forward/backward (gradient accumulation: --batch-size / this; 0: --batch-size)")
    d.add_argument("--eval-batch-size", type=int, default=0, help="rows per validation forward (0: micro batch)")
    o = p.add_argument_group("optimizer")
    o.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay (not on biases and norms)")
    o.add_argument("--max-grad-norm", type=float, default=1.0, help="clip the gradient norm (0: no clipping)")
    o.add_argument("--warmup-steps", type=int, default=None, help="linear warm-up steps (default: --warmup-ratio)")
    o.add_argument("--warmup-ratio", type=float, default=0.03, help="warm-up as a fraction of all steps")
    o.add_argument("--min-lr-ratio", type=float, default=0.1, help="the cosine decays to lr x this")
    e = p.add_argument_group("evaluation and outputs")
    e.add_argument("--eval-every", type=int, default=0, help="validate every N steps too (0: at epoch ends only)")
    e.add_argument("--output-dir", default=None,
                   help="the run's folder (/out/<run>): best, final, report.json, and checkpoints/ unless "
                        "--checkpoint-dir is given")
    e.add_argument("--run-name", default=None, help="name in logs and MLflow (default: the output folder's name)")
    args = p.parse_args(argv)
    if args.checkpoint_dir is None and args.output_dir:
        args.checkpoint_dir = str(Path(args.output_dir) / "checkpoints")
    args.run_name = args.run_name or (Path(args.output_dir).name if args.output_dir else "llm-finetune")
    args.micro_batch_size = args.micro_batch_size or args.batch_size
    args.eval_batch_size = args.eval_batch_size or args.micro_batch_size
    for flag in ("seq_len", "batch_size", "micro_batch_size", "eval_batch_size"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1")
    check_ft_args(args, p)
    return args


# -- model ----------------------------------------------------------------------
def check_sources(args) -> tuple[str, str]:
    """(model source, tokenizer source): folders must exist and hold a model/tokenizer; before any process group."""
    if args.model_local_dir:
        src = args.model_local_dir
        folder = Path(src)
        if not folder.is_dir():
            raise UsageError(f"--model-local-dir {src}: no such folder (mount the model's snapshot there, "
                             "e.g. the models PVC at /models)")
        if not (folder / "config.json").is_file():
            raise UsageError(f"--model-local-dir {src}: no config.json, not a Hugging Face model folder")
    elif args.model_id:
        src = args.model_id
    else:
        raise UsageError("no model: give --model-local-dir FOLDER or --model-id HUB_ID")
    tok = args.tokenizer_local_dir or src
    if args.tokenizer_local_dir and not Path(tok).is_dir():
        raise UsageError(f"--tokenizer-local-dir {tok}: no such folder")
    return src, tok


def quiet_hub() -> None:
    """No progress bars in the pod logs (every load and save draws one per file)."""
    import warnings
    from huggingface_hub.utils import disable_progress_bars
    from transformers.utils import logging as hf_logging
    disable_progress_bars()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.*", category=FutureWarning)


def hub_token() -> str | None:
    return os.environ.get("HUGGINGFACE_HUB_TOKEN") or os.environ.get("HF_TOKEN") or None


def load_tokenizer(source: str, args):
    from transformers import AutoTokenizer
    try:
        tok = AutoTokenizer.from_pretrained(source, local_files_only=args.local_files_only, token=hub_token())
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"tokenizer {source}: cannot be loaded ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:200] if str(exc) else ''})") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def load_model(source: str, args, env, dtype):
    """from_pretrained; when it may download, local rank 0 first (fills the cache), then the others."""
    from transformers import AutoModelForCausalLM
    kwargs = dict(local_files_only=args.local_files_only, token=hub_token(), dtype=dtype,
                  attn_implementation=args.attn_implementation)
    may_download = not args.local_files_only and not args.model_local_dir
    model, error = None, None
    for turn in ((0, 1) if may_download and env.world_size > 1 else (None,)):
        if turn is None or (env.local_rank == 0) == (turn == 0):
            try:
                model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
            except Exception as exc:  # noqa: BLE001
                error = exc
        if turn is not None:
            dist.barrier()
    if model is None:
        raise UsageError(f"model {source}: cannot be loaded ({type(error).__name__}: "
                         f"{str(error).splitlines()[0][:200] if str(error) else ''})")
    model.config.use_cache = False
    return model


def apply_lora(model, args):
    from peft import LoraConfig, get_peft_model
    targets = args.lora_target_modules
    targets = targets if targets == "all-linear" else [t.strip() for t in targets.split(",") if t.strip()]
    cfg = LoraConfig(task_type="CAUSAL_LM", r=args.lora_r, lora_alpha=args.lora_alpha,
                     lora_dropout=args.lora_dropout, target_modules=targets)
    return get_peft_model(model, cfg)


def decoder_layers(model) -> list[torch.nn.Module]:
    """The transformer blocks (the classes the model declares unsplittable): FSDP2's units."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    names = set(getattr(base, "_no_split_modules", None) or [])
    layers = [m for m in model.modules() if type(m).__name__ in names]
    if not layers:
        raise UsageError(f"{type(base).__name__}: no decoder layers found to shard (no _no_split_modules)")
    return layers


def compile_layers(model) -> int:
    """``torch.compile`` each decoder layer's ``forward`` in place (torchtitan compiles per block too): the
    module, its parameter names and its hooks (FSDP2's gathers, activation checkpointing) are unchanged."""
    layers = decoder_layers(model)
    for layer in layers:
        layer.forward = torch.compile(layer.forward)
    return len(layers)


def apply_fsdp(model, env, bf16: bool, reshard: bool = True) -> int:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mesh = init_device_mesh(env.device.type, (env.world_size,), mesh_dim_names=("shard",))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 \
        else MixedPrecisionPolicy()
    layers = decoder_layers(model)
    for layer in layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard)
    return len(layers)


def make_optimizer(model, args):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)


def make_scheduler(optimizer, total_steps: int, warmup: int, min_ratio: float):
    def factor(step: int) -> float:
        if warmup > 0 and step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


# -- outputs --------------------------------------------------------------------
def export_model(model, raw, tokenizer, env, mode: str, dest: Path, meta_name: str, meta: dict) -> None:
    """The model (full) or adapter (LoRA) with its tokenizer and ``<meta_name>.json``, written into ``dest``
    atomically (trainkit's tmp folder + swap).

    A collective under FSDP (the full state is gathered to rank 0); rank 0 writes.
    """
    state = None
    if mode == "fsdp":
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
        state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if env.rank != 0:
        return
    tmp = tmp_sibling(dest)
    tmp.mkdir(parents=True)
    raw.save_pretrained(tmp, state_dict=state) if state is not None else raw.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / f"{meta_name}.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    for f in tmp.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    fsync_dir(tmp)
    swap_in(tmp, dest)


def publish_best(out: Path, step: int) -> Path:
    """Point ``out/best`` at ``best-step_N`` (an atomic symlink swap) and drop older best folders."""
    target = f"best-step_{step:09d}"
    link = out / BEST_LINK
    tmp_link = tmp_sibling(out / f".{BEST_LINK}")
    os.symlink(target, tmp_link)
    os.replace(tmp_link, link)
    for old in out.glob("best-step_*"):
        if old.name != target and ".tmp-" not in old.name:
            shutil.rmtree(old, ignore_errors=True)
    return out / target


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def peak_memory_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024   # Linux: KiB


# -- main -----------------------------------------------------------------------
def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except (UsageError, DataError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr, flush=True)
        cleanup()
        return 2


def run(args) -> int:
    """The fine-tune, step by step: the inputs checked, the processes started, the data tokenized, the model
    built and wrapped, the training loop (FineTune) run, its outputs written."""
    t_wall = time.perf_counter()
    src = read_sources(args)
    env, ft, bf16 = start(args)
    tokenizer, train_set, val_set = tokenize(args, src)
    net = build_model(args, src.model, env, ft, bf16)
    log_setup(args, src, env, net, train_set, val_set)
    job = FineTune(args, env, ft, net, tokenizer, train_set, val_set, src.model)
    t_train = time.perf_counter()
    result = job.trainer.run()
    train_s = time.perf_counter() - t_train
    write_outputs(job, src, result, train_s, t_wall)
    if env.world_size > 1:
        dist.barrier()
    cleanup()
    return 0


@dataclass
class Sources:
    model: str                      # a folder or a hub id
    tokenizer: str
    train_index: JsonlIndex
    val_index: JsonlIndex | None


def read_sources(args) -> Sources:
    """The model and tokenizer sources and every line of both splits, checked before anything else starts (no
    process group, no model)."""
    model_src, tok_src = check_sources(args)
    for flag, path in (("--train-file", args.train_file), ("--val-file", args.val_file)):
        if path and not Path(path).is_file():
            raise DataError(path, f"{flag}: no such file")
    return Sources(model_src, tok_src, JsonlIndex(args.train_file),
                   JsonlIndex(args.val_file) if args.val_file else None)


def start(args):
    """(env, torchft's replica group or None, bf16): the process group, determinism and the precision."""
    env = init_distributed(args.device, mode=args.parallel)
    from trainkit import ft as fault_tolerance
    ft = fault_tolerance.setup(args, env)
    set_determinism(args.seed, args.deterministic)
    if args.precision is None:
        args.precision = "bf16" if env.device.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    bf16 = args.precision == "bf16"
    if bf16 and env.device.type != "cuda":
        raise UsageError("--precision bf16 needs a GPU; on CPU the sample trains in fp32")
    return env, ft, bf16


def tokenize(args, src: Sources):
    """(tokenizer, train set, validation set or None), each split checked against the tokenizer."""
    quiet_hub()
    tokenizer = load_tokenizer(src.tokenizer, args)
    check_tokenizer(tokenizer, src.train_index, src.tokenizer)
    train_set = TokenizedSet(src.train_index, tokenizer, args.seq_len, args.packing)
    val_set = None
    if src.val_index is not None:
        check_tokenizer(tokenizer, src.val_index, src.tokenizer)
        val_set = TokenizedSet(src.val_index, tokenizer, args.seq_len, args.packing)
    return tokenizer, train_set, val_set


@dataclass
class Net:
    model: torch.nn.Module          # what trains: FSDP2's sharded model, DDP's wrapper, or the model itself
    raw: torch.nn.Module            # the model before DDP wraps it
    mode: str                       # "fsdp" or "ddp"
    units: int                      # FSDP units (0 under DDP)
    trainable: int
    total: int
    autocast: Callable              # the forward's precision context


def build_model(args, model_src: str, env, ft, bf16: bool) -> Net:
    """The model loaded (identical initial LoRA weights on every rank), adapted, on its device, sharded by
    FSDP2 or wrapped by DDP (torchft's wrappers with replica groups)."""
    torch.manual_seed(args.seed)          # identical initial (LoRA) weights on every rank
    model = load_model(model_src, args, env, torch.float32)
    if args.finetune == "lora":
        model = apply_lora(model, args)
    if args.activation_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if args.compile:
        compile_layers(model)
    model.to(env.device)
    raw = model
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    if args.parallel == "fsdp":
        units = apply_fsdp(model, env, bf16, args.reshard_after_forward)
        mode = "fsdp"
        if ft is not None:
            ft.fsdp(model)       # HSDP: sharded within this replica group, averaged across groups by torchft
    else:
        units = 0
        mode = "ddp"
        ids = [env.device.index] if env.device.type == "cuda" else None
        if ft is not None:
            model = ft.ddp(model, device_ids=ids, broadcast_buffers=False)
        elif env.world_size > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=ids, broadcast_buffers=False)
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if bf16 and mode == "ddp" else nullcontext
    return Net(model, raw, mode, units, trainable, total, autocast)


def log_setup(args, src: Sources, env, net: Net, train_set, val_set) -> None:
    log("SETUP", rank=env.rank, sample="llm", model=src.model, tokenizer=src.tokenizer, finetune=args.finetune,
        parallel=net.mode, fsdp_units=net.units or None, precision=args.precision, compile=args.compile,
        attn=args.attn_implementation, activation_checkpointing=args.activation_checkpointing,
        reshard_after_forward=args.reshard_after_forward if net.mode == "fsdp" else None, params=net.total,
        trainable=net.trainable, train=args.train_file, records=len(src.train_index), items=len(train_set),
        packing=args.packing, seq_len=args.seq_len,
        shapes=",".join(f"{k}:{v}" for k, v in src.train_index.shapes.items() if v),
        truncated=train_set.truncated, no_loss=train_set.no_loss,
        val=args.val_file or None, val_items=len(val_set) if val_set else None)


class FineTune:
    """The training loop's parts trainkit's Trainer calls: a step (gradient accumulation over micro-batches,
    the loss the mean over the step's target tokens), the evaluation (validation loss, perplexity, `best`),
    the metrics, and the best result kept in the checkpoint."""

    def __init__(self, args, env, ft, net: Net, tokenizer, train_set, val_set, model_src: str):
        self.args, self.env, self.ft, self.net = args, env, ft, net
        self.model, self.raw, self.mode = net.model, net.raw, net.mode
        self.tokenizer, self.train_set, self.val_set, self.model_src = tokenizer, train_set, val_set, model_src
        self.optimizer = make_optimizer(self.model, args)
        self.sampler = ElasticSampler(len(train_set), args.batch_size, seed=args.seed)
        # the plan (the LR schedule's length): every replica group present, when the job has several
        steps_per_epoch = self.sampler.steps_left_in_epoch(env.world_size * (ft.num_groups if ft else 1))
        total_steps = args.max_steps or args.epochs * steps_per_epoch
        warmup = args.warmup_steps if args.warmup_steps is not None else int(args.warmup_ratio * total_steps)
        self.scheduler = make_scheduler(self.optimizer, total_steps, warmup, args.min_lr_ratio)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.pad_id = tokenizer.pad_token_id
        self.row_width = args.seq_len if args.packing else None
        self.dummy = Item([self.pad_id], [IGNORE], [0] if args.packing else None)
        self.out_dir = Path(args.output_dir) if args.output_dir else None
        if self.out_dir is not None and env.rank == 0:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            if ft is None:                        # replica groups: the writing group cleans (writes_outputs)
                for stale in clean_stale(self.out_dir):    # exports a killed run left half-written (*.tmp-*, *.trash-*)
                    log("SETUP", rank=0, removed_stale=str(stale))
        # metrics from one group (replica group 0's rank 0): every group trains the same model and logs the same
        self.tracker = Tracker(rank=env.rank + (ft.group_id * env.world_size if ft else 0), run_name=args.run_name,
                               output_dir=args.output_dir,
                               params={k: v for k, v in vars(args).items() if k not in ("device",)})
        self.counters = {"tokens": 0, "grad_norm": None, "target_tokens": 0.0, "t0": None}
        self.best = {"val_loss": None, "step": None, "epoch": None}
        self.trainer = Trainer(env, args, model=self.model, raw_model=self.raw, optimizer=self.optimizer,
                               scheduler=self.scheduler, sampler=self.sampler, step_fn=self.step_fn, mode=self.mode,
                               eval_fn=self.evaluate if val_set else None, eval_every=args.eval_every,
                               extra_state=(self.get_extra, self.set_extra), after_step=self.after_step,
                               name="llm", ft=ft, progress_metrics=self.progress_metrics)

    def writes_outputs(self) -> bool:
        """Whether this process group writes best/final/report: the only one, or, with replica groups,
        the group of rank 0 in this step's quorum (one writer per step; every group holds the same weights).
        It removes the half-written exports a killed writer left first: no other group writes meanwhile."""
        if self.ft is None:
            return True
        if self.ft.manager.participating_rank() != 0:
            return False
        if self.env.rank == 0 and self.out_dir is not None:
            for stale in clean_stale(self.out_dir):
                log("SETUP", rank=0, removed_stale=str(stale))
        return True

    def forward_loss(self, batch: dict, net=None) -> tuple[torch.Tensor, int]:
        """Sum of token losses of a micro-batch (targets shifted by one), and how many tokens carried one."""
        batch = {k: v.to(self.env.device) for k, v in batch.items()}
        labels = batch.pop("labels")
        with self.net.autocast():
            logits = (net or self.model)(**batch, use_cache=False).logits
        target = labels[:, 1:]
        loss = F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.size(-1)), target.reshape(-1),
                               ignore_index=IGNORE, reduction="sum")
        return loss, int((target != IGNORE).sum())

    def sync(self, last: bool):
        if self.mode == "fsdp":
            self.model.set_requires_gradient_sync(last)
            return nullcontext()
        return nullcontext() if last or (self.env.world_size == 1 and self.ft is None) else self.model.no_sync()

    def step_fn(self, batch):
        args, env, ft = self.args, self.env, self.ft
        mb = args.micro_batch_size
        share = ceil_div(batch.global_count, batch.world_size)  # the largest rank's share this step
        n_micro = max(1, ceil_div(share, mb))                 # equal on every rank (FSDP gathers per forward)
        items = {j: self.train_set.item(j) for j in batch.indices}
        tokens = torch.tensor([float(sum(it.loss_tokens for it in items.values()))], dtype=torch.float64,
                              device=env.device)
        if env.world_size > 1:
            dist.all_reduce(tokens)
        if ft is not None:
            ft.sum_across_groups(tokens)                     # and over the replica groups of this step
        global_tokens = max(1.0, tokens.item())
        if self.counters["t0"] is None:
            self.counters["t0"] = time.perf_counter()
        self.counters["target_tokens"] += tokens.item()
        scale = batch.world_size / global_tokens             # gradients: the mean over the step's target tokens
        loss_sum = 0.0
        for k in range(n_micro):
            chunk = batch.indices[k * mb:(k + 1) * mb]
            rows = [items[j] for j in chunk] or [self.dummy]
            with self.sync(k == n_micro - 1):
                loss, _ = self.forward_loss(collate(rows, self.pad_id, self.row_width))
                if not chunk:
                    loss = loss * 0.0
                (loss * scale).backward()
            loss_sum += loss.item()
            self.counters["tokens"] += sum(len(r.input_ids) for r in rows) if chunk else 0
        if args.max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(self.params, args.max_grad_norm)
            norm = norm.full_tensor() if hasattr(norm, "full_tensor") else norm
            self.counters["grad_norm"] = float(norm)
        # the Trainer reports sum / global_count: make that the mean loss per target token
        return loss_sum * batch.global_count / global_tokens

    def evaluate(self, epoch: int) -> dict:
        if self.val_set is None:
            return {}
        val_loss, n_tokens = self._val_loss()
        ppl = math.exp(min(val_loss, 50.0))
        best, step = self.best, self.trainer.step
        improved = best["val_loss"] is None or val_loss < best["val_loss"]
        fields = {"val_loss": round(val_loss, 6), "val_ppl": round(ppl, 4), "val_tokens": n_tokens}
        if improved:
            best.update(val_loss=val_loss, step=step, epoch=epoch)
            if self.out_dir is not None and self.writes_outputs():
                meta = {"step": step, "epoch": epoch, "val_loss": val_loss, "val_ppl": ppl,
                        "finetune": self.args.finetune, "base_model": self.model_src}
                export_model(self.model, self.raw, self.tokenizer, self.env, self.mode,
                             self.out_dir / f"best-step_{step:09d}", "best", meta)
                if self.env.rank == 0:
                    publish_best(self.out_dir, step)
        fields.update(best_val_loss=round(best["val_loss"], 6), best_step=best["step"], improved=improved)
        self.tracker.metrics(step, {"val_loss": val_loss, "val_ppl": ppl})
        return fields

    def _val_loss(self) -> tuple[float, int]:
        """The validation loss per target token over every rank's share, and how many tokens carried one."""
        env, val_set = self.env, self.val_set
        net = self.model if self.mode == "fsdp" else self.raw   # FSDP: every rank the same number of forwards
        net.eval()
        mine = list(range(env.rank, len(val_set), env.world_size))
        eb = self.args.eval_batch_size
        n_batches = max(1, ceil_div(ceil_div(len(val_set), env.world_size), eb))   # equal on every rank
        sums = torch.zeros(2, dtype=torch.float64, device=env.device)
        with torch.no_grad():
            for k in range(n_batches):
                chunk = mine[k * eb:(k + 1) * eb]
                rows = [val_set.item(j) for j in chunk] or [self.dummy]
                loss, n_tokens = self.forward_loss(collate(rows, self.pad_id, self.row_width), net)
                if chunk:
                    sums[0] += loss.double()
                    sums[1] += float(n_tokens)
        net.train()
        if env.world_size > 1:
            dist.all_reduce(sums)
        if sums[1].item() == 0:
            raise DataError(self.args.val_file, "no validation tokens carry a loss (every target was cut off by "
                                                "--seq-len?)")
        return sums[0].item() / sums[1].item(), int(sums[1].item())

    def after_step(self, step: int, loss: float, lr: float) -> None:
        self.tracker.metrics(step, {"train_loss": loss, "lr": lr, "grad_norm": self.counters["grad_norm"]})

    def progress_metrics(self) -> dict:
        """What the TrainJob's status shows besides loss and validation perplexity: the job's target tokens
        (those carrying a loss, summed over every rank) per second since this run's first step."""
        t0 = self.counters["t0"]
        elapsed = time.perf_counter() - t0 if t0 is not None else 0.0
        return {"target_tokens_per_s": round(self.counters["target_tokens"] / elapsed, 2) if elapsed > 0 else None,
                "grad_norm": self.counters["grad_norm"]}

    def get_extra(self) -> dict:
        return {"best": dict(self.best)}

    def set_extra(self, state: dict) -> None:
        self.best.update(state.get("best") or {})


def write_outputs(job: FineTune, src: Sources, result, train_s: float, t_wall: float) -> None:
    """`final/` (the writing group) and, from its rank 0, report.json, the tracker's last metrics and the
    REPORT line. Tokens are summed and peak memory maximised over the ranks first (every rank takes part)."""
    env, out_dir = job.env, job.out_dir
    sums = torch.tensor([float(job.counters["tokens"]), float(peak_memory_bytes(env.device))], dtype=torch.float64,
                        device=env.device)
    peak = sums[1:].clone()
    if env.world_size > 1:
        dist.all_reduce(sums[:1])
        dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    tokens = int(sums[0].item())
    final_meta = {"step": result.step, "epoch": result.epoch, "train_loss": result.final_loss,
                  "finetune": job.args.finetune, "base_model": src.model}
    writer = job.writes_outputs()
    if out_dir is not None and writer:
        export_model(job.model, job.raw, job.tokenizer, env, job.mode, out_dir / "final", "final", final_meta)
    if env.rank == 0 and writer:
        report = make_report(job, src, result, tokens, int(peak.item()), train_s, t_wall)
        best = job.best
        if out_dir is not None:
            atomic_write(out_dir / "report.json", (json.dumps(report, indent=1) + "\n").encode())
            if best["step"] is not None and (out_dir / BEST_LINK).exists():
                job.tracker.artifacts((out_dir / BEST_LINK).resolve(), "best")
        job.tracker.metrics(result.step, {"tokens_per_s": report["tokens_per_s"] or 0.0})
        job.tracker.finish()
        log("REPORT", rank=0, path=str(out_dir / "report.json") if out_dir else None,
            tokens_per_s=report["tokens_per_s"], best_val_loss=best["val_loss"], best_step=best["step"])


def make_report(job: FineTune, src: Sources, result, tokens: int, peak: int, train_s: float, t_wall: float) -> dict:
    """report.json: the run, its speed and memory, the best validation result and the data."""
    args, env, best, out_dir, val_set = job.args, job.env, job.best, job.out_dir, job.val_set
    return {
        "run": args.run_name, "model": src.model, "finetune": args.finetune, "parallel": job.mode,
        "precision": args.precision, "world_size": env.world_size, "steps": result.step,
        "steps_this_run": result.step - result.resumed_from, "resumed_from": result.resumed_from,
        "restarts": env.restart_count, "epochs": result.epoch, "final_train_loss": result.final_loss,
        "weights_sha256": result.weights_sha256, "tokens_this_run": tokens,
        "tokens_per_s": round(tokens / train_s, 2) if train_s > 0 else None, "train_s": round(train_s, 3),
        "wall_s": round(time.perf_counter() - t_wall, 3), "peak_memory_bytes": peak,
        "peak_memory_kind": "cuda_allocated" if env.device.type == "cuda" else "cpu_max_rss",
        "params": job.net.total, "trainable_params": job.net.trainable,
        "best": None if best["val_loss"] is None else {
            "step": best["step"], "epoch": best["epoch"], "val_loss": best["val_loss"],
            "val_ppl": math.exp(min(best["val_loss"], 50.0)),
            "path": str(out_dir / BEST_LINK) if out_dir is not None else None},
        "last_eval": job.trainer.last_eval,
        "data": {"train": {"file": args.train_file, "records": len(src.train_index), "items": len(job.train_set),
                           "shapes": src.train_index.shapes, "packing": args.packing, "seq_len": args.seq_len},
                 "val": None if val_set is None else {"file": args.val_file, "records": len(val_set.index),
                                                      "items": len(val_set)}},
    }


if __name__ == "__trainkit_warm__":
    # trainkit.torchrun's fork server imports these once; restarted workers find them loaded.
    import transformers  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401
    import peft  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""T5 summarisation fine-tuning with FSDP2 (``fully_shard`` per T5 block) and sharded DCP checkpoints.

    torchrun --nnodes=2 --nproc_per_node=8 ... training/t5_fsdp.py --model_id google-t5/t5-small \\
        --local-files-only --precision bf16 --checkpoint-dir /checkpoints/t5

Model: ``--model_id`` is a local folder or a hub id already in the local hub
cache (``HF_HOME``); with ``--local-files-only`` nothing is downloaded. When the
model cannot be loaded, or with ``--tiny``, a tiny random-weight T5 (2+2
layers, d_model 64, byte-level vocabulary, tokenised by ``ByT5Tokenizer``,
which needs no files) is used instead, and the log says so.

Data: ``--data-file`` (JSON lines with ``document``/``summary``, or a CSV with
``text``/``headline`` columns as in WikiHow) when present; otherwise a
deterministic synthetic summarisation set (documents of templated sentences,
the summary names what happened).

Sharding (``--sharding-strategy``): ``full`` (default) shards parameters,
gradients and optimizer state over all ranks and frees gathered parameters
after each block's forward (ZeRO-3); ``no-reshard`` keeps them gathered
between forward and backward (ZeRO-2-like: more memory, fewer all-gathers);
``hybrid`` shards within a node and replicates across nodes (HSDP, a
2-D mesh ``(nodes, gpus per node)``), so that only gradient all-reduces
cross the slower inter-node network.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import warnings  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from trainkit import (ElasticSampler, Trainer, add_common_args, cleanup, init_distributed, log,  # noqa: E402
                      set_determinism)
from trainkit.args import check_ft_args  # noqa: E402

DEFAULT_MODEL = "google-t5/t5-small"
# T5Block returns a tuple holding views; T5Stack never modifies them in place, so FSDP2's
# warning about in-place ops on a block's output does not apply here.
warnings.filterwarnings("ignore", message=r"FSDP2-wrapped module .* returned a view tensor")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_common_args(p, epochs=1, batch_size=8, lr=3e-4, checkpoint_every=100)
    m = p.add_argument_group("model")
    m.add_argument("--model_id", "--model-id", dest="model_id", default=DEFAULT_MODEL,
                   help="local folder or hub id (from the local cache)")
    m.add_argument("--local-files-only", action="store_true",
                   help="never contact the hub; load from the folder or the local cache only")
    m.add_argument("--tiny", action="store_true",
                   help="tiny random-weight T5 for offline runs (also the fallback when the model cannot be loaded)")
    m.add_argument("--precision", choices=("bf16", "fp32"), default=None,
                   help="compute dtype: bf16 keeps fp32 master weights and fp32 gradient reduction; "
                        "default bf16 on GPUs that support it, fp32 otherwise")
    m.add_argument("--activation-checkpointing", action="store_true",
                   help="recompute each T5 block's activations in backward (saves memory)")
    m.add_argument("--attn-implementation", default=None,
                   help="attention kernel (sdpa, eager; default: transformers' choice, sdpa where it has it for T5)")
    m.add_argument("--compile", action="store_true",
                   help="torch.compile each T5 block's forward (the FSDP2 and checkpointing hooks stay eager)")
    m.add_argument("--sharding-strategy", choices=("full", "hybrid", "no-reshard"), default="full",
                   help="full: ZeRO-3 over all ranks; no-reshard: keep params gathered until backward; "
                        "hybrid: shard within a node, replicate across nodes (HSDP)")
    d = p.add_argument_group("data")
    d.add_argument("--data-file", default=None,
                   help="JSON lines (document/summary) or CSV (text/headline); synthetic data if absent")
    d.add_argument("--samples", type=int, default=2048, help="synthetic samples (or cap on the data file)")
    d.add_argument("--max-source-len", type=int, default=96, help="source tokens (truncated/padded)")
    d.add_argument("--max-target-len", type=int, default=24, help="target tokens (truncated/padded)")
    d.add_argument("--warmup-steps", type=int, default=20, help="linear LR warm-up")
    args = p.parse_args(argv)
    check_ft_args(args, p)
    if args.fault_tolerance == "torchft" and args.sharding_strategy == "hybrid":
        p.error("--sharding-strategy hybrid replicates across nodes inside one process group; with "
                "--fault-tolerance torchft the replica groups are the replication (HSDP already): use full "
                "or no-reshard")
    return args


# -- data ---------------------------------------------------------------------
NOUNS = ["cat", "river", "engine", "garden", "lamp", "market", "violin", "harbor", "forest", "robot",
         "bridge", "teacher", "storm", "castle", "letter", "mirror"]
VERBS = ["painted", "repaired", "crossed", "opened", "followed", "measured", "lifted", "found"]
ADJS = ["quiet", "bright", "old", "narrow", "heavy", "distant", "green", "broken"]
FILLER = ["Nobody expected it.", "The weather was mild.", "People talked about it for days.",
          "It happened before noon.", "Some said it was luck.", "The town kept a record of it."]


def synthetic_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.sample(NOUNS, 2)
        v, adj = rng.choice(VERBS), rng.choice(ADJS)
        doc = " ".join([rng.choice(FILLER), f"The {adj} {a} {v} the {b}.", rng.choice(FILLER)])
        out.append((doc, f"{a} {v} {b}"))
    return out


def file_pairs(path: Path, limit: int) -> list[tuple[str, str]]:
    pairs = []
    if path.suffix in (".jsonl", ".json"):
        with open(path) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    pairs.append((row["document"], row["summary"]))
    else:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row.get("text") and row.get("headline"):
                    pairs.append((row["text"], row["headline"]))
    return pairs[:limit] if limit else pairs


# -- model --------------------------------------------------------------------
def tiny_config():
    from transformers import T5Config
    return T5Config(vocab_size=384, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                    num_heads=4, relative_attention_num_buckets=8, dropout_rate=0.1,
                    decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)


def byt5_tokenizer():
    from transformers import ByT5Tokenizer
    return ByT5Tokenizer()


def _usable(tokenizer) -> bool:
    """from_pretrained can quietly hand back an empty tokenizer offline (only special tokens, every
    word <unk>); check that text survives an encode/decode round trip."""
    probe = "a quick check of 42 words"
    try:
        ids = tokenizer(probe, add_special_tokens=False)["input_ids"]
        if not ids or (tokenizer.unk_token_id is not None and tokenizer.unk_token_id in ids):
            return False
        back = tokenizer.decode(ids, skip_special_tokens=True)
        return back.replace(" ", "") == probe.replace(" ", "")
    except Exception:  # noqa: BLE001
        return False


def load_model_and_tokenizer(args, env):
    """(model, tokenizer, description). Local rank 0 loads first (fills the cache), the rest follow."""
    from transformers import AutoTokenizer, T5ForConditionalGeneration
    if not args.tiny:
        model = tok = None
        error = None
        for turn in (0, 1):
            if (env.local_rank == 0) == (turn == 0):
                try:
                    try:
                        model = T5ForConditionalGeneration.from_pretrained(args.model_id, local_files_only=True,
                                                                           attn_implementation=args.attn_implementation)
                    except OSError:
                        if args.local_files_only:
                            raise
                        model = T5ForConditionalGeneration.from_pretrained(
                            args.model_id, attn_implementation=args.attn_implementation)
                    try:
                        tok = AutoTokenizer.from_pretrained(args.model_id, local_files_only=args.local_files_only)
                    except Exception:  # noqa: BLE001
                        tok = None
                except Exception as exc:  # noqa: BLE001
                    error = exc
            if env.world_size > 1:
                dist.barrier()
        if model is not None:
            if tok is None or not _usable(tok):
                if model.config.vocab_size < 384:
                    raise RuntimeError(f"no usable tokenizer for {args.model_id} and its vocabulary is too "
                                       "small for the byte-level fallback")
                log("WARN", rank=env.rank, tokenizer="ByT5Tokenizer",
                    reason="the model's tokenizer could not be loaded or is empty")
                tok = byt5_tokenizer()
            return model, tok, f"pretrained:{args.model_id}"
        log("SETUP", rank=env.rank, fallback="tiny", model_id=args.model_id,
            reason=f"{type(error).__name__}: {str(error).splitlines()[0][:160] if str(error) else ''}",
            note="model not loadable offline; training the tiny random-weight T5 instead")
    torch.manual_seed(args.seed)   # same initial weights on every rank
    cfg = tiny_config()
    if args.attn_implementation:
        cfg._attn_implementation = args.attn_implementation
    return T5ForConditionalGeneration(cfg), byt5_tokenizer(), "tiny-random-t5"


def tokenize(tok, pairs, src_len, tgt_len):
    docs = [d for d, _ in pairs]
    sums = [s for _, s in pairs]
    enc = tok(docs, max_length=src_len, truncation=True, padding="max_length", return_tensors="pt")
    lab = tok(sums, max_length=tgt_len, truncation=True, padding="max_length", return_tensors="pt")
    labels = lab["input_ids"].clone()
    labels[lab["attention_mask"] == 0] = -100
    return enc["input_ids"], enc["attention_mask"], labels


def apply_fsdp(model, args, env, dtype_bf16: bool):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    dev = env.device.type
    if args.sharding_strategy == "hybrid":
        mesh = init_device_mesh(dev, (env.num_nodes, env.world_size // env.num_nodes),
                                mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh(dev, (env.world_size,), mesh_dim_names=("shard",))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if dtype_bf16 \
        else MixedPrecisionPolicy()
    reshard = args.sharding_strategy != "no-reshard"
    blocks = list(model.encoder.block) + list(model.decoder.block)
    for block in blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
    return model, len(blocks), tuple(mesh.shape)


def main(argv=None) -> int:
    args = parse_args(argv)
    env = init_distributed(args.device, mode="fsdp2")
    from trainkit import ft as fault_tolerance
    ft = fault_tolerance.setup(args, env)
    set_determinism(args.seed, args.deterministic)
    if args.precision is None:
        args.precision = "bf16" if env.device.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    model, tok, desc = load_model_and_tokenizer(args, env)
    if args.data_file and Path(args.data_file).is_file():
        pairs, source = file_pairs(Path(args.data_file), args.samples), f"file:{args.data_file}"
    else:
        pairs, source = synthetic_pairs(args.samples, args.seed), "synthetic"
        if args.data_file:
            log("SETUP", rank=env.rank, data="synthetic", reason=f"{args.data_file} not found")
    input_ids, attn, labels = tokenize(tok, pairs, args.max_source_len, args.max_target_len)
    input_ids, attn, labels = input_ids.to(env.device), attn.to(env.device), labels.to(env.device)

    if args.activation_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if args.compile:
        for block in list(model.encoder.block) + list(model.decoder.block):
            block.forward = torch.compile(block.forward)
    model.to(env.device)
    model, nblocks, mesh_shape = apply_fsdp(model, args, env, args.precision == "bf16")
    if ft is not None:
        ft.fsdp(model)       # HSDP: sharded within this replica group, averaged across groups by torchft
    nparams = sum(p.numel() for p in model.parameters())
    log("SETUP", rank=env.rank, sample="t5", model=desc, params=nparams, fsdp_blocks=nblocks,
        mesh=mesh_shape, sharding=args.sharding_strategy, precision=args.precision,
        activation_checkpointing=args.activation_checkpointing, compile=args.compile,
        attn=model.config._attn_implementation, data=source, samples=len(pairs),
        vocab=len(tok))

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, end_factor=1.0,
                                                  total_iters=max(1, args.warmup_steps))
    sampler = ElasticSampler(len(pairs), args.batch_size, seed=args.seed)

    def step_fn(batch):
        # Every rank must run forward/backward (FSDP all-gathers inside); a rank with no sample in
        # a short last step runs one dummy sample whose loss counts zero.
        empty = len(batch.indices) == 0
        idx = torch.tensor([0] if empty else batch.indices, dtype=torch.long, device=env.device)
        out = model(input_ids=input_ids[idx], attention_mask=attn[idx], labels=labels[idx])
        lab = labels[idx]
        tok_loss = F.cross_entropy(out.logits.float().transpose(1, 2), lab, ignore_index=-100, reduction="none")
        per_sample = tok_loss.sum(1) / (lab != -100).sum(1).clamp(min=1)
        loss_sum = per_sample.sum() * (0.0 if empty else 1.0)
        (loss_sum * (batch.world_size / batch.global_count)).backward()
        return loss_sum.item()

    trainer = Trainer(env, args, model=model, optimizer=optimizer, scheduler=scheduler, sampler=sampler,
                      step_fn=step_fn, mode="fsdp", name="t5", ft=ft)
    trainer.run()
    cleanup()
    return 0


if __name__ == "__trainkit_warm__":
    # Run once by trainkit.torchrun's fork server (trainkit/warm.py): transformers is imported lazily
    # above to keep --help fast, but every restarted worker would then import it again (~4.8 s of CPU
    # here). Imported here, forked workers find it loaded.
    import transformers  # noqa: F401
    from transformers import AutoTokenizer, ByT5Tokenizer, T5Config, T5ForConditionalGeneration  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())

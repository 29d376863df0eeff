#!/usr/bin/env python3
"""A tiny random-weight Llama, its tokenizer and a learnable JSONL data set, for offline runs of llm_finetune.py.

    python training/make_tiny_llm.py OUT [--shape chat|prompt|text|mixed] [--train 256] [--val 32]

writes what the fine-tune reads on a cluster, laid out as seed 003's volumes::

    OUT/models/tiny-llama/   config.json, model.safetensors, tokenizer.json (+ a chat template); --name
    OUT/data/train.jsonl     records of the chosen shape
    OUT/data/val.jsonl

Nothing is downloaded: the tokenizer is a word-level vocabulary built here (``tokenizers``), the model a
``LlamaConfig`` with random weights, saved with ``save_pretrained`` so that the fine-tune loads it through
the real ``from_pretrained`` path (``--model-local-dir OUT/models/tiny-llama --local-files-only``). The
records count in number words ("after three comes four five six"), which even a tiny model learns in a
few dozen steps: its validation loss falls well below the random start. For tests, the benchmark and
``kdt run`` of the fine-tune targets, which read ``/models/base``::

    python training/make_tiny_llm.py /tmp/llm --name base --shape mixed
    kdt run overlays/statefulset --volume datasets-pvc=/tmp/llm/data --volume models-pvc=/tmp/llm/models
"""
from __future__ import annotations

import argparse
import fcntl
import json
import random
import sys
from pathlib import Path

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["twenty", "thirty", "forty"]
NUMBERS = ONES + [f"{t}-{o}" if o else t for t in TENS for o in ONES[:10]]       # 0..49
SPECIAL = ["<pad>", "<unk>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> "
                 "{% endfor %}{% if add_generation_prompt %}<|assistant|> {% endif %}")
WORDS = ["after", "comes", "count", "from", "please", "the", "numbers", "counting", ":", ".", "you", "are", "a",
         "counter", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "12"]
NAME = "tiny-llama"


def record(rng: random.Random, shape: str) -> dict:
    start = rng.randrange(0, len(NUMBERS) - 8)
    n = rng.randrange(3, 7)
    run = NUMBERS[start + 1:start + 1 + n]
    if shape == "mixed":
        shape = rng.choice(["text", "prompt", "chat"])
    if shape == "text":
        return {"text": f"counting : {NUMBERS[start]} {' '.join(run)} ."}
    if shape == "prompt":
        return {"prompt": f"after {NUMBERS[start]} comes", "completion": " ".join(run)}
    msgs = [{"role": "user", "content": f"count from {NUMBERS[start]}"},
            {"role": "assistant", "content": f"{NUMBERS[start]} {' '.join(run)}"}]
    if rng.random() < 0.3:
        msgs.insert(0, {"role": "system", "content": "you are a counter ."})
    return {"messages": msgs}


def write_data(folder: Path, shape: str, n_train: int, n_val: int, seed: int = 7) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for name, n in (("train.jsonl", n_train), ("val.jsonl", n_val)):
        with open(folder / name, "w") as f:
            for _ in range(n):
                f.write(json.dumps(record(rng, shape)) + "\n")


def build_tokenizer(chat_template: bool = True):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    vocab = {w: i for i, w in enumerate(SPECIAL + NUMBERS + WORDS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B",
                                                        special_tokens=[("<s>", vocab["<s>"])])
    tok = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                  unk_token="<unk>", additional_special_tokens=SPECIAL[4:])
    if chat_template:
        tok.chat_template = CHAT_TEMPLATE
    return tok


def build_model(tok, seed: int = 0, layers: int = 2, hidden: int = 64):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=hidden * 2,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=512, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, tie_word_embeddings=False)
    return LlamaForCausalLM(cfg)


def write_model(folder: Path, chat_template: bool = True, layers: int = 2, hidden: int = 64,
                name: str = NAME) -> Path:
    from huggingface_hub.utils import disable_progress_bars
    disable_progress_bars()
    tok = build_tokenizer(chat_template)
    model = build_model(tok, layers=layers, hidden=hidden)
    dest = folder / name
    model.save_pretrained(dest)
    tok.save_pretrained(dest)
    return dest


def ensure(root: Path, *, shapes: tuple[str, ...], name: str = NAME, no_template: bool = False) -> Path:
    """Build ``root/models/<name>`` and ``root/data-<shape>/`` (256 train, 32 val records) once, however many
    processes ask at the same time (a lock file beside ``root``; ``root/READY`` when done)."""
    root = Path(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.with_name(root.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "READY").exists():
            write_model(root / "models", name=name)
            if no_template:
                write_model(root / "models-no-template", chat_template=False, name=name)
            for shape in shapes:
                write_data(root / f"data-{shape}", shape, 256, 32)
            (root / "READY").write_text("ok")
    return root


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="folder to write models/ and data/ into")
    p.add_argument("--shape", choices=("chat", "prompt", "text", "mixed"), default="chat")
    p.add_argument("--train", type=int, default=256, help="training records")
    p.add_argument("--val", type=int, default=32, help="validation records")
    p.add_argument("--name", default=NAME, help="the model's folder under OUT/models (the targets read /models/base)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    args = p.parse_args(argv)
    out = Path(args.out)
    write_data(out / "data", args.shape, args.train, args.val)
    dest = write_model(out / "models", layers=args.layers, hidden=args.hidden, name=args.name)
    print(f"model: {dest}\ndata: {out / 'data'}/train.jsonl, val.jsonl ({args.shape})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One log format for every sample, greppable from ``kubectl logs``.

Every line starts with a tag in square brackets, then ``key=value`` fields::

    [DDP] rank=0 world_size=2 local_rank=0 restart=0 backend=gloo device=cpu pid=123 ts=1700000000.123
    [TRAIN] rank=0 step=40 epoch=0 loss=0.4123 lr=0.001 step_s=0.031 ts=...
    [CKPT] rank=0 step=40 path=/checkpoints/mnist/step_000000040 blocking_s=0.012 write_s=0.080 ts=...
    [DONE] rank=0 step=120 final_loss=0.1234 weights_sha256=ab12... ts=...

Tags: ``[LAUNCH]`` how the launcher starts workers (warm or cold, and why),
``[DDP]`` process group set up, ``[FT]`` a torchft replica group's settings, ``[HEAL]`` a group that
received (or served) the live state of a peer, ``[SETUP]`` data/model choices,
``[TRAIN]`` a training step, ``[EVAL]`` a validation between epochs, ``[EPOCH]`` end of an epoch, ``[CKPT]`` a
checkpoint written (or pruned), ``[RESUME]`` what a (re)started worker loaded,
``[STOP]`` preemption handling, ``[WARN]``, ``[DONE]`` the end of training, and ``[REPORT]`` where a
sample wrote its report.
``kubectl logs POD | grep -E '^\\[(RESUME|CKPT|DONE)\\]'`` follows a run.
"""
from __future__ import annotations

import json
import sys
import time

TAGS = ("LAUNCH", "DDP", "FT", "HEAL", "SETUP", "TRAIN", "EVAL", "EPOCH", "CKPT", "RESUME", "STOP", "WARN", "DONE", "REPORT")


def _fmt(value) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if text == "" or any(c.isspace() for c in text) or '"' in text:
        return json.dumps(text)
    return text


def format_line(tag: str, fields: dict) -> str:
    if tag not in TAGS:
        raise ValueError(f"unknown log tag {tag!r}")
    parts = [f"[{tag}]"]
    parts += [f"{k}={_fmt(v)}" for k, v in fields.items() if v is not None]
    parts.append(f"ts={time.time():.3f}")
    return " ".join(parts)


def log(tag: str, **fields) -> None:
    """Print one tagged line on stdout and flush it (the agent merges workers' output)."""
    sys.stdout.write(format_line(tag, fields) + "\n")
    sys.stdout.flush()


def parse_line(line: str):
    """Inverse of :func:`format_line`: ``(tag, {key: str})`` or ``None``.

    Used by the tests and the benchmark to read logs back.
    """
    line = line.strip()
    if not line.startswith("[") or "]" not in line:
        return None
    tag, rest = line[1:].split("]", 1)
    if tag not in TAGS:
        return None
    fields = {}
    rest = rest.strip()
    i = 0
    while i < len(rest):
        eq = rest.find("=", i)
        if eq < 0:
            break
        key = rest[i:eq]
        j = eq + 1
        if j < len(rest) and rest[j] == '"':
            dec = json.JSONDecoder()
            value, end = dec.raw_decode(rest, j)
            j = end
        else:
            end = rest.find(" ", j)
            end = len(rest) if end < 0 else end
            value = rest[j:end]
            j = end
        fields[key.strip()] = value
        i = j + 1
    return tag, fields

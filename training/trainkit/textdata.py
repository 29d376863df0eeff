"""JSON-lines text data for causal-LM fine-tuning: read lazily, tokenised per record, packed or padded.

A record is one JSON object per line, in one of the common shapes::

    {"text": "..."}                                        every token is trained on
    {"prompt": "...", "completion": "..."}                 loss on the completion only
    {"messages": [{"role": "user", "content": "..."},      the tokenizer's chat template renders it;
                  {"role": "assistant", "content": "..."}]} loss on the assistant turns only

Shapes may be mixed within a file. :class:`JsonlIndex` reads a file once to check every line and keep
its byte offset (an ``array('q')``: 8 bytes a record, not the text); :meth:`JsonlIndex.record` seeks
to one record when a batch needs it. A line that is not a JSON object of a known shape is a
:class:`DataError` naming the file and line number, before any training starts.

:func:`encode` turns a record into ``(input_ids, labels)`` with ``-100`` on the tokens that carry no
loss. :class:`TokenizedSet` makes the trainable items: one per record (``packing=False``, padded per
micro-batch with an attention mask) or packed rows of ``seq_len`` tokens that hold several records
(``packing=True``), each record with its own positions from 0, so that the model's packed-sequence
mask keeps records from attending to each other (transformers derives it from ``position_ids`` when
no attention mask is given).
"""
from __future__ import annotations

import json
import os
from array import array
from dataclasses import dataclass

IGNORE = -100
SHAPES = ("text", "prompt", "messages")
ROLES = ("system", "user", "assistant", "tool")


class DataError(Exception):
    """Bad input data: ``str()`` is one line naming the file (and line) and what was expected."""

    def __init__(self, path, message: str, line: int | None = None):
        self.path, self.line, self.message = str(path), line, message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


def record_shape(rec) -> str:
    """The record's shape, or a ``ValueError`` saying what a record must look like."""
    if not isinstance(rec, dict):
        raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
    if "messages" in rec:
        msgs = rec["messages"]
        if not isinstance(msgs, list) or not msgs:
            raise ValueError("'messages' must be a non-empty list of {role, content} objects")
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or not isinstance(m.get("content"), str) or m.get("role") not in ROLES:
                raise ValueError(f"messages[{i}]: expected {{\"role\": one of {'/'.join(ROLES)}, "
                                 f"\"content\": string}}")
        if not any(m["role"] == "assistant" for m in msgs):
            raise ValueError("'messages' has no assistant turn: nothing to train on")
        return "messages"
    if "prompt" in rec or "completion" in rec:
        if not isinstance(rec.get("prompt"), str) or not isinstance(rec.get("completion"), str):
            raise ValueError("'prompt' and 'completion' must both be strings")
        return "prompt"
    if "text" in rec:
        if not isinstance(rec["text"], str):
            raise ValueError("'text' must be a string")
        return "text"
    raise ValueError("expected 'text', 'prompt'+'completion' or 'messages' (keys: "
                     f"{', '.join(sorted(rec)) or 'none'})")


class JsonlIndex:
    """Byte offsets of the records of a JSON-lines file; records are read on demand."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        self.offsets = array("q")
        self.lines = array("q")
        self.shapes: dict[str, int] = dict.fromkeys(SHAPES, 0)
        if not os.path.isfile(self.path):
            raise DataError(self.path, "no such file" if not os.path.exists(self.path) else "not a file")
        with open(self.path, "rb") as f:
            offset, lineno = 0, 0
            for raw in f:
                lineno += 1
                if raw.strip():
                    try:
                        rec = json.loads(raw)
                    except (ValueError, UnicodeDecodeError) as exc:
                        raise DataError(self.path, f"not valid JSON ({exc})", lineno) from None
                    try:
                        self.shapes[record_shape(rec)] += 1
                    except ValueError as exc:
                        raise DataError(self.path, str(exc), lineno) from None
                    self.offsets.append(offset)
                    self.lines.append(lineno)
                offset += len(raw)
        if not self.offsets:
            raise DataError(self.path, "no records (the file is empty or blank)")
        self._fh = None

    def __len__(self) -> int:
        return len(self.offsets)

    def record(self, i: int) -> dict:
        if self._fh is None or self._fh.closed:
            self._fh = open(self.path, "rb")
        self._fh.seek(self.offsets[i])
        return json.loads(self._fh.readline())

    def line_of(self, i: int) -> int:
        return int(self.lines[i])

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_fh"] = None
        return state


# -- tokenisation ---------------------------------------------------------------
def _ids(tokenizer, text: str, special: bool) -> list[int]:
    return list(tokenizer(text, add_special_tokens=special)["input_ids"])


def _chat_ids(tokenizer, messages, generation_prompt: bool) -> list[int]:
    out = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=generation_prompt,
                                        return_dict=False)
    if isinstance(out, dict) or hasattr(out, "keys"):
        out = out["input_ids"]
    return list(out)


def check_tokenizer(tokenizer, index: JsonlIndex, where: str) -> None:
    """Refuse a tokenizer that cannot encode this data, in one line (``where``: the tokenizer's source)."""
    if index.shapes.get("messages") and not getattr(tokenizer, "chat_template", None):
        first = next(index.line_of(i) for i in range(len(index)) if "messages" in index.record(i))
        raise DataError(where, f"the tokenizer has no chat template, and {index.path} has "
                               f"{index.shapes['messages']} chat ('messages') records, the first at line {first}: "
                               "use a tokenizer with a chat template, or prompt/completion records")
    if tokenizer.eos_token_id is None:
        raise DataError(where, "the tokenizer has no EOS token: sequences could not be ended")
    probe = "the quick brown fox jumps over the lazy dog 12"
    ids = _ids(tokenizer, probe, special=False)
    unk = tokenizer.unk_token_id
    if not ids or (unk is not None and all(i == unk for i in ids)):
        raise DataError(where, "the tokenizer encodes text to nothing but unknown tokens (an empty vocabulary: "
                               "offline, from_pretrained can return one silently)")


def encode(tokenizer, rec: dict, max_len: int) -> tuple[list[int], list[int]]:
    """``(input_ids, labels)`` for one record, cut to ``max_len`` tokens; labels are ``-100`` where no loss."""
    shape = record_shape(rec)
    eos = tokenizer.eos_token_id
    if shape == "text":
        ids = _ids(tokenizer, rec["text"], special=True)
        if not ids or ids[-1] != eos:
            ids.append(eos)
        labels = list(ids)
    elif shape == "prompt":
        p = _ids(tokenizer, rec["prompt"], special=True)
        if p and p[-1] == eos:          # tokenizers that end every encoding with EOS
            p = p[:-1]
        c = _ids(tokenizer, rec["completion"], special=False)
        if not c or c[-1] != eos:
            c.append(eos)
        ids, labels = p + c, [IGNORE] * len(p) + c
    else:
        msgs = rec["messages"]
        ids = _chat_ids(tokenizer, msgs, generation_prompt=False)
        labels = [IGNORE] * len(ids)
        for k, m in enumerate(msgs):
            if m["role"] != "assistant":
                continue
            # The assistant's tokens: what the turn adds to the conversation rendered up to the prompt
            # for it. Templates that rewrite earlier turns (thinking removal) are not prefix-stable.
            start = len(_chat_ids(tokenizer, msgs[:k], generation_prompt=True)) if k else 0
            upto = _chat_ids(tokenizer, msgs[:k + 1], generation_prompt=False)
            if ids[:len(upto)] != upto:
                raise ValueError("the chat template renders an earlier turn differently once later turns "
                                 "follow; assistant tokens cannot be located")
            labels[start:len(upto)] = upto[start:]
    return ids[:max_len], labels[:max_len]


@dataclass
class Item:
    input_ids: list[int]
    labels: list[int]
    position_ids: list[int] | None   # packed rows: positions restart at every record

    @property
    def loss_tokens(self) -> int:
        # a label predicts the token after it: the first position has no target
        return sum(1 for x in self.labels[1:] if x != IGNORE)


class TokenizedSet:
    """The trainable items of a JSONL file: records, or packed rows of records."""

    def __init__(self, index: JsonlIndex, tokenizer, seq_len: int, packing: bool):
        self.index, self.tokenizer, self.seq_len, self.packing = index, tokenizer, seq_len, packing
        self.truncated = 0
        self.no_loss = 0
        self.tokens = 0
        self.rows: list[array] | None = None
        self._scan()

    def _encode(self, i: int) -> tuple[list[int], list[int]]:
        try:
            return encode(self.tokenizer, self.index.record(i), self.seq_len)
        except ValueError as exc:
            raise DataError(self.index.path, str(exc), self.index.line_of(i)) from None

    def _scan(self) -> None:
        """Encode every record once, before training: errors now, truncation counts, and (packing) the rows:
        greedy in file order, a row takes records while they fit in ``seq_len`` tokens."""
        rows, cur, used = [], array("q"), 0
        for i in range(len(self.index)):
            rec = self.index.record(i)
            try:
                ids, labels = encode(self.tokenizer, rec, 1 << 30)
            except ValueError as exc:
                raise DataError(self.index.path, str(exc), self.index.line_of(i)) from None
            n = min(len(ids), self.seq_len)
            self.truncated += len(ids) > self.seq_len
            self.no_loss += all(x == IGNORE for x in labels[1:n])
            self.tokens += n
            if used + n > self.seq_len and len(cur):
                rows.append(cur)
                cur, used = array("q"), 0
            cur.append(i)
            used += n
        if len(cur):
            rows.append(cur)
        self.rows = rows if self.packing else None

    def __len__(self) -> int:
        return len(self.rows) if self.packing else len(self.index)

    def item(self, j: int) -> Item:
        if not self.packing:
            ids, labels = self._encode(j)
            return Item(ids, labels, None)
        ids, labels, pos = [], [], []
        for i in self.rows[j]:
            a, b = self._encode(int(i))
            ids += a
            # the first token of a record is no target: predicting it would cross from the record before
            labels += [IGNORE] + b[1:]
            pos += range(len(a))
        return Item(ids, labels, pos)


def collate(items: list[Item], pad_id: int, seq_len: int | None = None) -> dict:
    """Right-pad to the longest item (or ``seq_len``); tensors for ``model(**batch)``.

    Padded items: an ``attention_mask`` (0 on padding). Packed items: ``position_ids`` and no attention
    mask (the model derives the per-record mask from where positions restart); the padding is a
    block of its own with positions from 0. Labels are ``-100`` on padding.
    """
    import torch
    width = seq_len or max(len(it.input_ids) for it in items)
    width = max(width, 1)
    n = len(items)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    labels = torch.full((n, width), IGNORE, dtype=torch.long)
    packed = items[0].position_ids is not None
    if packed:
        pos = torch.zeros((n, width), dtype=torch.long)
    else:
        mask = torch.zeros((n, width), dtype=torch.long)
    for r, it in enumerate(items):
        k = len(it.input_ids)
        ids[r, :k] = torch.tensor(it.input_ids, dtype=torch.long)
        labels[r, :k] = torch.tensor(it.labels, dtype=torch.long)
        if packed:
            pos[r, :k] = torch.tensor(it.position_ids, dtype=torch.long)
            pos[r, k:] = torch.arange(width - k)
        else:
            mask[r, :k] = 1
    out = {"input_ids": ids, "labels": labels}
    if packed:
        out["position_ids"] = pos
    else:
        out["attention_mask"] = mask
    return out

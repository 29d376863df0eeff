"""The merge preview stage: every object the operators create from rendered documents.

Each document's kind (kdt.kinds) expands it (its `expand` hook: the operator's defaulting, injection
and merges, in kdt.expand's per-operator modules). Nothing here mutates a rendered document:
every expansion works on a fresh copy (kdt.expand.model.Loader).

    expanded, findings = expand_documents(docs, trainer_version="2.3")
"""
from __future__ import annotations

import json
from typing import Iterable

from . import kinds as K
from .documents import Document
from .errors import MALFORMED
from .expand.model import Expanded, Loader
from .findings import WARNING, Finding, format_path

__all__ = ["Expanded", "Loader", "expand_documents", "summary_line", "explain_lines", "pod_notes"]


def expand_documents(docs: Iterable[Document], trainer_version: str | None = None,
                     roundtrip: bool = False, loader: Loader | None = None, options: dict | None = None
                     ) -> tuple[list[Expanded], list[Finding]]:
    """Every object the operators create from `docs`, and findings for references that do not resolve.

    trainer_version: "2.1", "2.3", ... (None: inferred per TrainJob from the fields it uses).
    roundtrip: build objects from ruamel round-trip data, so dumping them keeps the source's comments.
    options: per-operator settings the kinds read (kdt.kinds.base.ExpandContext.options).
    """
    docs = list(docs)
    ctx = K.ExpandContext(docs, loader or Loader(roundtrip), trainer_version, options or {})
    out: list[Expanded] = []
    findings: list[Finding] = []
    for d in docs:
        k = K.of(d)
        if k is None or not isinstance(d.data, dict):
            continue
        try:
            result = k.expand(d, ctx)
        except MALFORMED as exc:
            # An object whose fields have the wrong shape (a list where a mapping goes): the schema
            # findings say where; the preview of this one object is skipped, never the run.
            findings.append(d.finding("expand", f"not expanded: the {d.kind} does not have the shape the "
                                                f"operator reads ({type(exc).__name__}); see its schema findings",
                                      level=WARNING))
            continue
        if result is None:      # a kind the preview does not expand
            continue
        e, f = result
        out.extend(e)
        findings.extend(f)
    return out, findings


def summary_line(target: str, expanded: list[Expanded]) -> str:
    """One line per target: what the operators create, and the rendezvous they set up."""
    if not expanded:
        return f"{target}: nothing for an operator to create"
    by_source: dict[tuple, list[Expanded]] = {}
    for e in expanded:
        by_source.setdefault((e.source.file, e.source.index, e.source.name), []).append(e)
    parts = []
    for items in by_source.values():
        k = K.of(items[0].source)
        parts.append(k.describe(items) if k is not None else "")
    return f"{target}: " + "; ".join(p for p in parts if p)


def pod_notes(e: Expanded) -> list[str]:
    """What each pod computes at start from the env it is given (the source kind's `notes`)."""
    k = K.of(e.source)
    return k.notes(e) if k is not None else []


def _short(value) -> str:
    text = str(value) if not isinstance(value, (dict, list)) else json.dumps(value, default=str, sort_keys=False)
    return text if len(text) <= 100 else text[:97] + "..."


def _get(obj, path):
    cur = obj
    for p in path:
        try:
            cur = cur[p]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


def explain_lines(e: Expanded) -> list[str]:
    """`Kind/name path = value  <- origin`, one line per field an operator injected or an override set."""
    lines = []
    seen = set()
    for path, origin in e.trace.entries:
        key = (path, origin)
        if key in seen:
            continue
        seen.add(key)
        value = _get(e.obj, path)
        shown = "(removed)" if value is None and origin.endswith("(removed)") else _short(value)
        lines.append(f"{e.kind}/{e.name} {format_path(path)} = {shown}  <- {origin}")
    return lines

"""What a rendered target runs: kinds, nodes, GPUs per node, world size.

Derived from the documents alone (what the operator will read), so the table
in `make preview` and the summary lines of `diff` cannot disagree with the manifests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from . import kinds as K
from .documents import Document
from .errors import MALFORMED
from .kinds import Workload

__all__ = ["Workload", "TargetSummary", "workload", "summarize", "table", "summary_rows", "SUMMARY_HEADER"]


def workload(doc: Document, docs: Iterable[Document] | None = None) -> Workload | None:
    """The summary row of a training job (its kind's `workload` hook); None for other documents."""
    k = K.of(doc)
    if k is None or not isinstance(doc.data, dict) or not isinstance(doc.data.get("spec") or {}, dict):
        return None
    return k.workload(doc, list(docs) if docs is not None else None)


@dataclass
class TargetSummary:
    target: str
    kinds: list[str] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)


def summarize(target: str, docs: Iterable[Document]) -> TargetSummary:
    out = TargetSummary(target)
    docs = list(docs)
    for d in docs:
        if d.kind and d.kind not in out.kinds:
            out.kinds.append(d.kind)
        try:
            w = workload(d, docs)
        except MALFORMED:
            w = None    # a malformed workload (its schema findings say where): no row of its own
        if w:
            out.workloads.append(w)
    return out


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*map(str, r)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def summary_rows(summaries: list[TargetSummary]) -> list[list[str]]:
    rows = []
    for s in summaries:
        kinds = ",".join(s.kinds) or "-"
        if not s.workloads:
            rows.append([s.target, kinds, "-", "-", "-", "-"])
        for w in s.workloads:
            rows.append([s.target, kinds, w.nodes, str(w.gpus_per_node), w.procs_per_node, w.world_size])
    return rows


SUMMARY_HEADER = ["target", "kinds", "nodes", "GPUs/node", "procs/node", "world size"]

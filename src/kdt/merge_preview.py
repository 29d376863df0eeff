"""The merge preview stage: every object the operators create from rendered documents.

Each document's kind (kdt.kinds) expands it (its `expand` hook: the operator's defaulting, injection
and merges, in kdt.expand's per-operator modules). Nothing here mutates a rendered document:
every expansion works on a fresh copy (kdt.expand.model.Loader).

    expanded, findings = expand_documents(docs, trainer_version="2.3")
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterable

from . import kinds as K
from .documents import Document
from .errors import MALFORMED
from .operators.torchft import groups as TORCHFT
from .expand.model import Expanded, Held, Limit, Loader
from .findings import WARNING, Finding, format_path

if TYPE_CHECKING:
    from .operators.kueue.expand import Workload as KueueWorkload

__all__ = ["Expanded", "Held", "Limit", "Loader", "Expansion", "expand_documents", "summary_line", "explain_lines",
           "pod_notes", "elided_lines", "kueue_workloads", "workload_line"]


class Expansion(tuple):
    """(objects, findings), as a pair unpacks; `held` lists the jobs for which nothing is created yet."""

    held: list

    def __new__(cls, objects: list, findings: list, held: list):
        self = super().__new__(cls, (objects, findings))
        self.held = held
        return self


def expand_documents(docs: Iterable[Document], trainer_version: str | None = None,
                     roundtrip: bool = False, loader: Loader | None = None, options: dict | None = None
                     ) -> Expansion:
    """Every object the operators create from `docs`, and findings for what the webhooks refuse and for
    references that do not resolve.

    trainer_version: "2.1", "2.3", ... (None: inferred per TrainJob from the fields it uses).
    roundtrip: build objects from ruamel round-trip data, so dumping them keeps the source's comments.
    options: per-operator settings the kinds read (kdt.operators.framework.kind.ExpandContext.options): `limit` (a Limit:
    how many pods of a group are built, default Limit(); Limit(None) builds all), `gang_scheduler` (the
    Training Operator's --gang-scheduler-name), `jobset_feature_gates`.
    """
    docs = list(docs)
    options = {"limit": Limit(), **(options or {})}
    ctx = K.ExpandContext(docs, loader or Loader(roundtrip), trainer_version, options)
    out: list[Expanded] = []
    held: list[Held] = []
    findings: list[Finding] = []
    validated: dict = {}        # (id of a document, release) -> its errors
    reported: set = set()       # ids of documents whose refusal is already among the findings
    for d in docs:
        k = K.of(d)
        if k is None or not isinstance(d.data, dict):
            continue
        refused = _refusals(k, d, ctx, validated, reported)
        if refused:
            findings.extend(refused)
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
        out.extend(x for x in e if not isinstance(x, Held))
        held.extend(x for x in e if isinstance(x, Held))
        findings.extend(f)
    return Expansion(out, findings, held)


def _refusals(k, d: Document, ctx, validated: dict, reported: set) -> list[Finding]:
    """What the API server refuses of `d` and the documents its expansion reads (the kind's
    `admission_inputs`) by their CRDs' schema, enums, limits and CEL rules, asked of validation
    (kdt.validate, the same findings `kdt validate` gives) at the release the preview builds for: each
    refused document's errors once, and for `d` when it is admitted but what it reads is not, why nothing
    is created. As a webhook refusal (kdt.operators.admission), a refusal creates nothing."""
    inputs, release = k.admission_inputs(d, ctx)
    if not inputs:
        return []
    from .validate import RULE as SCHEMA, validate_documents
    out: list[Finding] = []
    refused = []
    for doc in inputs:
        key = (id(doc), release)
        if key not in validated:
            validated[key] = [f for f in validate_documents([doc], trainer_version=release)
                              if f.level != WARNING and f.rule == SCHEMA]
        if validated[key]:
            refused.append(doc)
            if id(doc) not in reported:
                reported.add(id(doc))
                out.extend(validated[key])
    if refused and refused[0] is not d:
        other = refused[0]
        out.append(d.finding("expand", f"nothing is created: the API server refuses {other.kind}/{other.name}, "
                                       "which this object needs (its findings say why)"))
    return out


def summary_line(target: str, expanded: list[Expanded], held: list[Held] = ()) -> str:
    """One line per target: what the operators create, and the rendezvous they set up; for a job held,
    that nothing is created yet and why."""
    if not expanded and not held:
        return f"{target}: nothing for an operator to create"
    by_source: dict[tuple, list] = {}
    for e in [*expanded, *held]:
        by_source.setdefault((e.source.file, e.source.index, e.source.name), []).append(e)
    parts = []
    for items in by_source.values():
        src = items[0].source
        waiting = [h.reason for h in items if isinstance(h, Held)]
        if waiting:
            parts.append(f"{src.kind}/{src.name}: nothing created yet: {waiting[0]}")
            continue
        found = [g for e in items for g in TORCHFT.groups(e, K.POD.matches)]
        if found:       # replica groups: each pod its own torchrun, no rendezvous to show (kdt.operators.torchft.groups)
            parts.append(TORCHFT.describe(items, found, K.POD.matches))
            continue
        k = K.of(src)
        parts.append(k.describe(items) if k is not None else "")
    return f"{target}: " + "; ".join(p for p in parts if p)


def elided_lines(expanded: list[Expanded]) -> list[str]:
    """One line per group of objects the preview counted instead of building (past its Limit)."""
    seen, out = set(), []
    for e in expanded:
        for what, first, last, count in e.facts.get("elided") or ():
            key = (e.source.file, e.source.index, what)
            if key not in seen:
                seen.add(key)
                out.append(f"{e.source.kind}/{e.source.name}: {count:,} more {what} not shown (indices {first:,} to "
                           f"{last:,}: the same template, their index in the name and the env)")
    return out


def pod_notes(e: Expanded) -> list[str]:
    """What each pod computes at start from the env it is given (the source kind's `notes`; a torchft
    replica group: its group and the Lighthouse it asks)."""
    found = TORCHFT.groups(e, K.POD.matches)
    if found:
        return TORCHFT.notes(found)
    if TORCHFT.runs_groups(e):
        return []           # its pods say what each reads (no node ranks: every group is its own torchrun)
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


def kueue_workloads(docs: Iterable[Document], expanded: list[Expanded], trainer_version: str | None = None,
                    options: dict | None = None) -> list[tuple[Document, "KueueWorkload"]]:
    """The Kueue Workload each queued job of `docs` becomes (kdt.kinds.kueue_workload; kdt.operators.kueue.expand), read
    from the job and from what the preview made of it (a TrainJob's JobSet)."""
    docs = list(docs)
    ctx = K.ExpandContext(docs, Loader(), trainer_version, options or {})
    out = []
    for d in docs:
        try:
            w = K.kueue_workload(d, ctx, [e for e in expanded if e.source is d] or None)
        except MALFORMED:
            continue            # the schema findings say where; the preview's own finding says it is skipped
        if w is not None:
            out.append((d, w))
    return out


def workload_line(w: "KueueWorkload") -> str:
    """`Kueue Workload trainjob-t5-fsdp-<hash> (queue training): node 64 x {...}; total ...; topology ...`."""
    from .operators.kueue.facts import show_value
    parts = []
    for ps in w.pod_sets:
        per_pod = ", ".join(f"{r} {show_value(r, v)}" for r, v in sorted(ps.requests().items()))
        parts.append(f"{ps.name} {ps.count} x {{{per_pod}}}")
    total = ", ".join(f"{r} {show_value(r, v)}" for r, v in sorted(w.total().items()))
    topo = sorted({f"{a.rsplit('/', 1)[1].removeprefix('podset-').removesuffix('-topology')} {v}"
                   for ps in w.pod_sets if ps.topology is not None for a, v in ps.topology.levels()})
    return (f"Kueue Workload {w.as_object()['metadata']['generateName']}<hash> (queue {w.queue}): "
            + "; ".join(parts) + f"; total {total}" + (f"; topology {', '.join(topo)}" if topo else ""))


class TargetPreview(tuple):
    """One target's preview: (name, expanded, held, workloads) (workloads: [(job, the Kueue Workload it becomes)])."""
    __slots__ = ()

    def __new__(cls, name: str, expanded: list, held: list, workloads: list):
        return super().__new__(cls, (name, expanded, held, workloads))

    name = property(lambda self: self[0])
    expanded = property(lambda self: self[1])
    held = property(lambda self: self[2])
    workloads = property(lambda self: self[3])


def preview_targets(groups, trainer_version: str | None = None, options: dict | None = None,
                    roundtrip: bool = True) -> tuple[list[TargetPreview], list[Finding]]:
    """Every target's preview (`groups`: (name, documents, its read or render findings)); a target that did not
    render or read previews nothing (its error says why), and in a set of files one that cannot be read is its
    own error while the others' objects are still expanded."""
    problems: list[Finding] = []
    out = []
    loader = Loader(roundtrip=roundtrip)
    for name, docs, fs in groups:
        problems.extend(fs)
        if not docs:
            continue
        result = expand_documents(docs, trainer_version=trainer_version, loader=loader, options=options)
        expanded, efs = result
        problems.extend(efs)
        out.append(TargetPreview(name, expanded, result.held, kueue_workloads(docs, expanded, trainer_version, options)))
    return out, problems

"""kdt's own admission verdict on each document, to set beside the API server's.

A document is refused by kdt when `validate` has an error on it (schemas, CRD rules, the API server's
validation beyond the schema: kdt.apivalidation) or a lint error whose basis is "rejected" (the API server
or an operator's webhook refuses it: kdt.lint.engine.BASES; a finding's own basis where it carries one,
kdt.lint.engine.basis_of) reports an error on it. Lint's other errors
("breaks": accepted, but the run fails) are not admission verdicts and are not compared.
"""
from __future__ import annotations

import re

from .. import findings as F
from ..documents import Document


def ours(docs: list[Document], trainer_version: str, training_operator: str, cluster=None,
         run_docs: list[Document] | None = None, kubernetes_version: str | None = None) -> dict:
    """{doc_key(document): [error findings that mean a refusal]}; `run_docs`: the documents
    applied with these (a folder's other files), where lint's references resolve as in a walk of the folder;
    `kubernetes_version`: the schemas' release, by default the live control plane's (kdt.live.releases), so
    kdt is asked about the API the server it is set beside serves."""
    from ..lint.engine import all_rules, basis_of, run_rules
    from ..validate import validate_documents
    from .releases import KUBERNETES
    k8s = kubernetes_version or ".".join(KUBERNETES.lstrip("v").split(".")[:2])
    # server-side: the judge applies so (kdt.live.admission), whatever the repository does (kdt.live.check says)
    found = validate_documents(docs, trainer_version=trainer_version, training_operator=training_operator,
                               kubernetes_version=k8s, apply="server-side")
    rules = all_rules()
    lint = [f for f in run_rules(docs, trainer_version, cluster=cluster, run_docs=run_docs, kubernetes_version=k8s)
            if f.level == F.ERROR and basis_of(f, rules) == "rejected"]
    out: dict = {}
    by_index = {(d.file, d.index, d.prefix): d for d in docs}
    for f in [*found, *lint]:
        if f.level != F.ERROR or f.doc is None:
            continue
        # a List's item by the `items[i]` its path starts with
        d = by_index.get((f.file, f.doc, F.list_item_prefix(f.path)))
        if d is None:
            continue
        out.setdefault(doc_key(d), []).append(f)
    return out


def basis_disagreements(admissions) -> dict:
    """{rule: documents} of each rule whose basis says "rejected" (kdt.lint.engine.basis_of; validate's rules
    always) on a document the API server and the webhooks accept: the rules whose basis disagrees with the
    server (bench/live_judge.py and bench/live_repos.py list them)."""
    out: dict = {}
    for a in admissions:
        if a.skipped is None and a.refused is None:
            for rule in sorted({f.rule for f in a.ours}):
                out[rule] = out.get(rule, 0) + 1
    return out


def doc_key(d: Document) -> tuple:
    """A document among a unit's (kdt.live.admission.units): its file (a walked folder's files share their
    target's name), its index in the file, its List item."""
    return (d.file, d.index, d.prefix)


# -- the fields a refusal names ------------------------------------------------------------------------------
# A field error prints as `<field path>: <type>[: <value>][: <detail>]` (apimachinery v0.36.3
# pkg/util/validation/field/errors.go Error.Error and ErrorType.String), one per cause: kubectl lists an
# Invalid status's causes as `* <path>: ...` lines, a webhook's denial carries its field.ErrorList's aggregate
# (`a: ..., b: ...`, in brackets when several: apimachinery pkg/util/errors NewAggregate). A path is JSON
# names joined by dots with `[i]` for list items and `[key]` for map keys; `<nil>` is a cause on no field.
_FIELD_TYPES = ("Not found", "Required value", "Duplicate value", "Invalid value", "Unsupported value", "Forbidden",
                "Too long", "Too many", "Too few", "Too short", "Internal error")
_NAME_PATH = r"[A-Za-z_$][\w$-]*(?:\[[^\]\s]*\]|\.[A-Za-z_$][\w$-]*)*"
_PATH = r"\.?" + _NAME_PATH
_FIELD_ERROR = re.compile(r"(?:^|(?<=[\s\[*,(]))(" + _PATH + r"): (?:" + "|".join(_FIELD_TYPES) + r")\b")
# server-side apply builds a typed patch first (structured-merge-diff): `.spec.x: field not declared in schema`,
# `.spec.x: duplicate entries for key [name="w"]`, `.spec.x: expected list, got ...`
_TYPED_PATCH = re.compile(r"(?:^|(?<=[\s\[*,(:]))(\." + _NAME_PATH + r"): (?:field not declared in schema|"
                          r"duplicate entries for key|expected )")
# strict decoding (a create's unknown field) and a value of the wrong type
_UNKNOWN = re.compile(r'unknown field "(' + _PATH + r')"')
_GO_FIELD = re.compile(r"Go struct field \w+\.(" + _PATH + r") of type")


def server_fields(message: str | None) -> list[str]:
    """The field paths an API server or webhook refusal names, in order, each once (`<nil>` causes and
    messages without a field path give none)."""
    if not message:
        return []
    out: list[str] = []
    for rx in (_FIELD_ERROR, _TYPED_PATCH, _UNKNOWN, _GO_FIELD):
        for m in rx.finditer(message):
            p = m.group(1).lstrip(".")
            if p and p not in out:
                out.append(p)
    return out


_SEGMENT = re.compile(r'\[("?)([^\]]*?)\1\]|\.?([^.\[\]]+)')


def segments(path: str) -> tuple[str, ...]:
    """A path as its segments, the same whoever wrote it: kdt's `labels["a.b/c"]`, the API server's
    `limits[nvidia.com/gpu]`, a Go field name (Trainer's webhook writes `spec.RuntimeRef`) and JSON's
    `runtimeRef`, a map key as `.Master` or `[Master]`."""
    return tuple((m.group(2) if m.group(3) is None else m.group(3)).lower() for m in _SEGMENT.finditer(path or ""))


SAME, NESTED, DIFFERENT, NO_SERVER_FIELD, NO_KDT_FIELD = ("same field", "nested field", "different field",
                                                          "server gave no field", "kdt gave no field")


def compare_fields(ours: list[str], server: list[str]) -> str:
    """Where both refuse a document: SAME when a path kdt names is one the server names; NESTED when one
    names a field inside the other's (a CEL rule on `spec.resourceGroups[0]`, kdt on a field of that item);
    else DIFFERENT; NO_SERVER_FIELD / NO_KDT_FIELD when a side names none."""
    if not server:
        return NO_SERVER_FIELD
    if not ours:
        return NO_KDT_FIELD
    a = {segments(p) for p in ours}
    b = {segments(p) for p in server}
    if a & b:
        return SAME
    if any(x[:len(y)] == y or y[:len(x)] == x for x in a for y in b):
        return NESTED
    return DIFFERENT


def finding_path(f, doc: Document) -> str:
    """A finding's JSON path relative to its object (a List item's `items[i].` prefix taken off)."""
    path = f.path or ""
    if doc.prefix:
        prefix = F.format_path(doc.prefix)
        if path.startswith(prefix):
            path = path[len(prefix):].lstrip(".")
    return path

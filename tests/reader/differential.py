"""kdt's reading of the edge-case corpus against the pinned kubectl's, per document and per way of applying.

Shared by tests/reader/test_kubectl_differential.py (which fails on any difference that is not listed as
deliberate) and bench/reader.py (which prints the agreement and every deliberate difference).
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import cases as C
import oracle

from kdt.apivalidation.dispatch import RULES as API_RULES
from kdt.documents import bad_bytes_finding, read_stream
from kdt.kubeyaml import APPLY, BOTH, KUSTOMIZE, decode
from kdt.validate import supersede, validate_documents

PATHS = {APPLY: "apply", KUSTOMIZE: "kustomize"}


def _refuses(f, reader: str) -> bool:
    # kubectl's client-side decode (the oracle) runs none of the API server's checks (label values, names):
    # those are kdt's api-* findings, judged against the API server's own tests in bench/apiserver.py.
    return f.level == "error" and f.rule not in API_RULES and reader in (f.extra.get("refused_by") or BOTH)


def ours(case: C.Case) -> tuple[list[bool], bool, list]:
    """(refused by `kubectl apply -f`, per document read; refused by `kubectl kustomize`; the findings)."""
    text, bad = decode(case.data)
    name = f"{case.name}.yaml"
    read = read_stream(text, name, paths=BOTH, named=True)
    schema = validate_documents(read.documents)
    findings = supersede(read.findings, schema) + schema
    if bad is not None:
        findings.insert(0, bad_bytes_finding(bad, name, BOTH))
    apply = [any(_refuses(f, APPLY) for f in findings if f.doc == i) for i in read.read]
    kustomize = any(_refuses(f, KUSTOMIZE) for f in findings)
    return apply, kustomize, findings


@dataclass
class Row:
    case: C.Case
    path: str                  # "apply" | "kustomize"
    ours: str
    kubectl: str
    agree: bool
    deliberate: str            # the reason, when the difference is kept on purpose


def _seq(flags: list[bool]) -> str:
    return " ".join("refused" if x else "ok" for x in flags) or "(no object)"


def compare(selected: list[C.Case] | None = None, work: Path | None = None) -> list[Row]:
    """Run kubectl once for every case (apply: one call; kustomize: one build per case, in parallel)."""
    selected = selected if selected is not None else C.CASES
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        folder = Path(tmp)
        files = []
        for c in selected:
            f = folder / f"{c.name}.yaml"
            f.write_bytes(c.data)
            files.append(f)
        mine = {c.name: ours(c) for c in selected}
        applied = oracle.apply_verdicts(files)
        kustomized = oracle.kustomize_verdicts(files, folder / "k",
                                               likely_ok={f"{n}.yaml" for n, m in mine.items() if not m[1]})
    rows = []
    for c in selected:
        mine_apply, mine_kust, _ = mine[c.name]
        theirs = applied[f"{c.name}.yaml"]
        kflags = [v != oracle.OK for v in theirs]
        stop = next((i for i, v in enumerate(theirs) if v.startswith("parse:")), None)
        if stop is not None:
            agree = len(mine_apply) > stop and mine_apply[:stop + 1] == kflags
        else:
            agree = mine_apply == kflags
        rows.append(Row(c, "apply", _seq(mine_apply if stop is None else mine_apply[:stop + 1]),
                        " ".join("ok" if v == oracle.OK else v for v in theirs) or "(no object)",
                        agree, c.deliberate.get("apply", "")))
        kv = kustomized[f"{c.name}.yaml"]
        rows.append(Row(c, "kustomize", "refused" if mine_kust else "ok", kv,
                        mine_kust == (kv != oracle.OK), c.deliberate.get("kustomize", "")))
    return rows

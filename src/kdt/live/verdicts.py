"""kdt's own admission verdict on each document, to set beside the API server's.

A document is refused by kdt when `validate` has an error on it (schemas, CRD rules, the API server's
validation beyond the schema: kdt.apivalidation) or a lint rule whose BASIS is "rejected" (the API server
or an operator's webhook refuses it: kdt.lint.engine.BASES) reports an error on it. Lint's other errors
("breaks": accepted, but the run fails) are not admission verdicts and are not compared.
"""
from __future__ import annotations

from .. import findings as F
from ..documents import Document


def ours(docs: list[Document], trainer_version: str, training_operator: str, cluster=None) -> dict:
    """{(target, document index, prefix): [error findings that mean a refusal]}"""
    from ..lint.engine import all_rules, run_rules
    from ..validate import validate_documents
    found = validate_documents(docs, trainer_version=trainer_version, training_operator=training_operator)
    rules = all_rules()
    lint = [f for f in run_rules(docs, trainer_version, cluster=cluster)
            if f.level == F.ERROR and getattr(rules.get(f.rule), "basis", "") == "rejected"]
    out: dict = {}
    by_index = {(d.file, d.index): d for d in docs}
    for f in [*found, *lint]:
        if f.level != F.ERROR or f.doc is None:
            continue
        d = by_index.get((f.file, f.doc))
        if d is None:
            continue
        out.setdefault((d.target, d.index, d.prefix), []).append(f)
    return out

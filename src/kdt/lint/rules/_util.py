"""Helpers shared by rules (not a rule: modules starting with _ are skipped)."""
from __future__ import annotations

from ... import kinds as K
from ...operators import training_operator_v1 as TO


def pytorchjobs(docs):
    return [d for d in docs if K.PYTORCHJOB.matches(d)]


def trainjobs(docs):
    return [d for d in docs if K.TRAINJOB.matches(d)]


def runtimes(docs):
    return K.runtimes(docs)


def replica_specs(doc):
    rs = doc.get(("spec", TO.REPLICA_SPECS))
    return rs if isinstance(rs, dict) else {}


def is_torch_runtime(doc) -> bool:
    ml = doc.get(("spec", "mlPolicy"))
    return isinstance(ml, dict) and "torch" in ml


def d(v):
    return v if isinstance(v, dict) else {}


def lst(v):
    return v if isinstance(v, list) else []

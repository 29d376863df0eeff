"""Helpers shared by rules (not a rule: modules starting with _ are skipped)."""
from __future__ import annotations

from ...operators import trainer_v2 as TV2
from ...operators import training_operator_v1 as TO


def pytorchjobs(docs):
    return [d for d in docs if d.kind == TO.KIND and d.group == TO.GROUP]


def trainjobs(docs):
    return [d for d in docs if d.kind == TV2.TRAINJOB and d.group == TV2.GROUP]


def runtimes(docs):
    return [d for d in docs if d.kind in TV2.RUNTIME_KINDS and d.group == TV2.GROUP]


def replica_specs(doc):
    rs = doc.get(("spec", "pytorchReplicaSpecs"))
    return rs if isinstance(rs, dict) else {}


def is_torch_runtime(doc) -> bool:
    ml = doc.get(("spec", "mlPolicy"))
    return isinstance(ml, dict) and "torch" in ml


def d(v):
    return v if isinstance(v, dict) else {}


def lst(v):
    return v if isinstance(v, list) else []

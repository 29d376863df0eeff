"""Helpers shared by rules (not a rule: modules starting with _ are skipped)."""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators.trainer_v2 import facts as TV2
from ...operators.trainer_v2 import webhook as TVW
from ...operators.training_operator_v1 import facts as TO


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


def rejections_of(doc, rejections, rule_id):
    """The webhook's rejections (kdt.operators.admission.Rejection) that rule `rule_id` reports, as findings;
    the merge preview reports the same ones, so each shows once."""
    for r in rejections:
        if r.rule == rule_id:
            yield doc.finding(r.rule, r.message, r.path, level=WARNING if r.warning else ERROR)


def pytorchjob_rejections(docs, rule_id):
    """What the Training Operator's webhook refuses of each PyTorchJob that rule `rule_id` reports."""
    for doc in pytorchjobs(docs):
        yield from rejections_of(doc, TO.webhook_rejections(doc.data), rule_id)


def trainjob_rejections(docs, ctx, rule_id):
    """What the Trainer webhooks refuse of each TrainJob (against its runtime) that rule `rule_id` reports;
    TrainJobs whose runtime is not in the run are left out (the webhook checks against it)."""
    pool = ctx.pool(docs)
    for job in trainjobs(docs):
        rt = TV2.find_runtime(job, pool)
        if rt is not None and isinstance(rt.data, dict) and isinstance(job.data, dict):
            yield from rejections_of(job, TVW.webhook_rejections(job.data, rt.data, ctx.trainer_version), rule_id)

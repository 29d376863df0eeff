"""Each side of the proof in one vocabulary: the pods an operator creates from a job, and its run policy.

What both sides share; each operator's side is its `migrate.side` (its kind's `migration_side` hook calls it
with the merge preview's objects of one document):
- a PyTorchJob's pods, node i being rank i (the Master node 0), each resolving by its own name (the
  Training Operator gives every pod a headless Service of that name, common/service.go CreateNewService);
- a TrainJob's JobSet's pods (kdt.operators.jobset.expand.pods), node i being completion index i of the trainer job,
  each resolving by `<hostname>.<subdomain>` (kdt.operators.jobset.facts.subdomain).
The run policy (backoff limit, deadline, TTL, suspend, pods deleted at the end, gang, group restarts, Kueue
queue, managedBy, the job's labels) is read from the job (and for a TrainJob its runtime and JobSet) as
each operator reads it, with each side's defaults written out.
"""
from __future__ import annotations

from ....fields import as_dict

UNLIMITED = "unlimited"
# "pods deleted at the end" in the migration's words, which are the Training Operator's (cleanPodPolicy): None,
# the pods of a finished job are kept (kdt.operators.training_operator_v1.facts.DEFAULT_CLEAN_POD_POLICY)
PODS_KEPT = "None"


def names(host: str, sub: str | None, namespace: str) -> tuple:
    base = f"{host}.{sub}" if sub else host
    ns = namespace or "default"
    return (host, base, f"{base}.{ns}", f"{base}.{ns}.svc", f"{base}.{ns}.svc.cluster.local")


def meta(data: dict) -> dict:
    meta = as_dict(data.get("metadata"))
    out = {}
    for section in ("labels", "annotations"):
        if meta.get(section):
            out[section] = {str(k): v for k, v in as_dict(meta[section]).items()}
    return out

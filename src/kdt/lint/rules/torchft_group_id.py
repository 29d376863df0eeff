"""Every pod of a torchft job has a replica group id of its own.

A replica group is one pod (trainkit's `--fault-tolerance torchft`), and its id,
`REPLICA_GROUP_ID` (or `--replica-group-id`), must be unique in the job: torchft
names the group's Manager after it and its peers find the group's shards by it,
and trainkit deals the data and keeps the group's checkpoints by it. Two pods with
one id (a literal, or an index that repeats) take each other's place at every
quorum; a pod without one does not start. Unique per pod: the Worker
`training.kubeflow.org/replica-index` label in a job whose only replica type runs
groups (a Master's index 0 repeats a Worker's), the Job completion index of a
replicated job that makes one Job (`batch.kubernetes.io/job-completion-index`,
`$(JOB_COMPLETION_INDEX)`), the `jobset.sigs.k8s.io/job-index` label of one-pod
Jobs, the StatefulSet's `apps.kubernetes.io/pod-index` label.

Source: training-operator v1.8/v1.9 pkg/controller.v1/common/pod.go (replica-index per
replica type); kubernetes pkg/controller/job/indexed_job_utils.go (completion index per
Job); jobset api/jobset/v1alpha2/jobset_types.go JobIndexKey; kubernetes
pkg/controller/statefulset (pod-index label, 1.28+); trainkit/args.py.
"""
from __future__ import annotations

import re

from ... import kinds as K
from ...findings import ERROR
from ...operators import injection as INJ
from ...operators.jobset import facts as JS
from ...operators.torchft import facts as TFT
from ._torchft import group_pods, setting

ID = "torchft-group-id"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("The pods start, but two groups with one id take each other's place at every quorum (or a group without one exits at once): the job never trains as many groups as it has.")

_FIELD = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")


def _source(literal: str | None, entry: dict | None) -> str | None:
    """Where the id comes from: a fieldRef's label/annotation key (or field path), `$NAME` for `$(NAME)`,
    None for a literal."""
    ref = ((entry.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath") if entry else None
    if isinstance(ref, str):
        m = _FIELD.match(ref.strip())
        return m.group(2) if m else ref.strip()
    m = re.fullmatch(r"\$\((\w+)\)", (literal or "").strip())
    return f"${m.group(1)}" if m else None


def _problem(gp, literal, entry) -> str | None:
    n = gp.groups
    if literal is None and entry is None:
        return (f"no {TFT.ENV_GROUP_ID} (or --replica-group-id): the replica group does not start "
                "(trainkit needs the pod's own index)")
    src = _source(literal, entry)
    if src is None:
        if n is not None and n <= 1:
            return None
        return (f"{TFT.ENV_GROUP_ID} is the literal {literal!r} in every pod of {n or 'several'}: the groups take "
                "each other's place at every quorum; take it from the pod's own index")
    if gp.owner is K.PYTORCHJOB:
        if src != INJ.V1_LABEL_REPLICA_INDEX:
            return f"{TFT.ENV_GROUP_ID} from {src}: not the pod's index ({INJ.V1_LABEL_REPLICA_INDEX})"
        roles = {r for r in (gp.doc.get(("spec", "pytorchReplicaSpecs")) or {})}
        if len(roles) > 1:
            return (f"{TFT.ENV_GROUP_ID} from {INJ.V1_LABEL_REPLICA_INDEX} in a job with "
                    f"{' and '.join(sorted(roles))}: each replica type counts from 0, so ids repeat; make the "
                    "replica groups one replica type (worker-only)")
        return None
    if gp.owner is K.STATEFULSET:
        return None if src == INJ.STS_LABEL_POD_INDEX else \
            f"{TFT.ENV_GROUP_ID} from {src}: not the pod's index ({INJ.STS_LABEL_POD_INDEX})"
    # a JobSet's, a runtime's or a TrainJob's pods
    if src in (JS.COMPLETION_INDEX_KEY, f"${JS.ENV_COMPLETION_INDEX}"):
        return None if gp.jobs <= 1 else (
            f"{TFT.ENV_GROUP_ID} from the completion index, and replicated job {gp.role!r} makes {gp.jobs} Jobs: "
            "each Job counts from 0, so ids repeat")
    if src == JS.LABEL_JOB_INDEX:
        return None if gp.per_job <= 1 else (
            f"{TFT.ENV_GROUP_ID} from {JS.LABEL_JOB_INDEX}, and each Job of {gp.role!r} has {gp.per_job} pods: "
            "they share it")
    return f"{TFT.ENV_GROUP_ID} from {src}: not a per-pod index this rule knows"


def check(docs, ctx):
    for gp in group_pods(docs, ctx.pool(docs)):
        literal, entry = setting(gp.container, TFT.ENV_GROUP_ID, ("--replica-group-id",))
        msg = _problem(gp, literal, entry)
        if msg:
            where = gp.where if gp.owner is K.TRAINJOB else gp.where + (("env",) if entry is not None else ())
            yield gp.doc.finding(ID, msg, where, level=LEVEL)

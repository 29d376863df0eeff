"""Gangs of a run and the pods that join them (not a rule: shared by gang-min-member and
scheduling-min-available).

A gang is a number of pods a scheduler waits for before it starts any: a PyTorchJob's
`runPolicy.schedulingPolicy.minAvailable` (the Training Operator's PodGroup), a Volcano Job's
`minAvailable`, a PodGroup written by hand (Volcano's or the scheduler-plugins coscheduling's
`minMember`) with the pods that name it, and a StatefulSet's `scheduling.volcano.sh/group-min-member`
(the PodGroup Volcano's pod-group controller makes for its pods). Facts: kdt.operators.scheduling,
kdt.operators.volcano.facts, kdt.operators.scheduler_plugins.facts.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import kinds as K
from ...fields import as_dict, as_int, as_list
from ...operators.torchft import facts as TFT
from ...operators.scheduler_plugins import facts as SP
from ...operators.volcano import facts as VO
from ._torchft import group_pods, setting
from ._util import replica_specs


@dataclass
class Gang:
    """A gang and what can join it. `world` is None where the tooling cannot say how many pods the job needs
    to run (a Volcano Job: its tasks may be elastic by design), so no below-world warning is made."""
    doc: object
    path: tuple           # the field that sets the gang's size
    size: int             # how many pods the scheduler waits for
    pods: int             # how many pods can ever join it (those the run shows)
    world: int | None     # how many pods the job needs to run (elastic: its minimum)
    what: str             # "minAvailable", "minMember", ...
    world_what: str       # what `world` is


def _joining(pool, volcano: bool, name: str, namespace: str) -> int | None:
    """Pods of the run whose templates name PodGroup `name`, Volcano's or else the coscheduling's (None: no
    template does)."""
    total, found = 0, False
    for doc in pool:
        if namespace and doc.namespace and doc.namespace != namespace:
            continue
        for pt in K.pod_templates(doc):
            meta = as_dict(doc.get(pt.metadata_path)) if pt.metadata_path else {}
            if volcano:
                joins = as_dict(meta.get("annotations")).get(VO.GROUP_NAME_ANNOTATION) == name
            else:
                joins = as_dict(meta.get("labels")).get(SP.COSCHEDULING_POD_GROUP_LABEL) == name
            if joins:
                found = True
                total += pt.replicas if pt.replicas is not None else 1
    return total if found else None


def _fewest_groups(doc) -> int | None:
    """A job of torchft replica groups needs only its fewest groups (TRAINKIT_FT_MIN_GROUPS, default 1);
    None for a job that is no replica groups."""
    groups = list(group_pods([doc], [doc]))
    if not groups:
        return None
    low = as_int(setting(groups[0].container, TFT.ENV_MIN_GROUPS, ("--min-replica-groups",))[0])
    return low if low is not None else 1


def gangs(docs, pool) -> list[Gang]:
    out: list[Gang] = []
    for doc in docs:
        if K.PYTORCHJOB.matches(doc):
            sp = doc.get(("spec", "runPolicy", "schedulingPolicy"))
            if not isinstance(sp, dict) or sp.get("minAvailable") is None or as_int(sp.get("minAvailable")) is None:
                continue
            total = sum(as_int(as_dict(r).get("replicas", 1)) or 0 for r in replica_specs(doc).values())
            elastic = as_dict(doc.get(("spec", "elasticPolicy")))
            world = as_int(elastic.get("minReplicas")) if elastic.get("minReplicas") is not None else total
            what = "the elasticPolicy's minReplicas" if elastic.get("minReplicas") is not None else "the sum of the replicas"
            fewest = _fewest_groups(doc)
            if fewest is not None:
                world, what = fewest, f"the fewest replica groups ({TFT.ENV_MIN_GROUPS})"
            out.append(Gang(doc, ("spec", "runPolicy", "schedulingPolicy", "minAvailable"), as_int(sp["minAvailable"]),
                            total, world if world is not None else total, "minAvailable", what))
        elif K.VOLCANO_JOB.matches(doc):
            spec = as_dict(doc.get(("spec",)))
            tasks = [as_dict(t) for t in as_list(spec.get(VO.JOB_TASKS))]
            total = sum(as_int(t.get("replicas"), 0) or 0 for t in tasks)
            for i, t in enumerate(tasks):
                n, m = as_int(t.get("replicas"), 0) or 0, as_int(t.get("minAvailable"))
                if m is not None:
                    out.append(Gang(doc, ("spec", VO.JOB_TASKS, i, "minAvailable"), m, n, None,
                                    "the task's minAvailable", f"task {t.get('name')}'s replicas"))
            if as_int(spec.get("minAvailable")):
                out.append(Gang(doc, ("spec", "minAvailable"), as_int(spec["minAvailable"]), total, None,
                                "minAvailable", "the tasks' replicas"))
        elif K.of(doc) in (K.VOLCANO_POD_GROUP, K.COSCHEDULING_POD_GROUP):
            size = as_int(doc.get(("spec", "minMember")))
            if size is None:
                continue
            volcano = K.VOLCANO_POD_GROUP.matches(doc)
            pods = _joining(pool, volcano, doc.name, doc.namespace)
            if pods is not None:
                how = (f"the pods annotated {VO.GROUP_NAME_ANNOTATION}: {doc.name}" if volcano
                       else f"the pods labelled {SP.COSCHEDULING_POD_GROUP_LABEL}: {doc.name}")
                out.append(Gang(doc, ("spec", "minMember"), size, pods, pods, "minMember", how))
        elif K.STATEFULSET.matches(doc):
            ann = as_dict(doc.get(("metadata", "annotations")))
            size = as_int(ann.get(VO.GROUP_MIN_MEMBER_ANNOTATION))
            if size is not None:
                n = as_int(doc.get(("spec", "replicas"), 1), 1)
                out.append(Gang(doc, ("metadata", "annotations", VO.GROUP_MIN_MEMBER_ANNOTATION), size, n, n,
                                VO.GROUP_MIN_MEMBER_ANNOTATION, "the replicas"))
    return out

"""What each pod of a torchft job reads at start: its replica group and the Lighthouse it asks.

A pod runs a replica group when its training container has trainkit's TRAINKIT_FAULT_TOLERANCE=torchft
(kdt.operators.torchft.facts). Its group id is REPLICA_GROUP_ID as the pod will see it: a literal, or the label
or annotation its fieldRef names (the operators' pod-index labels, a JobSet pod's completion index). The
merge preview shows them in place of a rendezvous (each group is its own one-pod torchrun). Whether an
object is a pod is the registry's answer (kdt.kinds.POD.matches), which the merge preview hands in as `is_pod`:
this module sits below the registry.
"""
from __future__ import annotations

from typing import Callable

from . import facts as TFT
from ...expand.model import Expanded


def _ft_container(pod: dict) -> dict | None:
    for c in (pod.get("spec") or {}).get("containers") or []:
        if isinstance(c, dict) and TFT.runs_group(c):
            return c
    return None


def runs_groups(e: Expanded) -> bool:
    """Whether `e` (a pod, or an object whose pod templates are at spec.replicatedJobs[].template: a JobSet)
    runs torchft replica groups."""
    spec = e.obj.get("spec") or {}
    pods = [e.obj] + [((rj.get("template") or {}).get("spec") or {}).get("template") or {}
                      for rj in spec.get("replicatedJobs") or [] if isinstance(rj, dict)]
    return any(_ft_container(p) is not None for p in pods if isinstance(p, dict))


def _field(entry: dict, labels: dict, annotations: dict):
    """An env entry's value as the pod will see it: a literal, or the label/annotation its fieldRef names."""
    if "value" in entry:
        return entry.get("value")
    ref = str((((entry.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")) or "")
    for prefix, source in (("metadata.labels['", labels), ("metadata.annotations['", annotations)):
        if ref.startswith(prefix) and ref.endswith("']"):
            return source.get(ref[len(prefix):-2], f"({ref}: unset)")
    return f"({ref})" if ref else None


def groups(e: Expanded, is_pod: Callable[[dict], bool]) -> list[tuple[str, str, str]]:
    """[(pod, replica group id, Lighthouse address)] when `e` is a pod that runs a torchft replica group."""
    if not is_pod(e.obj):
        return []
    c = _ft_container(e.obj)
    if c is None:
        return []
    env = {x.get("name"): x for x in c.get("env") or [] if isinstance(x, dict)}
    gid, lh = env.get(TFT.ENV_GROUP_ID), (env.get(TFT.ENV_LIGHTHOUSE) or {}).get("value") or "(not set)"
    meta = e.obj.get("metadata") or {}
    return [(e.name, _field(gid, meta.get("labels") or {}, meta.get("annotations") or {}) if gid else "(not set)",
             lh)]


def describe(items: list[Expanded], found: list[tuple[str, str, str]], is_pod: Callable[[dict], bool]) -> str:
    """The merge preview's summary of one source's objects whose pods run replica groups."""
    ids = ", ".join(f"{pod}={gid}" for pod, gid, _ in found[:4]) + (", ..." if len(found) > 4 else "")
    made = items[0]
    via = f"{made.kind} {made.name}, " if not is_pod(made.obj) else ""
    return (f"{via}{len(found)} pod{'s' if len(found) != 1 else ''}, torchft replica groups, one per pod ({ids}), "
            f"each its own torchrun; Lighthouse {', '.join(sorted({lh for _, _, lh in found}))}")


def notes(found: list[tuple[str, str, str]]) -> list[str]:
    return (["torchft replica groups (trainkit --fault-tolerance torchft): each pod is one group, its own "
             "one-pod torchrun; REPLICA_GROUP_ID and the Lighthouse it asks for each step's quorum:"]
            + [f"  pod {pod}: replica group {gid}, Lighthouse {lh}" for pod, gid, lh in found])

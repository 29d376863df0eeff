"""Merge preview: the objects the operators will create from rendered documents.

One module per operator (`training_operator_v1`, `trainer_v2`, `statefulset`),
shared merge helpers in `merge`; facts (names, ports, env, merge keys) come from
`kdt.operators`. Nothing here mutates a rendered document: every expansion
works on a fresh copy (`model.Loader`).

    expanded, findings = expand_documents(docs, trainer_version="2.3")
"""
from __future__ import annotations

from typing import Iterable

from ..documents import Document
from ..errors import MALFORMED
from ..findings import WARNING, Finding, format_path
from ..operators import trainer_v2 as TV2
from ..operators import training_operator_v1 as TO1
from . import statefulset, trainer_v2, training_operator_v1
from .merge import as_int
from .model import Expanded, Loader

__all__ = ["Expanded", "Loader", "expand_documents", "summary_line", "explain_lines"]

EXPANDABLE = ("PyTorchJob", "TrainJob", "StatefulSet")


def expand_documents(docs: Iterable[Document], trainer_version: str | None = None,
                     roundtrip: bool = False, loader: Loader | None = None
                     ) -> tuple[list[Expanded], list[Finding]]:
    """Every object the operators create from `docs`, and findings for references that do not resolve.

    trainer_version: "2.1", "2.3", ... (None: inferred per TrainJob from the fields it uses).
    roundtrip: build objects from ruamel round-trip data, so dumping them keeps the source's comments.
    """
    docs = list(docs)
    load = loader or Loader(roundtrip)
    out: list[Expanded] = []
    findings: list[Finding] = []
    for d in docs:
        try:
            if d.kind == TO1.KIND and d.group == TO1.GROUP:
                e, f = training_operator_v1.expand(d, load)
            elif d.kind == TV2.TRAINJOB and d.group == TV2.GROUP:
                e, f = trainer_v2.expand(d, docs, load, trainer_version)
            elif d.kind == "StatefulSet" and d.group == "apps":
                e, f = statefulset.expand(d, load)
            else:
                continue
        except MALFORMED as exc:
            # An object whose fields have the wrong shape (a list where a mapping goes): the schema
            # findings say where; the preview of this one object is skipped, never the run.
            findings.append(d.finding("expand", f"not expanded: the {d.kind} does not have the shape the "
                                                f"operator reads ({type(exc).__name__}); see its schema findings",
                                      level=WARNING))
            continue
        out.extend(e)
        findings.extend(f)
    return out, findings



def _env(obj: dict, container: str | None = None) -> dict:
    """name -> value of the first matching container's env (any container when None)."""
    spec = obj.get("spec") or {}
    pods = [spec]
    if obj.get("kind") == "JobSet":
        pods = [(((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
                for rj in spec.get("replicatedJobs") or []]
    for p in pods:
        for c in p.get("containers") or []:
            if container is None or c.get("name") == container:
                return {e.get("name"): e.get("value") for e in c.get("env") or [] if isinstance(e, dict)}
    return {}


def summary_line(target: str, expanded: list[Expanded]) -> str:
    """One line per target: what the operators create, and the rendezvous they set up."""
    if not expanded:
        return f"{target}: nothing for an operator to create"
    parts = []
    pods = [e for e in expanded if e.kind == "Pod"]
    if pods:
        by_source: dict[tuple, list[Expanded]] = {}
        for e in pods:
            by_source.setdefault((e.source.file, e.source.index, e.source.name), []).append(e)
        for items in by_source.values():
            names = ", ".join(e.name for e in items[:4]) + (f", ... {items[-1].name}" if len(items) > 4 else "")
            env = _env(items[0].obj, TO1.CONTAINER_NAME if items[0].source.kind == TO1.KIND else None)
            detail = []
            if items[0].source.kind == TO1.KIND:
                for key in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PET_NNODES", "PET_NPROC_PER_NODE", "PET_RDZV_ENDPOINT"):
                    if key in env:
                        detail.append(f"{key}={env[key]}")
            else:
                detail.append("rank = ordinal")
                detail.append(f"rendezvous {items[0].facts.get('master')}")
            parts.append(f"{len(items)} pod{'s' if len(items) != 1 else ''} ({names})" + (", " + ", ".join(detail) if detail else ""))
    for e in expanded:
        if e.kind == "JobSet":
            f = e.facts
            pods = f.get("pods") or []
            shown = ", ".join(pods[:4]) + (", ..." if len(pods) > 4 else "")
            detail = [f"JobSet {e.name} from {f.get('runtime')} (Trainer {f.get('version')})",
                      f"{len(pods)} pod{'s' if len(pods) != 1 else ''} ({shown})"]
            if f.get("ml_policy", "torch") == "torch":
                detail.append(f"PET_NNODES={f.get('nodes')}")
            elif f.get("ml_policy") == "none":
                detail.append("no ML policy (PlainML: pod count and trainer.env only)")
            if f.get("tf_config"):
                workers = f["tf_config"][0]["cluster"]["worker"]
                detail.append(f"TF_CONFIG worker=[{', '.join(workers[:2])}{', ...' if len(workers) > 2 else ''}] "
                              f"({len(workers)}), task.index = completion index")
            if "nproc_per_node" in f:
                eff = f" ({f['nproc_effective']} per node: torchrun starts one per GPU)" if f.get("nproc_effective") else ""
                detail.append(f"PET_NPROC_PER_NODE={f['nproc_per_node']}{eff}")
            if f.get("world_size") and f.get("ml_policy", "torch") == "torch":
                detail.append(f"world size {f['world_size']}")
            if "master" in f:
                detail.append(f"master {f['master']}")
            parts.append(", ".join(detail))
    return f"{target}: " + "; ".join(parts)


def pod_notes(e: Expanded) -> list[str]:
    """What each pod computes at start from the env it is given (today: the TF_CONFIG of a TensorFlow runtime)."""
    import json
    cfgs = e.facts.get("tf_config") or []
    pods = e.facts.get("pods") or []
    out = []
    per_node = as_int(e.facts.get("nproc_per_node")) or e.facts.get("nproc_effective")
    if e.kind == "JobSet" and "nproc_per_node" in e.facts and per_node:
        out.append(f"PET_NODE_RANK is each pod's completion index; {per_node} processes per node "
                   f"(PET_NPROC_PER_NODE={e.facts['nproc_per_node']}), world size {e.facts.get('world_size')}:")
        trainer = [p for p in pods if p.startswith(f"{e.name}-{e.facts.get('trainer_job', 'node')}-")]
        for i, name in enumerate(trainer):
            out.append(f"  pod {name}: PET_NODE_RANK={i}, ranks {i * per_node}-{(i + 1) * per_node - 1}")
    if cfgs:
        out.append("TF_CONFIG is built by each pod at start (training/tfkit/cluster.py) from TF_JOBSET_NAME, "
                   "TF_REPLICATED_JOB, TF_JOB_INDEX (JobSet labels), TF_TASK_INDEX (completion index), "
                   "TF_NUM_WORKERS and TF_PORT:")
    for name, cfg in zip(pods, cfgs):
        out.append(f"  pod {name}: TF_TASK_INDEX={cfg['task']['index']} -> TF_CONFIG="
                   + json.dumps(cfg, separators=(",", ":")))
    return out


def _short(value) -> str:
    text = str(value) if not isinstance(value, (dict, list)) else _flow(value)
    return text if len(text) <= 100 else text[:97] + "..."


def _flow(value) -> str:
    import json
    return json.dumps(value, default=str, sort_keys=False)


def _get(obj, path):
    cur = obj
    for p in path:
        try:
            cur = cur[p]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


def explain_lines(e: Expanded) -> list[str]:
    """`Kind/name path = value  <- origin`, one line per field an operator injected or an override set."""
    lines = []
    seen = set()
    for path, origin in e.trace.entries:
        key = (path, origin)
        if key in seen:
            continue
        seen.add(key)
        value = _get(e.obj, path)
        shown = "(removed)" if value is None and origin.endswith("(removed)") else _short(value)
        lines.append(f"{e.kind}/{e.name} {format_path(path)} = {shown}  <- {origin}")
    return lines

"""A values file of this project's chart (charts/trainer) from mode pytorchjob/elastic to trainjob (row chart-mode).

The chart renders the same job both ways (templates/pytorchjob.yaml, templates/trainjob.yaml), so the values
file changes little: `mode: trainjob`, `trainJob.trainerVersion`, the group restarts torchrun made in place
as the created runtime's `trainJob.runtime.maxRestarts` (row group-restarts), `runPolicy.activeDeadlineSeconds`
as `trainJob.activeDeadlineSeconds` (row active-deadline), PYTHONUNBUFFERED in `env` (row
python-unbuffered). A torchft job (`faultTolerance.enabled`) keeps its values: trainjob mode reads them too
(the groups' ids from the completion index, row pod-index; each pod restarting alone in the runtime the chart
creates, so `trainJob.runtime.create` true and `trainJob.runtime.maxRestarts` 0: row replica-group-restarts). What the PyTorchJob's migration reports about the job (kdt.operators.training_operator_v1.migrate) holds for
the chart's TrainJob too; the values trainjob mode does not read are findings located in the values file.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml_rs

from ..documents import Document
from ..fields import as_dict, as_list
from ..findings import WARNING, Finding
from ..operators import injection as INJ
from ..operators.training_operator_v1 import facts as TO1
from ..operators.framework.migrate.compare import Claim
from ..operators.framework.migrate.patch import Op, apply
from ..operators.trainer_v2 import shapes as SH

MODES = ("pytorchjob", "elastic")
TRAINJOB = "trainjob"
MARKER = "# kdt:trainer-version={}  (kdt migrate; validate, lint and preview check this file against it)\n"


def merged(base: Any, over: Any) -> Any:
    """Helm's merge of a values file over the chart's values.yaml: maps merge, null deletes, the rest replaces."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = merged(base.get(k), v)
        return out
    return copy.deepcopy(over)


def effective(values_file: Path, chart: Path) -> tuple[dict, dict]:
    """(the file's own values, the values the chart renders with)."""
    own = yaml_rs.loads(values_file.read_text(), parse_datetime=False) or {}
    defaults = yaml_rs.loads((chart / "values.yaml").read_text(), parse_datetime=False) or {}
    return (own if isinstance(own, dict) else {}), merged(defaults, own if isinstance(own, dict) else {})


def _ensure(ops: list[Op], own: dict, path: tuple) -> None:
    """Ops that create the maps of `path` the file does not have (in a copy of `own` kept in step)."""
    cur = own
    for i, k in enumerate(path):
        if not isinstance(cur.get(k), dict):
            ops.append(Op("add", path[:i + 1], {}))
            cur[k] = {}
        cur = cur[k]


def plan(values_file: Path, chart: Path, version: str, job_plans: list, doc_for_findings: Document
         ) -> tuple[list[Op], list[Finding], list[Claim], list[tuple[str, str]]] | None:
    """The values file's patch, findings, claims and what was done; None when its mode is not a PyTorchJob's."""
    own, eff = effective(values_file, chart)
    mode = eff.get("mode")
    work = copy.deepcopy(own)
    ops: list[Op] = []
    done: list[tuple[str, str]] = []
    findings: list[Finding] = []
    claims: list[Claim] = []
    label = SH.of(version).label      # charts/trainer/values.yaml trainJob.trainerVersion: a shape's label
    if mode == TRAINJOB:
        # the chart writes both shapes itself: the release is one value (row shape-overrides)
        if as_dict(eff.get("trainJob")).get("trainerVersion") == label or not job_plans:
            return None
        _ensure(ops, work, ("trainJob",))
        ops.append(Op("replace" if "trainerVersion" in work["trainJob"] else "add", ("trainJob", "trainerVersion"), label))
        done.append(("shape-overrides", f"trainJob.trainerVersion {label}: the chart writes the TrainJob in that shape"))
        return ops, findings, claims, done
    if mode not in MODES:
        return None
    ops.append(Op("replace" if "mode" in own else "add", ("mode",), TRAINJOB))
    done.append(("chart-mode", f"mode {mode} -> {TRAINJOB}, trainJob.trainerVersion {label}"))
    _ensure(ops, work, ("trainJob",))
    ops.append(Op("replace" if "trainerVersion" in work["trainJob"] else "add", ("trainJob", "trainerVersion"), label))
    ft = as_dict(eff.get("faultTolerance"))
    groups = bool(ft.get("enabled"))
    restarts = next((pl.facts["group_restarts"] for pl in job_plans if pl.facts.get("group_restarts")), None)
    if groups:
        restarts = 0          # torchrun's --max-restarts stays in the pod (--standalone); JobSet restarts no group
    elif restarts is None:
        restarts = as_dict(eff.get("torchrun")).get("maxRestarts") or 0
    rt = as_dict(as_dict(eff.get("trainJob")).get("runtime"))
    if groups and rt.get("create") is not True:
        # the chart refuses faultTolerance in trainjob mode on a runtime it does not create (templates/_helpers.tpl)
        _ensure(ops, work, ("trainJob", "runtime"))
        ops.append(Op("replace" if "create" in work["trainJob"]["runtime"] else "add",
                      ("trainJob", "runtime", "create"), True))
        done.append(("replica-group-restarts", "trainJob.runtime.create true: the node Job's restartPolicy and "
                                               "backoffLimit are the chart's runtime's"))
    if rt.get("maxRestarts") != restarts:
        _ensure(ops, work, ("trainJob", "runtime"))
        ops.append(Op("replace" if "maxRestarts" in work["trainJob"]["runtime"] else "add",
                      ("trainJob", "runtime", "maxRestarts"), restarts))
        if not groups:
            done.append(("group-restarts", f"torchrun's {restarts} in-place restarts -> trainJob.runtime.maxRestarts "
                                           f"{restarts}"))
    if groups:
        done.append(("replica-group-restarts", f"faultTolerance kept: each group's pod restarts alone (the runtime's "
                     f"node Job: restartPolicy OnFailure, backoffLimit {ft.get('backoffLimit')}); "
                     "trainJob.runtime.maxRestarts 0: JobSet restarts no group"))
        done.append(("pod-index", "faultTolerance kept: trainjob mode reads REPLICA_GROUP_ID from the completion "
                                  "index of the node Job's pods"))
    env = [e for e in as_list(eff.get("env")) if isinstance(e, dict)]
    if not any(e.get("name") == INJ.V1_PYTHONUNBUFFERED[0] for e in env):
        entry = {"name": INJ.V1_PYTHONUNBUFFERED[0], "value": INJ.V1_PYTHONUNBUFFERED[1]}
        if isinstance(own.get("env"), list):
            ops.append(Op("add", ("env", "-"), entry))
        else:
            ops.append(Op("add", ("env",), env + [entry]))
        done.append(("python-unbuffered", "PYTHONUNBUFFERED=0 added to env"))
    pj = as_dict(eff.get("pytorchJob"))
    rp = as_dict(pj.get("runPolicy"))

    def lost(row: str, key: tuple, message: str, claim: tuple) -> None:
        f = doc_for_findings.finding("migrate", f"{'.'.join(key)}: {message} [docs/migration.md#{row}]",
                                     level=WARNING, row=row)
        findings.append(f)
        claims.append(Claim(row, claim, None, f.message))

    if rp.get("backoffLimit") is not None and not groups:     # replica groups: faultTolerance.backoffLimit, both modes
        lost("backoff-limit", ("pytorchJob", "runPolicy", "backoffLimit"),
             f"{rp['backoffLimit']} has no value in trainjob mode: the trainer Job fails after Kubernetes' default of 6",
             ("job", "backoff limit"))
    deadline = rp.get("activeDeadlineSeconds")
    if deadline is not None and (label != "2.1" or groups or rt.get("create") is True):
        # trainJob.activeDeadlineSeconds: 2.2+ the TrainJob's, 2.1 the created runtime's trainer Job's
        _ensure(ops, work, ("trainJob",))
        ops.append(Op("replace" if "activeDeadlineSeconds" in work["trainJob"] else "add",
                      ("trainJob", "activeDeadlineSeconds"), deadline))
        done.append(("active-deadline", f"pytorchJob.runPolicy.activeDeadlineSeconds {deadline} -> "
                                        f"trainJob.activeDeadlineSeconds"))
    elif deadline is not None:
        lost("active-deadline", ("pytorchJob", "runPolicy", "activeDeadlineSeconds"),
             "Trainer 2.1 has no TrainJob deadline and the runtime is not the chart's (trainJob.runtime.create): "
             "no deadline", ("job", "active deadline"))
    if pj.get("restartPolicy", TO1.DEFAULT_RESTART_POLICY) != TO1.DEFAULT_RESTART_POLICY:
        lost("restart-policy", ("pytorchJob", "restartPolicy"),
             f"{pj['restartPolicy']} has no value in trainjob mode: the runtime's pods restart OnFailure",
             ("spec", "restartPolicy"))
    return ops, findings, claims, done


def values_text(values_file: Path, ops: list[Op], version: str) -> str:
    """The migrated values file: the original's comments and key order, the patch applied, the marker first."""
    from ..operators.framework.migrate.patch import dump, normalize_comments, yaml_writer
    text = values_file.read_text()
    data = normalize_comments(yaml_writer().load(text))
    apply(ops, data)
    body = dump(data)
    lines = [ln for ln in body.splitlines(keepends=True) if "kdt:trainer-version" not in ln]
    return MARKER.format(version) + "".join(lines)


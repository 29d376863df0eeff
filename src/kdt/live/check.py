"""`--live` for validate, merge-preview and preview: the judge's answers as findings, located like every
other (file, document, line, path) with the API server's own message.

- `live-admission` (error): the API server or an operator's webhook refuses the document (server-side
  apply, dry run); (warning) kdt refuses a document the API server accepts.
- `live-preview` (warning): an object the operators created differs from the merge preview in a way no row
  of kdt.live.judge.EXPLAINED explains, or one side has an object the other lacks.
"""
from __future__ import annotations

import sys

from .. import findings as F

ADMISSION = "live-admission"
PREVIEW = "live-preview"


def findings(groups, admission: bool = True, preview: bool = True, trainer_version: str | None = None,
             stream=sys.stderr) -> list[F.Finding]:
    """groups: (kdt.targets.Target, documents) pairs, judged as `kdt.live.judge.plan` and `execute` judge them
    (each at the Trainer release it is checked for: `trainer_version`, else its marker, the repository's pin or
    its shape; at the default Training Operator release); the findings."""
    from types import SimpleNamespace

    from .. import cluster_file
    from ..versions import TRAINING_OPERATOR_DEFAULT
    from . import judge
    rendered = [SimpleNamespace(ok=True, target=t, documents=docs) for t, docs in groups if docs]
    jobs = judge.plan(rendered, training_operators=(TRAINING_OPERATOR_DEFAULT,), cluster_file=cluster_file.load(),
                      trainer_version=trainer_version)
    out: list[F.Finding] = []
    for job, res in judge.execute(jobs, stream):
        if admission:
            out += _admission(res)
        if preview:
            out += _preview(job.unit.documents, res)
    return out


def _admission(res) -> list[F.Finding]:
    from . import releases as R
    out = []
    for a in res.admissions:
        if a.skipped:
            continue
        if a.refused:
            out.append(a.doc.finding(ADMISSION, f"the API server refuses it (Kubernetes {R.KUBERNETES}, "
                                                f"Trainer {res.release}): {a.refused}"))
        elif a.ours:
            out.append(a.doc.finding(ADMISSION, f"kdt refuses what the API server and the operators' "
                                                f"webhooks accept (Kubernetes {R.KUBERNETES}, Trainer "
                                                f"{res.release}): {a.ours[0].rule}", level=F.WARNING))
    return out


def _preview(docs, res) -> list[F.Finding]:
    out = []
    first = next((d for d in docs if isinstance(d.data, dict)), docs[0])
    for d in res.unexplained:
        out.append(first.finding(PREVIEW, f"{d.kind} {d.name} {d.path}: the merge preview shows "
                                          f"{d.preview!r}, the operators create {d.live!r}", level=F.WARNING))
    for m in res.missing:
        out.append(first.finding(PREVIEW, f"{m}: in the merge preview, not created by the operators", level=F.WARNING))
    for x in res.extra:
        out.append(first.finding(PREVIEW, f"{x}: created by the operators, not in the merge preview", level=F.WARNING))
    return out

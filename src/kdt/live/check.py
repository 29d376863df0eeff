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


def _groups_by_release(groups, option):
    from .. import trainer_release
    out: dict = {}
    for target, docs in groups:
        if not docs:
            continue
        out.setdefault(trainer_release.decide(target, docs, option).release, []).append((target, docs))
    return out


def findings(groups, admission: bool = True, preview: bool = True, trainer_version: str | None = None,
             stream=sys.stderr) -> list[F.Finding]:
    """groups: (kdt.targets.Target, documents) pairs, each judged at the Trainer release it is checked for
    (`trainer_version`, else its marker, the repository's pin or its shape: kdt.trainer_release.decide).
    Starts one control plane per release (kdt.live.cluster; building what is missing); the findings."""
    from .. import cluster as cluster_file
    from ..versions import TRAINER_DEFAULT
    from . import releases as R
    from .cluster import Cluster
    from .judge import cleanup, judge
    from .verdicts import ours
    cfile = cluster_file.load()
    out: list[F.Finding] = []
    for rel, gs in _groups_by_release(groups, trainer_version).items():
        rel = rel or TRAINER_DEFAULT
        rs = R.ReleaseSet(trainer=rel)
        with Cluster.start(rs, stream=stream, cluster_file=cfile) as c:
            for n, (target, docs) in enumerate(gs):
                ns = f"kdt-live-{n}"
                name = target.name
                res = judge(c, name, docs, rel, ours(docs, rel, rs.training_operator, cfile), namespace=ns,
                            options=cfile.options)
                cleanup(c, ns, docs)
                if admission:
                    for a in res.admissions:
                        if a.skipped:
                            continue
                        if a.refused:
                            out.append(a.doc.finding(ADMISSION, f"the API server refuses it (Kubernetes {R.KUBERNETES}, "
                                                                f"Trainer {rel}): {a.refused}"))
                        elif a.ours:
                            out.append(a.doc.finding(ADMISSION, f"kdt refuses what the API server and the operators' "
                                                                f"webhooks accept (Kubernetes {R.KUBERNETES}, Trainer "
                                                                f"{rel}): {a.ours[0].rule}", level=F.WARNING))
                if preview:
                    first = next((d for d in docs if isinstance(d.data, dict)), docs[0])
                    for d in res.unexplained:
                        out.append(first.finding(PREVIEW, f"{d.kind} {d.name} {d.path}: the merge preview shows "
                                                          f"{d.preview!r}, the operators create {d.live!r}",
                                                 level=F.WARNING))
                    for m in res.missing:
                        out.append(first.finding(PREVIEW, f"{m}: in the merge preview, not created by the operators",
                                                 level=F.WARNING))
                    for x in res.extra:
                        out.append(first.finding(PREVIEW, f"{x}: created by the operators, not in the merge preview",
                                                 level=F.WARNING))
    return out

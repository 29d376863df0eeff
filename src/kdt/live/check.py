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
    """groups: (kdt.targets.Target, documents) pairs, each judged at the Trainer release it is checked for
    (`trainer_version`, else its marker, the repository's pin or its shape: kdt.trainer_release.decide).
    Starts one control plane per release (kdt.live.cluster; building what is missing); the findings."""
    from types import SimpleNamespace

    from .. import cluster as cluster_file
    from .. import trainer_release
    from ..versions import TRAINER_DEFAULT
    from . import releases as R
    from .admission import units
    from .cluster import Cluster
    from .judge import cleanup, judge
    from .verdicts import ours
    cfile = cluster_file.load()
    out: list[F.Finding] = []
    rendered = [SimpleNamespace(ok=True, target=t, documents=docs) for t, docs in groups if docs]
    by_release: dict = {}
    for unit in units(rendered, lambda t, docs: trainer_release.decide(t, docs, trainer_version).release,
                      None if trainer_version else lambda docs: getattr(trainer_release.shape(docs), "release", None)):
        by_release.setdefault(unit.release or TRAINER_DEFAULT, []).append(unit)
    for rel, us in by_release.items():
        rs = R.ReleaseSet(trainer=rel)
        with Cluster.start(rs, stream=stream, cluster_file=cfile) as c:
            for n, unit in enumerate(us):
                verdicts: dict = {}
                for r in unit.targets:     # each target's own verdicts, references resolved across its unit
                    verdicts.update(ours(r.documents, rel, rs.training_operator, cfile,
                                         run_docs=unit.documents if len(unit.targets) > 1 else None))
                res = judge(c, unit.name, unit.documents, rel, verdicts, namespace=f"kdt-live-{n}",
                            options=cfile.options)
                cleanup(c, res)
                docs = unit.documents
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

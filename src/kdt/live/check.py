"""`--live` for validate, merge-preview and preview: the judge's answers as findings, located like every
other (file, document, line, path) with the API server's own message.

- `live-admission` (error): the API server or an operator's webhook refuses the document (server-side
  apply, dry run); (warning) kdt refuses a document the API server accepts.
- `live-preview` (warning): an object the operators created differs from the merge preview in a way no row
  of kdt.live.judge.EXPLAINED explains, or one side has an object the other lacks.

A control plane `kdt cluster up` keeps with the releases a unit needs, started from the same cluster file,
is used instead of starting one (kdt.live.judge.execute, kdt.live.kept.find). Every run ends with one line on
`stream` of what the server judged: documents judged, accepted, refused, and those not judged with why
(`summary`). A TrainJob whose runtime is nowhere gets the line offline lint gives (`_hint`); a refusal that is
only a null server-side apply keeps is a warning where the cluster file says the repository applies
client-side (`_server_side_only`).
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
    admissions: list = []
    for job, res in judge.execute(jobs, stream):
        admissions += res.admissions
        if admission:
            out += _admission(res, job.cluster_file)
        if preview:
            out += _preview(job.unit.documents, res)
    print(summary(admissions, sum(isinstance(d.data, dict) for _, docs in groups for d in docs)), file=stream,
          flush=True)
    return out


def _admission(res, cfile) -> list[F.Finding]:
    from . import releases as R
    out = []
    for a in res.admissions:
        if a.skipped:
            continue
        if a.refused and getattr(cfile, "apply", "client-side") == "client-side" and _server_side_only(a):
            out.append(a.doc.finding(ADMISSION, f"refused applied server-side, as the judge applies (Kubernetes "
                                                f"{R.KUBERNETES}): {a.refused}; this repository applies client-side "
                                                "(.kdt-cluster.yaml apply), which drops the null", level=F.WARNING))
        elif a.refused and _hint(a, cfile):
            out.append(a.doc.finding(ADMISSION, f"{_hint(a, cfile)} (Trainer {res.release}'s webhook: "
                                                f"{' '.join(a.refused.split())})"))
        elif a.refused:
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


def _server_side_only(a) -> bool:
    """kdt refuses the document only for nulls server-side apply keeps (kdt.validate), and the server names no
    other field: a refusal of server-side apply's alone."""
    if not a.ours or not all("server-side apply" in f.extra.get("refused_by", ()) for f in a.ours):
        return False
    from .verdicts import compare_fields
    return compare_fields(a.our_fields, a.server_fields) in ("same field", "nested field")


def _hint(a, cfile) -> str:
    """Beside the webhook's refusal of a TrainJob whose runtime does not exist: the line offline lint gives
    (kdt.operators.trainer_v2.facts.missing_runtime)."""
    from ..operators.trainer_v2 import facts as TV2
    data = a.doc.data if isinstance(a.doc.data, dict) else {}
    if data.get("kind") != TV2.TRAINJOB or TV2.MISSING_RUNTIME_MESSAGE not in (a.refused or ""):
        return ""
    ref = (data.get("spec") or {}).get("runtimeRef") or {}
    return TV2.missing_runtime(ref.get("kind") or TV2.DEFAULT_RUNTIME_KIND, str(ref.get("name")),
                               getattr(cfile, "file", "") or "")


def summary(admissions: list, documents: int | None = None) -> str:
    """One line: what the API server judged of the documents (kdt.live.admission.Admission each), accepted and
    refused, and what was not judged, with why (grouped); `documents`: how many the run had in all (those no
    unit reached, such as a file that does not parse, are counted as not judged)."""
    from collections import Counter
    judged = [a for a in admissions if a.skipped is None]
    refused = sum(1 for a in judged if a.refused)
    why = Counter(a.skipped for a in admissions if a.skipped is not None)
    unreached = max(0, (documents or 0) - len(admissions))
    if unreached:
        why["not in a unit the judge reached (unread, or not a Kubernetes object)"] += unreached
    skipped = sum(why.values())
    text = (f"live: the API server judged {len(judged)} document(s): {len(judged) - refused} accepted, {refused} refused; "
            f"{skipped} not judged")
    if why:
        text += ": " + "; ".join(f"{n} {reason}" if n > 1 else reason for reason, n in why.most_common())
    return text

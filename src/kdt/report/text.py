"""Text: one line per finding, grep-able, then the notes (what the run found and decided), then a summary line.

    FILE:LINE:COL: LEVEL [RULE] KIND/NAME PATH: MESSAGE (doc N[, source FILE])
    note: ...
"""
from __future__ import annotations

import sys


def line(f) -> str:
    parts = [f"{f.location}: {f.level} [{f.rule}]"]
    if f.object:
        parts.append(f.object)
    if f.path:
        parts.append(f.path + ":")
    elif f.object:
        parts[-1] += ":"
    else:
        parts[-1] += ":"
    parts.append(f.message)
    where = []
    if f.doc is not None:
        where.append(f"doc {f.doc}")
    if f.source:
        where.append(f"source {f.source}")
    if where:
        parts.append(f"({', '.join(where)})")
    return " ".join(parts)


def write(findings, tool: str, out=sys.stdout, documents: int | None = None, skipped: int = 0, notes=(), **_):
    for f in findings:
        print(line(f), file=out)
    for n in notes:
        print(f"note: {n}" if not n.startswith("  ") else f"      {n.strip()}", file=out)
    errors = sum(1 for f in findings if f.level == "error")
    warnings = len(findings) - errors
    summary = f"{tool}: {errors} error(s), {warnings} warning(s)"
    if documents is not None:
        summary += f" in {documents} document(s)"
    if skipped:
        summary += f"; {skipped} file(s) skipped: no Kubernetes object in them"
    print(summary, file=out)

"""JSON: {"tool", "version", "summary", "findings": [...], "notes": [...] (when any)} on one document."""
from __future__ import annotations

import json
import sys

from .. import __version__


def write(findings, tool: str, out=sys.stdout, documents: int | None = None, targets=None, skipped: int = 0, notes=(), **_):
    errors = sum(1 for f in findings if f.level == "error")
    payload = {
        "tool": tool,
        "version": __version__,
        "summary": {"errors": errors, "warnings": len(findings) - errors, "documents": documents,
                    "targets": list(targets or []), "skipped_files": skipped},
        "findings": [f.to_dict() for f in findings],
    }
    if notes:
        payload["notes"] = [n.strip() for n in notes]
    json.dump(payload, out, indent=2)
    out.write("\n")

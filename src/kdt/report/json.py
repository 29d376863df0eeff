"""JSON: {"tool", "version", "summary", "findings": [...]} on one document."""
from __future__ import annotations

import json
import sys

from .. import __version__


def write(findings, tool: str, out=sys.stdout, documents: int | None = None, targets=None, skipped: int = 0, **_):
    errors = sum(1 for f in findings if f.level == "error")
    payload = {
        "tool": tool,
        "version": __version__,
        "summary": {"errors": errors, "warnings": len(findings) - errors, "documents": documents,
                    "targets": list(targets or []), "skipped_files": skipped},
        "findings": [f.to_dict() for f in findings],
    }
    json.dump(payload, out, indent=2)
    out.write("\n")

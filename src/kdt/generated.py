"""Committed files generated from a source (docs/rules.md, docs/migration.md, the chart's README table and
schema, the CRD rule tables): the one last step every generator shares.

Without ``--check`` the file is written when it differs, through a temporary file beside it that replaces
it in one step (an interrupted run leaves the old file, never half of the new one). With ``--check``
nothing is written: exit 1 and one line naming the file and how to regenerate it when it is stale, so CI
and the tests catch a generated file nobody regenerated.
"""
from __future__ import annotations

import sys
from pathlib import Path

from .paths import display


def write_or_check(out: Path, text: str, check: bool, prog: str, source: str, wrote: str = "") -> int:
    """``check``: 0 when ``out`` holds ``text``, else 1 and ``{prog}: {out} is stale: regenerate it from
    {source}`` on stderr. Otherwise write ``text`` to ``out`` (atomically, only when it differs), print
    ``wrote {out}`` and ``wrote`` (a summary of what it holds) and return 0."""
    try:
        current = out.read_text()
    except OSError:
        current = None
    if check:
        if current != text:
            print(f"{prog}: {display(out)} is stale: regenerate it from {source}", file=sys.stderr)
            return 1
        return 0
    if current != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(text)
        tmp.replace(out)
    print(f"wrote {display(out)}" + (f" ({wrote})" if wrote else ""))
    return 0

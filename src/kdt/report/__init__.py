"""One reporter per output format; `write` picks it."""
from __future__ import annotations

import importlib
import sys
from typing import IO, Iterable

from ..findings import Finding, sort_key

FORMATS = ("text", "json", "junit", "sarif")


def write(findings: Iterable[Finding], fmt: str, tool: str, out: IO[str] | None = None, **context) -> None:
    """Write findings in `fmt`. context: documents (int), targets (list of names), rules (dict of rule docs), notes (lines: what the
    run found and decided, e.g. the CRDs it picked up, the Trainer release and its evidence)."""
    module = importlib.import_module(f"{__name__}.{fmt}")
    module.write(sorted(findings, key=sort_key), tool=tool, out=out or sys.stdout, **context)

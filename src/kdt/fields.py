"""Reading fields of a manifest as the operators read them: one integer reader, one quantity reader.

A field of the wrong type is the schema's finding (kdt.validate); these readers never raise, so every
later stage (summary, lint, merge preview, run) can read a malformed object without crashing and
leave the complaint to the one place that makes it.
"""
from __future__ import annotations

from typing import Any

_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
          "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def as_int(value: Any, default: Any = None) -> Any:
    """An integer field as the operators read it (`2`, `"2"`), else `default` (booleans are not integers)."""
    if isinstance(value, bool):
        return default
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def quantity(value: Any) -> float:
    """A Kubernetes quantity as a number (cpu in cores, memory in bytes); 0 for what does not read.

    An approximation for sums and counts (the summary's CPUs, a GPU count, torch's CPU count); the
    grammar the API server enforces is validate's."""
    if value is None:
        return 0.0
    s = str(value).strip()
    for suffix in sorted(_UNITS, key=len, reverse=True):
        if s.endswith(suffix):
            try:
                return float(s[: -len(suffix)]) * _UNITS[suffix]
            except ValueError:
                return 0.0
    try:
        return float(s)
    except ValueError:
        return 0.0

"""Reading fields of a manifest as the operators read them: one integer reader, one quantity reader
(approximate, for sums shown to a person) and its exact form (for what the operators compute).

A field of the wrong type is the schema's finding (kdt.validate); these readers never raise, so every
later stage (summary, lint, merge preview, run) can read a malformed object without crashing and
leave the complaint to the one place that makes it.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
          "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def as_int(value: Any, default: Any = None) -> Any:
    """An integer field as the operators read it (`2`, `"2"`), else `default` (booleans are not integers)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, float) and value.is_integer():
        # kubectl reads an integer past int64 as a float64 (go-yaml); the API server then refuses it
        # (validate says so), the operators' arithmetic is still that number's
        return int(value)
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


# ---------------------------------------------------------------- exact quantities (sums the operators make)
_BIN = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))
_DEC = (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3))


def exact_quantity(value: Any):
    """(Fraction, binary) of a Kubernetes quantity as resource.Quantity reads it (k8s.io/apimachinery
    pkg/api/resource/quantity.go: a signed decimal, then a binary suffix Ki..Ei, a decimal suffix
    n u m k M G T P E, or an exponent eX); None for what does not read."""
    if isinstance(value, bool) or value is None:
        return None
    m = re.fullmatch(r"\s*([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?\s*",
                     str(value))
    if not m:
        return None
    num = Fraction(m.group(1))
    suf = m.group(2) or ""
    binary = dict(_BIN)
    decimal = {"n": -9, "u": -6, "m": -3, **dict(_DEC)}
    if suf in binary:
        return num * 2 ** binary[suf], True
    if suf in decimal:
        return num * Fraction(10) ** decimal[suf], False
    if suf:
        return num * Fraction(10) ** int(suf[1:]), False
    return num, False


def format_quantity(v, binary: bool = False) -> str:
    """A quantity in resource.Quantity's canonical form (CanonicalizeBytes): the largest suffix of its
    format (binary Ki..Ei, decimal k..E) that keeps the number whole; fractions in m, u, n (rounded up)."""
    v = Fraction(v)
    if v.denominator == 1:
        n = v.numerator
        if binary and n and abs(n) >= 1024:
            for suf, e in _BIN:
                if n % (2 ** e) == 0:
                    return f"{n // 2 ** e}{suf}"
        if not binary and n:
            for suf, e in _DEC:
                if n % (10 ** e) == 0:
                    return f"{n // 10 ** e}{suf}"
        return str(n)
    for suf, e in (("m", 3), ("u", 6), ("n", 9)):
        scaled = v * 10 ** e
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suf}"
    return f"{math.ceil(v * 10 ** 9)}n"


def quantity_value(value: Any) -> int:
    """resource.Quantity.Value(): the quantity rounded up to a whole number (0 for what does not read)."""
    q = exact_quantity(value)
    return math.ceil(q[0]) if q else 0

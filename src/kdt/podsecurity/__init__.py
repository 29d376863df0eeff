"""Pod Security Standards as Kubernetes implements them: every control of "baseline" and "restricted",
keyed by policy version as the admission plugin keys them.

    breaches = evaluate(pod_metadata, pod_spec, "restricted", 35)   # policy version v1.35
    for b in breaches: print(b.check, format_path(b.path), b.reason, b.detail)

One module per family of controls (`host`, `volumes`, `privilege`, `identity`, `profiles`,
`sysctls`), each control citing its source in kubernetes/pod-security-admission `policy/check_*.go`;
`policy` holds levels, versions, namespace labels and which controls a level runs at a version.
Nothing here reads files or documents: the lint rule `pod-security` (kdt/lint/rules/pod_security.py)
feeds it every pod the operators create, and bench/pod_security.py holds it against the admission
library's own test data.
"""
from __future__ import annotations

from .model import BASELINE, RESTRICTED, Breach, Check, d
from .policy import (BY_ID, CHECKS, LATEST, LEVELS, NEWEST, PRIVILEGED, LevelVersion, controls, effective, enforced,
                     parse_level, parse_version, stricter)

__all__ = ["evaluate", "Breach", "Check", "CHECKS", "BY_ID", "BASELINE", "RESTRICTED", "PRIVILEGED", "LEVELS",
           "LATEST", "NEWEST", "LevelVersion", "controls", "effective", "enforced", "parse_level", "parse_version",
           "stricter"]


def evaluate(metadata: dict, spec: dict, level: str, minor: int) -> list[Breach]:
    """Every field of a pod (its metadata and spec) that `level` at policy version 1.`minor` forbids."""
    meta, spec = d(metadata), d(spec)
    out = []
    for check, versioned in controls(level, minor):
        out.extend(Breach(b.path, b.reason, b.detail, check.id) for b in versioned.fn(meta, spec))
    return out

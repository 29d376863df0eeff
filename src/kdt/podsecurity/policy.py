"""Levels, policy versions, the namespace labels that choose them, and which controls a level and
version runs.

Source: kubernetes/pod-security-admission api/constants.go (levels, the `pod-security.kubernetes.io/`
labels), api/helpers.go (ParseLevel, ParseVersion and its `^v1\\.([0-9]|[1-9][0-9]*)$`,
PolicyToEvaluate, CompareLevels, LevelVersion.String), policy/registry.go (populate,
inflateVersions: a level and version run every control in force at that version; restricted runs
baseline's too, less those a restricted control in force replaces; baseline IDs first, then
restricted, each sorted; a version past the newest control's is evaluated as the newest;
NewEvaluator's emulation version: "latest" is the cluster's own version), read at v0.37.0-alpha.2.
The cluster default when no label is set is privileged:latest (the admission plugin's default
configuration).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import host, identity, privilege, profiles, sysctls, volumes
from .model import BASELINE, RESTRICTED, Check, Versioned

PRIVILEGED = "privileged"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)       # least to most strict (CompareLevels)
LATEST = "latest"

LABEL_PREFIX = "pod-security.kubernetes.io/"
ENFORCE, ENFORCE_VERSION = LABEL_PREFIX + "enforce", LABEL_PREFIX + "enforce-version"
AUDIT, AUDIT_VERSION = LABEL_PREFIX + "audit", LABEL_PREFIX + "audit-version"
WARN, WARN_VERSION = LABEL_PREFIX + "warn", LABEL_PREFIX + "warn-version"

CHECKS: tuple[Check, ...] = (host.CHECKS + volumes.CHECKS + privilege.CHECKS + identity.CHECKS + profiles.CHECKS
                             + sysctls.CHECKS)
BY_ID = {c.id: c for c in CHECKS}
# The newest policy version a control changed in (1.37 at v0.37.0-alpha.2): later ones evaluate as it.
NEWEST = max(v.minimum for c in CHECKS for v in c.versions)

_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


@dataclass(frozen=True)
class LevelVersion:
    level: str
    version: int | None = None      # minor of v1.x; None: latest

    def __str__(self) -> str:
        return f"{self.level}:{LATEST if self.version is None else f'v1.{self.version}'}"


def parse_level(value) -> str | None:
    return value if value in LEVELS else None


def parse_version(value) -> int | None | bool:
    """`v1.30` -> 30, `latest` -> None; anything else -> False (invalid)."""
    if value == LATEST:
        return None
    m = _VERSION.match(str(value)) if isinstance(value, str) else None
    return int(m.group(1)) if m else False


def stricter(a: str, b: str) -> bool:
    """Whether level a is stricter than b (CompareLevels(a, b) > 0)."""
    return LEVELS.index(a) > LEVELS.index(b)


def enforced(labels: dict) -> tuple[LevelVersion, list[str]]:
    """The enforce level and version a namespace's labels give (PolicyToEvaluate), and what is wrong
    with them. Unset: privileged:latest. An invalid level enforces restricted, an invalid version latest."""
    problems = []
    level, version = PRIVILEGED, None
    if ENFORCE in labels:
        raw = labels[ENFORCE]
        level = parse_level(raw)
        if level is None:
            problems.append(f"{ENFORCE}: {raw!r} must be one of {', '.join(LEVELS)} (the admission plugin "
                            f"enforces {RESTRICTED})")
            level = RESTRICTED
    if ENFORCE_VERSION in labels:
        raw = labels[ENFORCE_VERSION]
        parsed = parse_version(raw)
        if parsed is False:
            problems.append(f'{ENFORCE_VERSION}: {raw!r} must be "latest" or "v1.x" (the admission plugin uses latest)')
            parsed = None
        version = parsed
    return LevelVersion(level, version), problems


def effective(version: int | None, cluster: int) -> int:
    """The policy version evaluated: `latest` is the cluster's own; none is newer than NEWEST."""
    return min(cluster if version is None else version, NEWEST)


def controls(level: str, minor: int) -> list[tuple[Check, Versioned]]:
    """The controls `level` runs at policy version 1.`minor`, in the admission plugin's order."""
    if level not in (BASELINE, RESTRICTED):
        return []
    active = [(c, c.at(minor)) for c in CHECKS]
    active = [(c, v) for c, v in active if v is not None]
    if level == BASELINE:
        chosen = [(c, v) for c, v in active if c.level == BASELINE]
    else:
        replaced = {o for c, v in active if c.level == RESTRICTED for o in v.overrides}
        chosen = [(c, v) for c, v in active if c.level == RESTRICTED or c.id not in replaced]
    return sorted(chosen, key=lambda cv: (cv[0].level != BASELINE, cv[0].id))

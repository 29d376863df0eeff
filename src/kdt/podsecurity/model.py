"""The shape of a Pod Security control, what it finds, and the helpers every control family shares.

A control (upstream: a `policy.Check`) has an ID, a level (baseline or restricted) and one
implementation per policy version it changed in (`VersionedCheck.MinimumVersion`); a restricted
control may replace baseline controls from its version on (`OverrideCheckIDs`). Upstream returns one
aggregated `CheckResult` per control and pod; here every offending field is a `Breach` of its own, so
that a finding points at it, and its detail is the admission message's detail worded for that one
field ("container "c" must set securityContext.allowPrivilegeEscalation=false").

Source: kubernetes/pod-security-admission (v0.NN.x = Kubernetes 1.NN) policy/checks.go (Check,
VersionedCheck, CheckResult), policy/visitor.go (visitContainers: init containers, containers,
ephemeral containers, in that order), policy/helpers.go (joinQuote, relaxPolicyForUserNamespacePod).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

BASELINE = "baseline"
RESTRICTED = "restricted"

# policy/visitor.go visitContainers: the three lists and their order.
CONTAINER_KEYS = ("initContainers", "containers", "ephemeralContainers")


@dataclass(frozen=True)
class Breach:
    """One field of a pod that a control forbids (path: inside the Pod object, `spec...` or `metadata...`)."""

    path: tuple
    reason: str          # the admission message's reason ("allowPrivilegeEscalation != false")
    detail: str          # its detail, for this field alone
    check: str = ""      # the control's ID, filled in by the evaluator


CheckFn = Callable[[dict, dict], "list[Breach]"]


@dataclass(frozen=True)
class Versioned:
    """One implementation of a control, in force from `minimum` (a minor version of Kubernetes 1.x) on."""

    minimum: int
    fn: CheckFn
    overrides: tuple[str, ...] = ()     # baseline controls it replaces in the restricted profile


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    versions: tuple[Versioned, ...]
    doc: str = field(default="", compare=False)

    def at(self, minor: int) -> Versioned | None:
        """The implementation in force at policy version 1.`minor` (None before the control existed)."""
        found = None
        for v in self.versions:
            if v.minimum <= minor:
                found = v
        return found


def d(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def lst(v: Any) -> list:
    return v if isinstance(v, list) else []


def containers(spec: dict) -> Iterator[tuple[tuple, dict, str]]:
    """(path inside the Pod, container, name) of every container, in visitContainers' order."""
    for key in CONTAINER_KEYS:
        for i, c in enumerate(lst(spec.get(key))):
            c = d(c)
            yield ("spec", key, i), c, str(c.get("name", ""))


def security_context(c: dict) -> dict:
    return d(c.get("securityContext"))


def quoted(*items: str) -> str:
    """policy/helpers.go joinQuote: `"a", "b"`."""
    return ", ".join(f'"{x}"' for x in items)


def go_quote(s: str) -> str:
    """Go's %q of a plain string (what fmt.Sprintf("%s=%q") writes in annotation details)."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def windows(spec: dict) -> bool:
    """spec.os.name == windows: the restricted controls that Windows pods are exempt from ask this (1.25+)."""
    return d(spec.get("os")).get("name") == "windows"


def user_namespace(spec: dict) -> bool:
    """policy/helpers.go relaxPolicyForUserNamespacePod: hostUsers set to false."""
    return spec.get("hostUsers") is False

"""Controls on the user a container runs as: runAsNonRoot and runAsUser.

Source: kubernetes/pod-security-admission policy/check_runAsNonRoot.go (runAsNonRoot1_0,
runAsNonRoot1_35), check_runAsUser.go (runAsUser1_23, runAsUser1_35), read at v0.37.0-alpha.2. From
1.35 both allow any value in a pod with its own user namespace (`hostUsers: false`, KEP-127).
"""
from __future__ import annotations

from .model import RESTRICTED, Breach, Check, Versioned, containers, d, quoted, security_context, user_namespace


def _run_as_non_root(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: true; unset on a container when the pod sets true. Explicit false is named first
    # ("must not set"), a container left to a pod without true after ("pod or container must set").
    out = []
    pod = d(spec.get("securityContext")).get("runAsNonRoot")
    if pod is False:
        out.append(Breach(("spec", "securityContext", "runAsNonRoot"), "runAsNonRoot != true",
                          "pod must not set securityContext.runAsNonRoot=false"))
    implicit = []
    for p, c, name in containers(spec):
        mine = security_context(c).get("runAsNonRoot")
        at = p + ("securityContext", "runAsNonRoot")
        if mine is False:
            out.append(Breach(at, "runAsNonRoot != true", f"container {quoted(name)} must not set "
                                                          "securityContext.runAsNonRoot=false"))
        elif mine is not True and pod is not True:
            implicit.append(Breach(at, "runAsNonRoot != true", f"pod or container {quoted(name)} must set "
                                                               "securityContext.runAsNonRoot=true"))
    return out + implicit


def _user_namespace_relaxed(fn):
    def check(meta: dict, spec: dict) -> list[Breach]:
        return [] if user_namespace(spec) else fn(meta, spec)
    check.__name__ = fn.__name__ + "_1_35"
    return check


def _is_zero(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v == 0


def _run_as_user(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: non-zero, undefined (pod and containers).
    out = []
    if _is_zero(d(spec.get("securityContext")).get("runAsUser")):
        out.append(Breach(("spec", "securityContext", "runAsUser"), "runAsUser=0", "pod must not set runAsUser=0"))
    for p, c, name in containers(spec):
        if _is_zero(security_context(c).get("runAsUser")):
            out.append(Breach(p + ("securityContext", "runAsUser"), "runAsUser=0",
                              f"container {quoted(name)} must not set runAsUser=0"))
    return out


CHECKS = (
    Check("runAsNonRoot", RESTRICTED, (Versioned(0, _run_as_non_root),
                                       Versioned(35, _user_namespace_relaxed(_run_as_non_root)))),
    Check("runAsUser", RESTRICTED, (Versioned(23, _run_as_user), Versioned(35, _user_namespace_relaxed(_run_as_user)))),
)

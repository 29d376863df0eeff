"""Controls on what a container may do with the node's privileges: privileged, privilege escalation,
capabilities, /proc masks.

Source (each control's file and functions): kubernetes/pod-security-admission policy/
check_privileged.go (CheckPrivileged, privileged_1_0), check_allowPrivilegeEscalation.go
(allowPrivilegeEscalation_1_8, _1_25), check_capabilities_baseline.go (capabilities_allowed_1_0,
capabilitiesBaseline_1_0), check_capabilities_restricted.go (capabilitiesRestricted_1_22, _1_25),
check_procMount_baseline.go (procMount_1_0, procMount1_35baseline), check_procMount_restricted.go
(CheckProcMountRestricted), read at v0.37.0-alpha.2 (the same in every release since the version
each control names).
"""
from __future__ import annotations

from .model import BASELINE, RESTRICTED, Breach, Check, Versioned, containers, d, lst, quoted, security_context, \
    user_namespace, windows


def _privileged(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: false, undefined.
    return [Breach(p + ("securityContext", "privileged"), "privileged",
                   f"container {quoted(name)} must not set securityContext.privileged=true")
            for p, c, name in containers(spec) if security_context(c).get("privileged") is True]


def _allow_privilege_escalation(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: false only (an unset field counts as true).
    return [Breach(p + ("securityContext", "allowPrivilegeEscalation"), "allowPrivilegeEscalation != false",
                   f"container {quoted(name)} must set securityContext.allowPrivilegeEscalation=false")
            for p, c, name in containers(spec) if security_context(c).get("allowPrivilegeEscalation") is not False]


def _windows_exempt(fn):
    """The 1.25 versions of three restricted controls: a pod with spec.os.name windows is allowed (the API
    server's validation forbids those Linux fields on it)."""
    def check(meta: dict, spec: dict) -> list[Breach]:
        return [] if windows(spec) else fn(meta, spec)
    check.__name__ = fn.__name__ + "_1_25"
    return check


# check_capabilities_baseline.go capabilities_allowed_1_0: the container runtime's default set.
CAPABILITIES_BASELINE = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})
# check_capabilities_restricted.go capabilityAll, capabilityNetBindService.
CAPABILITY_ALL = "ALL"
CAPABILITIES_RESTRICTED = frozenset({"NET_BIND_SERVICE"})


def _capabilities_baseline(meta: dict, spec: dict) -> list[Breach]:
    out = []
    for p, c, name in containers(spec):
        for j, cap in enumerate(lst(d(security_context(c).get("capabilities")).get("add"))):
            if str(cap) not in CAPABILITIES_BASELINE:
                out.append(Breach(p + ("securityContext", "capabilities", "add", j), "non-default capabilities",
                                  f"container {quoted(name)} must not include {quoted(str(cap))} in "
                                  "securityContext.capabilities.add"))
    return out


def _capabilities_restricted(meta: dict, spec: dict) -> list[Breach]:
    out = []
    for p, c, name in containers(spec):
        caps = security_context(c).get("capabilities")
        at = p + ("securityContext", "capabilities")
        if not isinstance(caps, dict) or CAPABILITY_ALL not in [str(x) for x in lst(caps.get("drop"))]:
            out.append(Breach(at + ("drop",), "unrestricted capabilities",
                              f'container {quoted(name)} must set securityContext.capabilities.drop=["ALL"]'))
        for j, cap in enumerate(lst(d(caps).get("add"))):
            if str(cap) not in CAPABILITIES_RESTRICTED:
                out.append(Breach(at + ("add", j), "unrestricted capabilities",
                                  f"container {quoted(name)} must not include {quoted(str(cap))} in "
                                  "securityContext.capabilities.add"))
    return out


DEFAULT_PROC_MOUNT = "Default"      # k8s.io/api core/v1 DefaultProcMount


def _proc_mount(meta: dict, spec: dict) -> list[Breach]:
    # procMount_1_0: allowed undefined or "Default".
    out = []
    for p, c, name in containers(spec):
        pm = security_context(c).get("procMount")
        if pm is not None and pm != DEFAULT_PROC_MOUNT:
            out.append(Breach(p + ("securityContext", "procMount"), "procMount",
                              f"container {quoted(name)} must not set securityContext.procMount to {quoted(str(pm))}"))
    return out


def _proc_mount_1_35_baseline(meta: dict, spec: dict) -> list[Breach]:
    # procMount1_35baseline: any value in a user namespace (hostUsers: false).
    return [] if user_namespace(spec) else _proc_mount(meta, spec)


CHECKS = (
    Check("privileged", BASELINE, (Versioned(0, _privileged),)),
    # Field added in 1.8; Windows pods exempt from 1.25.
    Check("allowPrivilegeEscalation", RESTRICTED, (Versioned(8, _allow_privilege_escalation),
                                                   Versioned(25, _windows_exempt(_allow_privilege_escalation)))),
    Check("capabilities_baseline", BASELINE, (Versioned(0, _capabilities_baseline),)),
    # From 1.22; replaces capabilities_baseline in restricted; Windows pods exempt from 1.25.
    Check("capabilities_restricted", RESTRICTED,
          (Versioned(22, _capabilities_restricted, ("capabilities_baseline",)),
           Versioned(25, _windows_exempt(_capabilities_restricted), ("capabilities_baseline",)))),
    Check("procMount", BASELINE, (Versioned(0, _proc_mount), Versioned(35, _proc_mount_1_35_baseline))),
    # 1.35: restricted keeps the unconditional 1.0 check and replaces the relaxed baseline one.
    Check("procMount_restricted", RESTRICTED, (Versioned(35, _proc_mount, ("procMount",)),)),
)

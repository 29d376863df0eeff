"""Controls on the kernel's confinement of a container: seccomp, AppArmor and SELinux profiles.

Source: kubernetes/pod-security-admission policy/check_seccompProfile_baseline.go
(seccompProfileBaseline_1_0 on the alpha annotations, seccompProfileBaseline_1_19 on the fields,
validSeccomp, validSeccompAnnotationValue), check_seccompProfile_restricted.go
(seccompProfileRestricted_1_19, _1_25), check_appArmorProfile.go (appArmorProfile_1_0,
allowedProfileType, allowedAnnotationValue), check_seLinuxOptions.go (seLinuxOptions1_0, 1_31 and
their allowed types), read at v0.37.0-alpha.2; the constants they name are k8s.io/api core/v1's.
"""
from __future__ import annotations

from .model import BASELINE, RESTRICTED, Breach, Check, Versioned, containers, d, go_quote, quoted, \
    security_context, windows

SECCOMP_TYPES = ("RuntimeDefault", "Localhost")
# core/v1 SeccompPodAnnotationKey, SeccompContainerAnnotationKeyPrefix; allowed values:
# SeccompProfileRuntimeDefault, DeprecatedSeccompProfileDockerDefault, SeccompLocalhostProfileNamePrefix.
SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"
SECCOMP_ANNOTATION_VALUES = ("runtime/default", "docker/default")
SECCOMP_LOCALHOST_PREFIX = "localhost/"


def _seccomp_annotation_ok(v) -> bool:
    return v in SECCOMP_ANNOTATION_VALUES or str(v).startswith(SECCOMP_LOCALHOST_PREFIX)


def _annotations(meta: dict) -> dict:
    return d(meta.get("annotations"))


def _seccomp_baseline_1_0(meta: dict, spec: dict) -> list[Breach]:
    ann = _annotations(meta)
    keys = [SECCOMP_POD_ANNOTATION] + [SECCOMP_CONTAINER_ANNOTATION + name for _, _, name in containers(spec)]
    return [Breach(("metadata", "annotations", k), "seccompProfile", f"forbidden annotation {k}={go_quote(ann[k])}")
            for k in dict.fromkeys(keys) if k in ann and not _seccomp_annotation_ok(ann[k])]


def _seccomp_setters(spec: dict):
    """(path, who, profile) of the pod and of each container that sets securityContext.seccompProfile."""
    pod = d(spec.get("securityContext")).get("seccompProfile")
    yield ("spec", "securityContext", "seccompProfile"), "pod", pod
    for p, c, name in containers(spec):
        yield p + ("securityContext", "seccompProfile"), f"container {quoted(name)}", security_context(c).get("seccompProfile")


def _bad_seccomp(at: tuple, who: str, profile) -> Breach:
    t = str(d(profile).get("type", ""))
    return Breach(at + ("type",), "seccompProfile", f"{who} must not set securityContext.seccompProfile.type to {quoted(t)}")


def _seccomp_baseline_1_19(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: RuntimeDefault, Localhost, undefined.
    return [_bad_seccomp(at, who, prof) for at, who, prof in _seccomp_setters(spec)
            if prof is not None and d(prof).get("type") not in SECCOMP_TYPES]


def _seccomp_restricted_1_19(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: RuntimeDefault, Localhost; a container may leave it unset when the pod sets a valid one.
    out, implicit = [], []
    pod_set = False
    for at, who, prof in _seccomp_setters(spec):
        if prof is not None:
            if d(prof).get("type") not in SECCOMP_TYPES:
                out.append(_bad_seccomp(at, who, prof))
            elif who == "pod":
                pod_set = True
        elif who != "pod" and not pod_set:
            implicit.append(Breach(at + ("type",), "seccompProfile",
                                   f'pod or {who} must set securityContext.seccompProfile.type to '
                                   '"RuntimeDefault" or "Localhost"'))
    return out + implicit


def _seccomp_restricted_1_25(meta: dict, spec: dict) -> list[Breach]:
    return [] if windows(spec) else _seccomp_restricted_1_19(meta, spec)


APPARMOR_TYPES = ("RuntimeDefault", "Localhost")
# core/v1 DeprecatedAppArmorBetaContainerAnnotationKeyPrefix; allowed values: empty,
# DeprecatedAppArmorBetaProfileRuntimeDefault, DeprecatedAppArmorBetaProfileNamePrefix + name.
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
APPARMOR_ANNOTATION_VALUES = ("", "runtime/default")
APPARMOR_LOCALHOST_PREFIX = "localhost/"


def _app_armor(meta: dict, spec: dict) -> list[Breach]:
    out = []
    pod = d(spec.get("securityContext")).get("appArmorProfile")
    setters = [(("spec", "securityContext", "appArmorProfile"), "pod", pod)]
    setters += [(p + ("securityContext", "appArmorProfile"), f"container {quoted(name)}",
                 security_context(c).get("appArmorProfile")) for p, c, name in containers(spec)]
    for at, who, prof in setters:
        if prof is not None and d(prof).get("type") not in APPARMOR_TYPES:
            t = str(d(prof).get("type", ""))
            out.append(Breach(at + ("type",), "forbidden AppArmor profile",
                              f"{who} must not set AppArmor profile type to {quoted(t)}"))
    for k, v in sorted(_annotations(meta).items(), key=lambda kv: str(kv[0])):
        v = "" if v is None else str(v)
        if str(k).startswith(APPARMOR_ANNOTATION) and not (v in APPARMOR_ANNOTATION_VALUES
                                                           or v.startswith(APPARMOR_LOCALHOST_PREFIX)):
            out.append(Breach(("metadata", "annotations", k), "forbidden AppArmor profile",
                              f"annotation must not set AppArmor profile type to {quoted(f'{k}={go_quote(v)}')}"))
    return out


SELINUX_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
SELINUX_TYPES_1_31 = SELINUX_TYPES_1_0 | {"container_engine_t"}


def _se_linux(allowed: frozenset):
    def check(meta: dict, spec: dict) -> list[Breach]:
        out = []
        setters = [(("spec", "securityContext", "seLinuxOptions"), "pod",
                    d(spec.get("securityContext")).get("seLinuxOptions"))]
        setters += [(p + ("securityContext", "seLinuxOptions"), f"container {quoted(name)}",
                     security_context(c).get("seLinuxOptions")) for p, c, name in containers(spec)]
        for at, who, opts in setters:
            if opts is None:
                continue
            opts = d(opts)
            bad = []
            t = str(opts.get("type") or "")
            if t not in allowed:
                bad.append(("type", f"type {quoted(t)}"))
            for key in ("user", "role"):
                if opts.get(key):
                    bad.append((key, f"{key} may not be set"))
            if bad:
                out.append(Breach(at + (bad[0][0],), "seLinuxOptions",
                                  f"{who} set forbidden securityContext.seLinuxOptions: {'; '.join(b for _, b in bad)}"))
        return out
    return check


CHECKS = (
    Check("seccompProfile_baseline", BASELINE, (Versioned(0, _seccomp_baseline_1_0),
                                                Versioned(19, _seccomp_baseline_1_19))),
    # From 1.19 (the fields); replaces seccompProfile_baseline in restricted; Windows pods exempt from 1.25.
    Check("seccompProfile_restricted", RESTRICTED,
          (Versioned(19, _seccomp_restricted_1_19, ("seccompProfile_baseline",)),
           Versioned(25, _seccomp_restricted_1_25, ("seccompProfile_baseline",)))),
    Check("appArmorProfile", BASELINE, (Versioned(0, _app_armor),)),
    Check("seLinuxOptions", BASELINE, (Versioned(0, _se_linux(SELINUX_TYPES_1_0)),
                                       Versioned(31, _se_linux(SELINUX_TYPES_1_31)))),
)

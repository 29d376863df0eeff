"""The safe sysctls a pod may set: namespaced in the pod and isolated from other pods of its node.

Source: kubernetes/pod-security-admission policy/check_sysctls.go (sysctlsAllowedV1Dot0, V1Dot27,
V1Dot29, V1Dot32, V1Dot37), read at v0.37.0-alpha.2 (1.37 added the last two).
"""
from __future__ import annotations

from .model import BASELINE, Breach, Check, Versioned, d, lst

ALLOWED_1_0 = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                         "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"})
ALLOWED_1_27 = ALLOWED_1_0 | {"net.ipv4.ip_local_reserved_ports"}
ALLOWED_1_29 = ALLOWED_1_27 | {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                               "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
ALLOWED_1_32 = ALLOWED_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
ALLOWED_1_37 = ALLOWED_1_32 | {"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}


def _sysctls(allowed: frozenset):
    def check(meta: dict, spec: dict) -> list[Breach]:
        return [Breach(("spec", "securityContext", "sysctls", i, "name"), "forbidden sysctls", str(d(s).get("name", "")))
                for i, s in enumerate(lst(d(spec.get("securityContext")).get("sysctls")))
                if str(d(s).get("name", "")) not in allowed]
    return check


CHECKS = (
    Check("sysctls", BASELINE, (Versioned(0, _sysctls(ALLOWED_1_0)), Versioned(27, _sysctls(ALLOWED_1_27)),
                                Versioned(29, _sysctls(ALLOWED_1_29)), Versioned(32, _sysctls(ALLOWED_1_32)),
                                Versioned(37, _sysctls(ALLOWED_1_37)))),
)

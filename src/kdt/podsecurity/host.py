"""Controls on what of the node a pod may reach: host namespaces, hostPath volumes, host ports, host
addresses in probes and lifecycle handlers, Windows host processes.

Source: kubernetes/pod-security-admission policy/check_hostNamespaces.go (hostNamespaces_1_0),
check_hostPathVolumes.go (hostPathVolumes_1_0), check_hostPorts.go (hostPorts_1_0),
check_hostProbesAndhostLifecycle.go (hostProbesAndHostLifecycleV1Dot34, getForbiddenHostProbes,
getForbiddenHostLifecycle), check_windowsHostProcess.go (windowsHostProcess_1_0), read at
v0.37.0-alpha.2.
"""
from __future__ import annotations

from .model import BASELINE, Breach, Check, Versioned, containers, d, lst, quoted, security_context

HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC")


def _host_namespaces(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: undefined, false.
    return [Breach(("spec", key), "host namespaces", f"{key}=true") for key in HOST_NAMESPACES if spec.get(key) is True]


def _host_path_volumes(meta: dict, spec: dict) -> list[Breach]:
    return [Breach(("spec", "volumes", i, "hostPath"), "hostPath volumes", f"volume {quoted(str(d(v).get('name', '')))}")
            for i, v in enumerate(lst(spec.get("volumes"))) if d(v).get("hostPath") is not None]


def _nonzero(v) -> bool:
    return v is not None and not isinstance(v, bool) and v != 0 and v != "0"


def _host_ports(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: undefined or 0.
    out = []
    for p, c, name in containers(spec):
        for j, port in enumerate(lst(c.get("ports"))):
            hp = d(port).get("hostPort")
            if _nonzero(hp):
                out.append(Breach(p + ("ports", j, "hostPort"), "hostPort",
                                  f"container {quoted(name)} uses hostPort {hp}"))
    return out


PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
LIFECYCLE = ("postStart", "preStop")
HANDLERS = ("httpGet", "tcpSocket")     # tcpSocket in a lifecycle handler is deprecated but still checked


def _host_probes_and_lifecycle(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: "" or undefined, in every probe's and lifecycle handler's httpGet.host and tcpSocket.host.
    out = []
    for p, c, name in containers(spec):
        places = [((probe,), d(c.get(probe))) for probe in PROBES]
        places += [(("lifecycle", h), d(d(c.get("lifecycle")).get(h))) for h in LIFECYCLE]
        for where, handler in places:
            for kind in HANDLERS:
                host = d(handler.get(kind)).get("host")
                if host not in (None, ""):
                    out.append(Breach(p + where + (kind, "host"), "probe or lifecycle host",
                                      f"container {quoted(name)} uses probe or lifecycle host {quoted(str(host))}"))
    return out


def _windows_host_process(meta: dict, spec: dict) -> list[Breach]:
    # Allowed: undefined, false (pod and containers).
    out = []
    if d(d(spec.get("securityContext")).get("windowsOptions")).get("hostProcess") is True:
        out.append(Breach(("spec", "securityContext", "windowsOptions", "hostProcess"), "hostProcess",
                          "pod must not set securityContext.windowsOptions.hostProcess=true"))
    for p, c, name in containers(spec):
        if d(security_context(c).get("windowsOptions")).get("hostProcess") is True:
            out.append(Breach(p + ("securityContext", "windowsOptions", "hostProcess"), "hostProcess",
                              f"container {quoted(name)} must not set securityContext.windowsOptions.hostProcess=true"))
    return out


CHECKS = (
    Check("hostNamespaces", BASELINE, (Versioned(0, _host_namespaces),)),
    Check("hostPathVolumes", BASELINE, (Versioned(0, _host_path_volumes),)),
    Check("hostPorts", BASELINE, (Versioned(0, _host_ports),)),
    Check("hostProbesAndHostLifecycle", BASELINE, (Versioned(34, _host_probes_and_lifecycle),)),
    Check("windowsHostProcess", BASELINE, (Versioned(0, _windows_host_process),)),
)

"""A pod spec as the API server validates it: containers, ports, env, volumes, probes, resources.

kubernetes/kubernetes pkg/apis/core/validation/validation.go (the version read is
the one the search tool stores, Kubernetes 1.34/1.35; the rules below hold from
1.25, the oldest schemas kdt bundles, unless a comment says otherwise):
ValidatePodSpec, validateContainers, validateInitContainers,
validateContainerCommon, validateContainerPorts, ValidateEnv,
validateEnvVarValueFrom, ValidateEnvFrom, ValidateVolumes, validateVolumeSource,
ValidateVolumeMounts, validateProbe and validateHandler, validateLifecycle,
ValidateTolerations, ValidateHostAliases and validatePodDNSConfig (their IPs
strict from Kubernetes 1.36, kdt.formats), validateResourceRequirements and
validateContainerResourceName, with helpers of pkg/apis/core/helper/helpers.go
(IsStandardContainerResourceName, IsExtendedResourceName, IsOvercommitAllowed,
IsIntegerResourceName).

The API server validates after its defaults (pkg/apis/core/v1/defaults.go), so
what a default fills is no error here: restartPolicy Always, dnsPolicy
ClusterFirst, port protocol TCP, terminationMessagePolicy File, imagePullPolicy,
probe thresholds (0 becomes 1, 10, 1 and 3), a volume without a source becomes
an emptyDir, terminationGracePeriodSeconds 30.

`PodOptions` says what an operator fills or overwrites in its pod templates,
so that nothing is reported that the pods it creates will not have.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fractions import Fraction

from .. import formats as F
from . import meta as M
from .. import quantity as Q
from ..findings import format_path
from .checker import (Report, as_int, config_key, d, dns1123_label, dns1123_subdomain, env_name, label_key,
                      label_value, lst, port_name, quote, relaxed_env_name)

RULE_POD = "api-pod"
RULE_RESTART = "api-restart-policy"
RULE_CONTAINER = "api-container"
RULE_PORT = "api-port"
RULE_ENV = "api-env"
RULE_VOLUME = "api-volume"
RULE_PROBE = "api-probe"
RULE_RESOURCES = "api-resources"
RULE_QUANTITY = "api-quantity"

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
PROTOCOLS = ("TCP", "UDP", "SCTP")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
HOST_PATH_TYPES = ("", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice",
                   "BlockDevice")
DEFAULT_GRACE_SECONDS = 30            # v1 defaults: terminationGracePeriodSeconds
MAX_INT32 = 2 ** 31 - 1
# validEnvDownwardAPIFieldPathExpressions; status.hostIPs joined in 1.28/1.29: accepted for every version
# (a miss on an old cluster, never a false error on a new one).
ENV_FIELD_PATHS = frozenset(("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                             "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
                             "status.podIPs"))
ENV_RESOURCE_PATHS = frozenset(("limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu",
                                "requests.memory", "requests.ephemeral-storage"))
_SUBSCRIPTED = re.compile(r"(metadata\.(?:labels|annotations))\['(.*)'\]").fullmatch   # fieldpath.SplitMaybeSubscriptedPath
VOLUME_SOURCES = ("hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs",
                  "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
                  "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
                  "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral",
                  "image")
_VOLUME_SOURCE_SET = frozenset(VOLUME_SOURCES)
HANDLERS_PROBE = ("exec", "httpGet", "tcpSocket", "grpc")
HANDLERS_LIFECYCLE = ("exec", "httpGet", "tcpSocket", "sleep")
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
HUGEPAGES = "hugepages-"
NATIVE_PREFIX = "kubernetes.io/"
FILE_MODE_MAX = 0o777
MAX_DNS_NAMESERVERS = 3               # validation.go MaxDNSNameservers


@dataclass(frozen=True)
class PodOptions:
    """What the API server (or the controller that creates the pods) will see of this template."""

    restart_default: str = "Always"               # what an empty restartPolicy becomes
    restart_allowed: tuple | None = None          # the kind's own restriction (Job: OnFailure, Never)
    restart_why: str = ""
    check_restart: bool = True                    # False: the operator writes restartPolicy itself
    image_required: bool = True                   # False: the operator supplies images (runtime `node`)
    mounts_resolve: bool = True                   # False: volumes may come from elsewhere (TrainJob patches)
    claim_volumes: frozenset = field(default_factory=frozenset)   # StatefulSet volumeClaimTemplates


def _str(v) -> str | None:
    return v if isinstance(v, str) else None


def template(r: Report, tmpl: dict, path: tuple, o: PodOptions) -> None:
    """A PodTemplateSpec: its labels and annotations, then its spec."""
    M.template_meta(r, tmpl, path)
    spec = tmpl.get("spec")
    if isinstance(spec, dict):
        pod_spec(r, spec, path + ("spec",), o)


def _pod_dns(r: Report, spec: dict, path: tuple, key: str, dns) -> None:
    if isinstance(dns, str) and dns and dns not in DNS_POLICIES:
        r.err(RULE_POD, path + (key,), f"Unsupported value: {quote(dns)}: supported values: {_opts(DNS_POLICIES)}")
    if dns == "None" and not lst(d(spec.get("dnsConfig")).get("nameservers")):
        r.err(RULE_POD, path + ("dnsConfig",), "Required value: must provide at least one DNS nameserver when "
                                                "`dnsPolicy` is None")


def _pod_label_name(r: Report, spec: dict, path: tuple, key: str, v) -> None:
    if isinstance(v, str) and v:
        wrong = dns1123_label(v)
        if wrong:
            r.each(RULE_POD, path + (key,), v, wrong)


def _pod_subdomain_name(r: Report, spec: dict, path: tuple, key: str, v) -> None:
    if isinstance(v, str) and v:
        wrong = dns1123_subdomain(v)
        if wrong:
            r.each(RULE_POD, path + (key,), v, wrong)


def _pod_deadline(r: Report, spec: dict, path: tuple, key: str, v) -> None:
    ads = as_int(v)
    if ads is not None and not 1 <= ads <= MAX_INT32:
        r.err(RULE_POD, path + (key,), f"Invalid value: {ads}: {F.inclusive_range_error(1, MAX_INT32)}")


def ip_fields(r: Report, rule: str, values, path: tuple) -> None:
    """Each IP address of a legacy field (IsValidIPForLegacyField; strict from Kubernetes 1.36: Options)."""
    for i, ip in enumerate(lst(values)):
        if isinstance(ip, str):
            r.each(rule, path + (i,), ip, F.is_valid_ip_for_legacy_field(ip, r.opts.strict_ip_cidr))


def _pod_host_aliases(r: Report, spec: dict, path: tuple, key: str, v) -> None:
    """ValidateHostAliases (kubernetes v1.36.3 pkg/apis/core/validation/validation.go): each ip an IP address
    of a legacy field, each hostname a DNS-1123 subdomain."""
    for i, alias in enumerate(lst(v)):
        if not isinstance(alias, dict):
            continue
        p = path + (key, i)
        ip = alias.get("ip")
        if isinstance(ip, str):
            r.each(RULE_POD, p + ("ip",), ip, F.is_valid_ip_for_legacy_field(ip, r.opts.strict_ip_cidr))
        for j, host in enumerate(lst(alias.get("hostnames"))):
            if isinstance(host, str):
                r.each(RULE_POD, p + ("hostnames", j), host, dns1123_subdomain(host))


def _pod_dns_config(r: Report, spec: dict, path: tuple, key: str, v) -> None:
    """validatePodDNSConfig (v1.36.3): at most MaxDNSNameservers (3) nameservers, each an IP address of a legacy
    field."""
    servers = lst(d(v).get("nameservers"))
    if len(servers) > MAX_DNS_NAMESERVERS:
        r.err(RULE_POD, path + (key, "nameservers"), f"Invalid value: {json.dumps(servers, separators=(',', ':'))}: "
                                                     f"must not have more than {MAX_DNS_NAMESERVERS} nameservers")
    ip_fields(r, RULE_POD, servers, path + (key, "nameservers"))


def _pod_ephemeral(r: Report, spec: dict, path: tuple, key: str, v) -> None:
    if lst(v):
        r.err(RULE_CONTAINER, path + (key,), "Forbidden: cannot be set on create")


# Pod spec fields with a check of their own, by key (a spec is walked by the keys it has).
_POD_FIELDS = {
    "dnsPolicy": _pod_dns,
    "nodeSelector": lambda r, spec, path, key, v: M.labels(r, v, path + (key,)),
    "hostname": _pod_label_name,
    "subdomain": _pod_label_name,
    "priorityClassName": _pod_subdomain_name,
    "serviceAccountName": _pod_subdomain_name,
    "serviceAccount": _pod_subdomain_name,
    "nodeName": _pod_subdomain_name,
    "activeDeadlineSeconds": _pod_deadline,
    "tolerations": lambda r, spec, path, key, v: _tolerations(r, v, path + (key,)),
    "ephemeralContainers": _pod_ephemeral,
    "hostAliases": _pod_host_aliases,
    "dnsConfig": _pod_dns_config,
}
_NO_VOLUMES: frozenset = frozenset()


def pod_spec(r: Report, spec: dict, path: tuple, o: PodOptions) -> None:
    restart = spec.get("restartPolicy")
    if o.check_restart and (restart is None or isinstance(restart, str)):
        value = restart or o.restart_default
        if value not in RESTART_POLICIES:
            r.err(RULE_RESTART, path + ("restartPolicy",),
                  f"Unsupported value: {quote(value)}: supported values: {_opts(RESTART_POLICIES)}")
        elif o.restart_allowed and value not in o.restart_allowed:
            r.err(RULE_RESTART, path + ("restartPolicy",),
                  f"Unsupported value: {quote(value)}{' (the default)' if not restart else ''}: supported values: "
                  f"{_opts(o.restart_allowed)}{o.restart_why}")
    for key, value in spec.items():
        check = _POD_FIELDS.get(key)
        if check is not None:
            check(r, spec, path, key, value)
    vols = spec.get("volumes")
    volumes = _volumes(r, vols, path + ("volumes",)) if vols else _NO_VOLUMES
    grace = as_int(spec.get("terminationGracePeriodSeconds"))
    grace = DEFAULT_GRACE_SECONDS if grace is None else grace
    containers = spec.get("containers")
    if isinstance(containers, list) and not containers:
        r.err(RULE_CONTAINER, path + ("containers",), "Required value: a pod needs at least one container")
    names: set = set()
    host_ports: set = set()
    host_network = spec.get("hostNetwork") is True
    for key in ("containers", "initContainers"):
        listed = spec.get(key)
        if not isinstance(listed, list):
            continue
        init = key == "initContainers"
        for i, c in enumerate(listed):
            if not isinstance(c, dict):
                continue
            _container(r, c, path, key, i, volumes, o, init, grace)
            name = c.get("name")
            if isinstance(name, str):
                if name in names:
                    r.err(RULE_CONTAINER, path + (key, i, "name"), f"Duplicate value: {quote(name)}")
                names.add(name)
            ports_ = c.get("ports")
            if ports_:
                _host_ports(r, ports_, path + (key, i, "ports"), host_network, None if init else host_ports)
    _port_warnings(r, spec, path)


def _port_warnings(r: Report, spec: dict, path: tuple) -> None:
    """The API server's warnings on a pod's ports (kubernetes v1.36.3 pkg/api/pod/warnings.go
    warningsForPodSpecAndMeta, for a Pod and every pod template): across init, regular and ephemeral
    containers (pods.VisitContainersWithPath's order), a hostIP without hostPort; a containerPort/protocol
    (protocol defaulted to TCP) listed twice, as an exact duplicate, an overlap (one of them without
    hostPort) or a dangerously ambiguous pair (same hostPort, one hostIP unset); a port name used twice."""
    seen: dict = {}
    names: dict = {}
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(lst(spec.get(key))):
            for j, p in enumerate(lst(d(c).get("ports"))):
                if not isinstance(p, dict):
                    continue
                here = path + (key, i, "ports", j)
                host_ip = _str(p.get("hostIP")) or ""
                host_port = as_int(p.get("hostPort")) or 0
                if host_ip and not host_port:
                    r.warn(RULE_PORT, here, "hostIP set without hostPort")
                slot = (as_int(p.get("containerPort")) or 0, _str(p.get("protocol")) or "TCP")
                for other, o_ip, o_port in seen.get(slot, ()):
                    if host_ip == o_ip and host_port == o_port:
                        r.warn(RULE_PORT, here, f"duplicate port definition with {format_path(list(other))}")
                    elif not host_port or not o_port:
                        r.warn(RULE_PORT, here, f"overlapping port definition with {format_path(list(other))}")
                    elif host_port == o_port and (not host_ip) != (not o_ip):
                        r.warn(RULE_PORT, here, f"dangerously ambiguous port definition with {format_path(list(other))}")
                seen.setdefault(slot, []).append((here, host_ip, host_port))
                name = _str(p.get("name"))
                if name:
                    if name in names and names[name][:-1] == here[:-1]:
                        pass        # within one container: an error already (validateContainerPorts)
                    elif name in names:
                        first = format_path(list(names[name]))
                        r.warn(RULE_PORT, here, f"duplicate port name {quote(name)} with {first}, services and probes "
                                                f"that select ports by name will use {first}")
                    else:
                        names[name] = here


def _host_ports(r: Report, ports_, path: tuple, host_network: bool, seen: set | None) -> None:
    """Host ports: equal to containerPort on the host network, and never twice among the regular containers
    (init containers run one by one: `seen` is None for them)."""
    for j, p in enumerate(lst(ports_)):
        hp = as_int(d(p).get("hostPort"))
        if not hp:
            continue
        cp = as_int(d(p).get("containerPort"))
        if host_network and cp is not None and hp != cp:
            r.err(RULE_PORT, path + (j, "hostPort"), f"Invalid value: {hp}: must match `containerPort` when "
                                                     "`hostNetwork` is true")
        if seen is None:
            continue
        slot = f"{d(p).get('protocol') or 'TCP'}/{d(p).get('hostIP') or ''}/{hp}"
        if slot in seen:
            r.err(RULE_PORT, path + (j, "hostPort"), f"Duplicate value: {quote(slot)}")
        seen.add(slot)


def _opts(values) -> str:
    return ", ".join(quote(v) for v in values)


def _tolerations(r: Report, value, path: tuple) -> None:
    for i, t in enumerate(lst(value)):
        if not isinstance(t, dict):
            continue
        p = path + (i,)
        key, op, val, effect = (t.get("key") or ""), (t.get("operator") or ""), (t.get("value") or ""), t.get("effect")
        if isinstance(key, str) and key:
            wrong = label_key(key)
            if wrong:
                r.each(RULE_POD, p + ("key",), key, wrong)
        if not key and op != "Exists":
            r.err(RULE_POD, p + ("operator",), f"Invalid value: {quote(op)}: operator must be Exists when `key` is "
                                               'empty, which means "match all values and all keys"')
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            r.err(RULE_POD, p + ("effect",), f"Invalid value: {quote(effect or '')}: effect must be 'NoExecute' when "
                                             "`tolerationSeconds` is set")
        if op in ("Equal", "") and isinstance(val, str):
            wrong = label_value(val)
            if wrong:
                r.each(RULE_POD, p + ("operator",), val, wrong)
        elif op == "Exists":
            if val:
                r.err(RULE_POD, p + ("operator",), f"Invalid value: {quote(val)}: value must be empty when `operator` "
                                                   "is 'Exists'")
        elif isinstance(op, str):
            r.err(RULE_POD, p + ("operator",), f'Unsupported value: {quote(op)}: supported values: "Equal", "Exists"')
        if isinstance(effect, str) and effect and effect not in TAINT_EFFECTS:
            r.err(RULE_POD, p + ("effect",), f"Unsupported value: {quote(effect)}: supported values: {_opts(TAINT_EFFECTS)}")


def _file_mode(r: Report, value, path: tuple) -> None:
    mode = as_int(value)
    if mode is not None and not 0 <= mode <= FILE_MODE_MAX:
        r.err(RULE_VOLUME, path, f"Invalid value: {mode}: must be a number between 0 and 0777 (octal), both inclusive")


def _key_to_paths(r: Report, items, path: tuple) -> None:
    for i, kp in enumerate(lst(items)):
        if not isinstance(kp, dict):
            continue
        p = path + (i,)
        if not kp.get("key"):
            r.err(RULE_VOLUME, p + ("key",), "Required value")
        target = kp.get("path")
        if not target:
            r.err(RULE_VOLUME, p + ("path",), "Required value")
        elif isinstance(target, str):
            _local_path(r, target, p + ("path",), reserved=True)
        _file_mode(r, kp.get("mode"), p + ("mode",))


def _local_path(r: Report, value: str, path: tuple, reserved: bool = False) -> None:
    """validateLocalDescendingPath (and validateLocalNonReservedPath: no leading '..')."""
    if value.startswith("/"):
        r.err(RULE_VOLUME, path, f"Invalid value: {quote(value)}: must be a relative path")
    if any(part == ".." for part in re.split(r"[\\/]", value)):
        r.err(RULE_VOLUME, path, f"Invalid value: {quote(value)}: must not contain '..'")
    if reserved and value.startswith(".."):
        r.err(RULE_VOLUME, path, f"Invalid value: {quote(value)}: must not start with '..'")


def _volumes(r: Report, value, path: tuple) -> set:
    names: set = set()
    for i, v in enumerate(lst(value)):
        if not isinstance(v, dict):
            continue
        p = path + (i,)
        name = v.get("name")
        ok = True
        if name == "":
            r.err(RULE_VOLUME, p + ("name",), "Required value")
            ok = False
        elif isinstance(name, str):
            wrong = dns1123_label(name)
            r.each(RULE_VOLUME, p + ("name",), name, wrong)
            if name in names:
                r.err(RULE_VOLUME, p + ("name",), f"Duplicate value: {quote(name)}")
            ok = not wrong
        sources = [k for k, body in v.items() if k in _VOLUME_SOURCE_SET and body is not None]
        for extra in sources[1:]:
            r.err(RULE_VOLUME, p + (extra,), "Forbidden: may not specify more than 1 volume type")
        src = sources[0] if sources else "emptyDir"
        body = d(v.get(src))
        if src == "configMap":
            if not body.get("name"):
                r.err(RULE_VOLUME, p + ("configMap", "name"), "Required value")
            _file_mode(r, body.get("defaultMode"), p + ("configMap", "defaultMode"))
            _key_to_paths(r, body.get("items"), p + ("configMap", "items"))
        elif src == "secret":
            if not body.get("secretName"):
                r.err(RULE_VOLUME, p + ("secret", "secretName"), "Required value")
            _file_mode(r, body.get("defaultMode"), p + ("secret", "defaultMode"))
            _key_to_paths(r, body.get("items"), p + ("secret", "items"))
        elif src == "persistentVolumeClaim":
            if body.get("claimName") == "":
                r.err(RULE_VOLUME, p + ("persistentVolumeClaim", "claimName"), "Required value")
        elif src == "emptyDir":
            limit = body.get("sizeLimit")
            if limit is not None:
                got = quantity(r, limit, p + ("emptyDir", "sizeLimit"))
                if got is not None and got < 0:
                    r.err(RULE_VOLUME, p + ("emptyDir", "sizeLimit"), "Forbidden: SizeLimit field must be a valid "
                                                                      "resource quantity")
        elif src == "hostPath":
            hp = body.get("path")
            if hp == "":
                r.err(RULE_VOLUME, p + ("hostPath", "path"), "Required value")
            elif isinstance(hp, str) and any(part == ".." for part in hp.split("/")):
                r.err(RULE_VOLUME, p + ("hostPath", "path"), f"Invalid value: {quote(hp)}: must not contain '..'")
            t = body.get("type")
            if isinstance(t, str) and t not in HOST_PATH_TYPES:
                r.err(RULE_VOLUME, p + ("hostPath", "type"), f"Unsupported value: {quote(t)}: supported values: "
                                                             f"{_opts(HOST_PATH_TYPES)}")
        if ok and isinstance(name, str):
            names.add(name)
    return names


def _container_name(r: Report, c: dict, path: tuple, key: str, name) -> None:
    if name == "":
        r.err(RULE_CONTAINER, path + (key,), "Required value")
    elif isinstance(name, str):
        wrong = dns1123_label(name)
        if wrong:
            r.each(RULE_CONTAINER, path + (key,), name, wrong)


def _container_enum(allowed: tuple):
    def check(r: Report, c: dict, path: tuple, key: str, v) -> None:
        if isinstance(v, str) and v and v not in allowed:
            r.err(RULE_CONTAINER, path + (key,), f"Unsupported value: {quote(v)}: supported values: {_opts(allowed)}")
    return check


# Container fields with a check of their own but the frequent ones (_container tests those first).
_CONTAINER_FIELDS = {
    "terminationMessagePolicy": _container_enum(TERMINATION_MESSAGE_POLICIES),
    "imagePullPolicy": _container_enum(PULL_POLICIES),
    "envFrom": lambda r, c, path, key, v: env_from(r, v, path + (key,)),
}
_HANDLER_KEYS = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")


_CONTAINER_KEYS = {
    "name": lambda r, c, path, k, v, volumes, o: _container_name(r, c, path, k, v),
    "env": lambda r, c, path, k, v, volumes, o: env(r, v, path + (k,)),
    "resources": lambda r, c, path, k, v, volumes, o: resources(r, v, path + (k,)),
    "ports": lambda r, c, path, k, v, volumes, o: ports(r, v, path + (k,)),
    "volumeMounts": lambda r, c, path, k, v, volumes, o: _mounts(r, v, path + (k,), volumes, o),
    **{k: (lambda check: lambda r, c, path, k, v, volumes, o: check(r, c, path, k, v))(check)
       for k, check in _CONTAINER_FIELDS.items()},
}


def _container(r: Report, c: dict, spec_path: tuple, key: str, i: int, volumes, o: PodOptions, init: bool,
               grace: int) -> None:
    path = spec_path + (key, i)
    handlers = False
    get = _CONTAINER_KEYS.get
    for k, v in c.items():
        check = get(k)
        if check is not None:
            check(r, c, path, k, v, volumes, o)
        elif k in _HANDLER_KEYS:
            handlers = handlers or v is not None
    if o.image_required and not c.get("image"):
        r.err(RULE_CONTAINER, path + ("image",), "Required value: a container needs an image")
    rp = c.get("restartPolicy")
    if not init and rp is not None and not r.opts.container_restart_rules:
        r.err(RULE_CONTAINER, path + ("restartPolicy",), "Forbidden: may not be set for non-init containers")
    elif init and isinstance(rp, str) and rp != "Always":
        r.err(RULE_CONTAINER, path + ("restartPolicy",), f'Unsupported value: {quote(rp)}: supported values: "Always"')
    if not handlers:
        return
    if init and rp != "Always":
        for k in _HANDLER_KEYS:
            if c.get(k) is not None:
                r.err(RULE_CONTAINER, path + (k,), "Forbidden: may not be set for init containers without "
                                                   "restartPolicy=Always")
    else:
        _handlers(r, c, path, grace)


def ports(r: Report, value, path: tuple) -> None:
    names: set = set()
    for i, p in enumerate(lst(value)):
        if not isinstance(p, dict):
            continue
        pp = path + (i,)
        name = p.get("name")
        if isinstance(name, str) and name:
            wrong = port_name(name)
            r.each(RULE_PORT, pp + ("name",), name, wrong)
            if not wrong:
                if name in names:
                    r.err(RULE_PORT, pp + ("name",), f"Duplicate value: {quote(name)}")
                names.add(name)
        cp = as_int(p.get("containerPort"))
        if cp == 0:
            r.err(RULE_PORT, pp + ("containerPort",), "Required value")
        elif cp is not None:
            wrong = F.is_valid_port_num(cp)
            if wrong:
                r.each(RULE_PORT, pp + ("containerPort",), cp, wrong)
        hp = as_int(p.get("hostPort"))
        if hp:
            wrong = F.is_valid_port_num(hp)
            if wrong:
                r.each(RULE_PORT, pp + ("hostPort",), hp, wrong)
        proto = p.get("protocol")
        if isinstance(proto, str) and proto and proto not in PROTOCOLS:
            r.err(RULE_PORT, pp + ("protocol",), f"Unsupported value: {quote(proto)}: supported values: {_opts(PROTOCOLS)}")


def port_num_or_name(r: Report, value, path: tuple, rule: str = RULE_PORT) -> None:
    """ValidatePortNumOrName: an IntOrString port."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        wrong = F.is_valid_port_num(value)
        if wrong:
            r.each(rule, path, value, wrong)
    elif isinstance(value, str):
        wrong = port_name(value)
        if wrong:
            r.each(rule, path, value, wrong)


def env(r: Report, value, path: tuple) -> None:
    check_name = relaxed_env_name if r.opts.relaxed_env_names else env_name
    for i, e in enumerate(lst(value)):
        if not isinstance(e, dict):
            continue
        name = e.get("name")
        if name == "":
            r.err(RULE_ENV, path + (i, "name"), "Required value")
        elif isinstance(name, str):
            wrong = check_name(name)
            if wrong:
                r.each(RULE_ENV, path + (i, "name"), name, wrong)
        vf = e.get("valueFrom")
        if not isinstance(vf, dict):
            continue
        p = path + (i,)
        vp = p + ("valueFrom",)
        sources = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef") if vf.get(k) is not None]
        if not sources:
            r.err(RULE_ENV, vp, "Invalid value: must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                                "or `secretKeyRef`")
        elif e.get("value"):
            r.err(RULE_ENV, vp, "Invalid value: may not be specified when `value` is not empty")
        elif len(sources) > 1:
            r.err(RULE_ENV, vp, "Invalid value: may not have more than one field specified at a time")
        fr = vf.get("fieldRef")
        if isinstance(fr, dict):
            av, fp = fr.get("apiVersion", "v1"), fr.get("fieldPath")
            if av == "" or fp == "":
                r.err(RULE_ENV, vp + ("fieldRef", "apiVersion" if av == "" else "fieldPath"), "Required value")
            elif isinstance(av, str) and av != "v1":
                r.err(RULE_ENV, vp + ("fieldRef", "fieldPath"), f"Invalid value: {quote(fp)}: error converting "
                                                                f'fieldPath: unsupported pod version: "{av}"')
            elif isinstance(fp, str):
                sub = _SUBSCRIPTED(fp)
                if sub:
                    key = sub.group(2).lower() if sub.group(1).endswith("annotations") else sub.group(2)
                    wrong = label_key(key)
                    if wrong:
                        r.each(RULE_ENV, vp + ("fieldRef",), key, wrong)
                elif fp not in ENV_FIELD_PATHS:
                    r.err(RULE_ENV, vp + ("fieldRef", "fieldPath"),
                          f"Unsupported value: {quote(fp)}: supported values: {_opts(sorted(ENV_FIELD_PATHS))}")
        rf = vf.get("resourceFieldRef")
        if isinstance(rf, dict):
            res = rf.get("resource")
            if res == "":
                r.err(RULE_ENV, vp + ("resourceFieldRef", "resource"), "Required value")
            elif isinstance(res, str) and res not in ENV_RESOURCE_PATHS and \
                    not res.startswith(("requests.hugepages-", "limits.hugepages-")):
                r.err(RULE_ENV, vp + ("resourceFieldRef", "resource"),
                      f"Unsupported value: {quote(res)}: supported values: {_opts(sorted(ENV_RESOURCE_PATHS))}")
        for key in ("configMapKeyRef", "secretKeyRef"):
            ref = vf.get(key)
            if not isinstance(ref, dict):
                continue
            name = ref.get("name", "")
            if isinstance(name, str):
                wrong = dns1123_subdomain(name)
                if wrong:
                    r.each(RULE_ENV, vp + (key, "name"), name, wrong)
            k = ref.get("key")
            if not k:
                r.err(RULE_ENV, vp + (key, "key"), "Required value")
            elif isinstance(k, str):
                wrong = config_key(k)
                if wrong:
                    r.each(RULE_ENV, vp + (key, "key"), k, wrong)


def env_from(r: Report, value, path: tuple) -> None:
    for i, e in enumerate(lst(value)):
        if not isinstance(e, dict):
            continue
        p = path + (i,)
        prefix = e.get("prefix")
        if isinstance(prefix, str) and prefix:
            wrong = relaxed_env_name(prefix) if r.opts.relaxed_env_names else env_name(prefix)
            if wrong:
                r.each(RULE_ENV, p + ("prefix",), prefix, wrong)
        refs = [k for k in ("configMapRef", "secretRef") if e.get(k) is not None]
        if not refs:
            r.err(RULE_ENV, path, "Invalid value: must specify one of: `configMapRef` or `secretRef`")
        elif len(refs) > 1:
            r.err(RULE_ENV, path, "Invalid value: may not have more than one field specified at a time")
        for k in refs:
            name = d(e.get(k)).get("name")
            if not name:
                r.err(RULE_ENV, p + (k, "name"), "Required value")
            elif isinstance(name, str):
                wrong = F.name_is_dns_subdomain(name, True)
                if wrong:
                    r.each(RULE_ENV, p + (k, "name"), name, wrong)


def _mounts(r: Report, value, path: tuple, volumes: set, o: PodOptions) -> None:
    seen: set = set()
    for i, m in enumerate(lst(value)):
        if not isinstance(m, dict):
            continue
        p = path + (i,)
        name = m.get("name")
        if name == "":
            r.err(RULE_VOLUME, p + ("name",), "Required value")
        elif isinstance(name, str) and o.mounts_resolve and name not in volumes and name not in o.claim_volumes:
            r.err(RULE_VOLUME, p + ("name",), f"Not found: {quote(name)}: no volume of the pod has this name")
        mp = m.get("mountPath")
        if mp == "":
            r.err(RULE_VOLUME, p + ("mountPath",), "Required value")
        elif isinstance(mp, str):
            if mp in seen:
                r.err(RULE_VOLUME, p + ("mountPath",), f"Invalid value: {quote(mp)}: must be unique")
            seen.add(mp)
        sub, expr = m.get("subPath"), m.get("subPathExpr")
        if isinstance(sub, str) and sub:
            _local_path(r, sub, p + ("subPath",))
        if isinstance(expr, str) and expr:
            if sub:
                r.err(RULE_VOLUME, p + ("subPathExpr",), f"Invalid value: {quote(expr)}: subPathExpr and subPath are "
                                                         "mutually exclusive")
            _local_path(r, expr, p + ("subPathExpr",))


def _handler(r: Report, h, path: tuple, kinds: tuple, grace: int) -> None:
    if not isinstance(h, dict):
        return
    present = [k for k in kinds if h.get(k) is not None]
    if not present:
        r.err(RULE_PROBE, path, "Required value: must specify a handler type")
    for extra in present[1:]:
        r.err(RULE_PROBE, path + (extra,), "Forbidden: may not specify more than 1 handler type")
    if not present:
        return
    kind = present[0]
    body = d(h.get(kind))
    if kind == "exec" and not lst(body.get("command")):
        r.err(RULE_PROBE, path + ("exec", "command"), "Required value")
    elif kind == "httpGet":
        port_num_or_name(r, body.get("port"), path + ("httpGet", "port"), RULE_PROBE)
        scheme = body.get("scheme")
        if isinstance(scheme, str) and scheme and scheme not in ("HTTP", "HTTPS"):
            r.err(RULE_PROBE, path + ("httpGet", "scheme"), f'Unsupported value: {quote(scheme)}: supported values: '
                                                            '"HTTP", "HTTPS"')
        for j, hdr in enumerate(lst(body.get("httpHeaders"))):
            hn = d(hdr).get("name")
            if isinstance(hn, str):
                wrong = F.is_http_header_name(hn)
                if wrong:
                    r.each(RULE_PROBE, path + ("httpGet", "httpHeaders", j, "name"), hn, wrong)
    elif kind == "tcpSocket":
        port_num_or_name(r, body.get("port"), path + ("tcpSocket", "port"), RULE_PROBE)
    elif kind == "grpc":
        port = as_int(body.get("port"))
        if port is not None:
            wrong = F.is_valid_port_num(port)
            if wrong:
                r.each(RULE_PROBE, path + ("grpc", "port"), port, wrong)
    elif kind == "sleep":
        secs = as_int(body.get("seconds"))
        if secs is not None and (secs < 0 or (secs == 0 and not r.opts.sleep_zero) or secs > grace):
            r.err(RULE_PROBE, path + ("sleep",), f"Invalid value: {secs}: must be "
                                                 f"{'non-negative' if r.opts.sleep_zero else 'greater than 0'} and "
                                                 f"less than terminationGracePeriodSeconds ({grace})")


_PROBE_COUNTS = frozenset(("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                           "failureThreshold"))


def _handlers(r: Report, c: dict, path: tuple, grace: int) -> None:
    lc = c.get("lifecycle")
    if isinstance(lc, dict):
        for hook in ("postStart", "preStop"):
            _handler(r, lc.get(hook), path + ("lifecycle", hook), HANDLERS_LIFECYCLE, grace)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        pr = c.get(probe)
        if not isinstance(pr, dict):
            continue
        pp = path + (probe,)
        _handler(r, pr, pp, HANDLERS_PROBE, grace)
        for key, v in pr.items():
            if key in _PROBE_COUNTS and v.__class__ is int and v < 0:
                r.err(RULE_PROBE, pp + (key,), f"Invalid value: {v}: must be greater than or equal to 0")
        st = as_int(pr.get("successThreshold"))
        if probe != "readinessProbe" and st is not None and st > 1:
            r.err(RULE_PROBE, pp + ("successThreshold",), f"Invalid value: {st}: must be 1")
        tg = pr.get("terminationGracePeriodSeconds")
        if probe == "readinessProbe" and tg is not None:
            r.err(RULE_PROBE, pp + ("terminationGracePeriodSeconds",), "Invalid value: must not be set for "
                                                                       "readinessProbes")
        elif as_int(tg) is not None and tg <= 0:
            r.err(RULE_PROBE, pp + ("terminationGracePeriodSeconds",), f"Invalid value: {tg}: must be greater than 0")


# Resources --------------------------------------------------------------------------------------

def quantity(r: Report, value, path: tuple) -> int | Fraction | None:
    """A Quantity field: its value, or None after reporting why the API server cannot read it."""
    got = Q.read(value)
    if isinstance(got, str):
        r.err(RULE_QUANTITY, path, f"Invalid value: {quote(value)}: {got} (e.g. 16Gi, 16G, 500m, 1e3)")
        return None
    return got


def _native(name: str) -> bool:
    return "/" not in name or NATIVE_PREFIX in name


def _extended(name: str) -> bool:
    """IsExtendedResourceName."""
    return not _native(name) and not name.startswith("requests.") and not label_key("requests." + name)


def _name_errors(name: str) -> list[str]:
    """validateContainerResourceName: what is wrong with a container resource name."""
    wrong = label_key(name)
    if wrong:
        return [f"Invalid value: {quote(name)}: {m}" for m in wrong]
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith(HUGEPAGES):
            return [f"Invalid value: {quote(name)}: must be a standard resource for containers (cpu, memory, "
                    "ephemeral-storage, hugepages-<size>) or a domain-qualified extended resource (nvidia.com/gpu)"]
    elif not _native(name) and not _extended(name):
        return [f"Invalid value: {quote(name)}: doesn't follow extended resource name standard"]
    return []


_names: dict = {}


def _resource(name: str) -> tuple:
    """(errors, extended, overcommit allowed, huge page size or None) of a resource name, memoized."""
    got = _names.get(name)
    if got is None:
        size = Q.read(name[len(HUGEPAGES):]) if name.startswith(HUGEPAGES) else None
        got = (_name_errors(name), _extended(name), _native(name) and not name.startswith(HUGEPAGES),
               size if isinstance(size, (int, Fraction)) and size > 0 else None)
        if len(_names) > 4096:
            _names.clear()
        _names[name] = got
    return got


def _amounts(r: Report, listed: dict, path: tuple, section: str, flags: list) -> dict:
    """The readable amounts of one section (limits, requests) by resource name; what is wrong reported.
    `flags`: [cpu or memory seen, huge pages seen]."""
    out = {}
    for name, qty in listed.items():
        if name.__class__ is not str:
            continue
        errors, extended, _, page = _resource(name)
        v = Q.read(qty)
        whole = v.__class__ is int
        if errors or page or not whole and (extended or not isinstance(v, Fraction)) or v < 0:
            _resource_errors(r, path + (section, name), qty, v, errors, extended, page, name)
            if not (whole or isinstance(v, Fraction)):
                continue
        out[name] = v
        if name == "cpu" or name == "memory":
            flags[0] = True
        elif page is not None or name.startswith(HUGEPAGES):
            flags[1] = True
    return out


def resources(r: Report, value, path: tuple) -> None:
    """ResourceRequirements of a container (or of TrainJob's resourcesPerNode)."""
    if value.__class__ is not dict:
        return
    limits, requests = value.get("limits"), value.get("requests")
    flags = [False, False]
    lim = _amounts(r, limits, path, "limits", flags) if limits.__class__ is dict else {}
    if requests.__class__ is dict:
        for name, v in _amounts(r, requests, path, "requests", flags).items():
            overcommit = _resource(name)[2]
            limit = lim.get(name)
            if limit is not None:
                if v != limit and not overcommit:
                    r.err(RULE_RESOURCES, path + ("requests", name), f"Invalid value: must be equal to {name} limit "
                                                                     f"of {limits.get(name)}")
                elif v > limit:
                    r.err(RULE_RESOURCES, path + ("requests", name), f"Invalid value: must be less than or equal to "
                                                                     f"{name} limit of {limits.get(name)}")
            elif not overcommit and name not in (limits if limits.__class__ is dict else {}):
                r.err(RULE_RESOURCES, path + ("limits",), f"Required value: Limit must be set for non overcommitable "
                                                          f"resources ({name})")
    if flags[1] and not flags[0]:
        r.err(RULE_RESOURCES, path, "Forbidden: HugePages require cpu or memory")


def _resource_errors(r: Report, path: tuple, qty, v, errors: list, extended: bool, page, name: str) -> None:
    for m in errors:
        r.err(RULE_RESOURCES, path, m)
    if isinstance(v, str):
        r.err(RULE_QUANTITY, path, f"Invalid value: {quote(qty)}: {v} (e.g. 16Gi, 16G, 500m, 1e3)")
        return
    if v is None:
        return
    if v < 0:
        r.err(RULE_RESOURCES, path, f"Invalid value: {quote(qty)}: must be greater than or equal to 0")
    if not errors and extended and Q.milli_value(v) % 1000:
        r.err(RULE_RESOURCES, path, f"Invalid value: {quote(qty)}: must be an integer")
    if not errors and page is not None and Q.value(v) % Q.value(page):
        r.err(RULE_RESOURCES, path, f"Invalid value: {quote(qty)}: is not positive integer multiple of {name}")

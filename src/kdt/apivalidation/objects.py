"""Services, PersistentVolumeClaims, ConfigMaps, Secrets, NetworkPolicies and Nodes: the objects a training
job sits beside.

kubernetes/kubernetes pkg/apis/core/validation/validation.go (as stored by the
search tool, Kubernetes 1.34/1.35): ValidateService and validateServicePort
(after the v1 defaults: type ClusterIP, sessionAffinity None, protocol TCP,
targetPort = port), ValidatePersistentVolumeClaimSpec, ValidateConfigMap,
ValidateSecret (MaxSecretSize 1 MiB for both, keys IsConfigMapKey, the keys
each Secret type requires). At v1.36.3: the Service's externalIPs and
load-balancer source ranges, ValidateNode's podCIDRs, and
pkg/apis/networking/validation/validation.go ValidateNetworkPolicySpec, whose IPs
and CIDRs are strict from 1.36 (StrictIPCIDRValidation; kdt.formats).
"""
from __future__ import annotations

import base64
import binascii
import json
from .. import formats as F
from . import meta as M
from . import pods as P
from .checker import (Report, as_int, config_key, d, dns1123_label, dns1123_subdomain, label_key, lst, port_name,
                      quote)

RULE_SERVICE = "api-service"
RULE_PVC = "api-pvc"
RULE_CONFIG = "api-config"
RULE_NODE = "api-node"
RULE_NETWORK_POLICY = "api-network-policy"

SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
MAX_SECRET_SIZE = 1 * 1024 * 1024          # core.MaxSecretSize
# Keys each Secret type requires (ValidateSecret).
SECRET_TYPE_KEYS = {
    "kubernetes.io/dockercfg": ((".dockercfg",), "all"),
    "kubernetes.io/dockerconfigjson": ((".dockerconfigjson",), "all"),
    "kubernetes.io/basic-auth": (("username", "password"), "any"),
    "kubernetes.io/ssh-auth": (("ssh-privatekey",), "all"),
    "kubernetes.io/tls": (("tls.crt", "tls.key"), "all"),
}


def _opts(values) -> str:
    return ", ".join(quote(v) for v in values)


def service(r: Report) -> None:
    spec = r.doc.data.get("spec")
    if not isinstance(spec, dict):
        return
    path = ("spec",)
    typ = spec.get("type") or "ClusterIP"
    ips = lst(spec.get("clusterIPs"))
    headless = spec.get("clusterIP") == "None" or (ips[:1] == ["None"])
    ports = lst(spec.get("ports"))
    if isinstance(typ, str) and typ not in SERVICE_TYPES:
        r.err(RULE_SERVICE, path + ("type",), f"Unsupported value: {quote(typ)}: supported values: {_opts(SERVICE_TYPES)}")
    if not ports and not headless and typ != "ExternalName":
        r.err(RULE_SERVICE, path + ("ports",), "Required value")
    if headless and typ in ("NodePort", "LoadBalancer"):
        r.err(RULE_SERVICE, path + ("clusterIP",), f"Invalid value: \"None\": may not be set to 'None' for {typ} "
                                                   "services")
    if typ == "ExternalName":
        cname = spec.get("externalName")
        if not cname:
            r.err(RULE_SERVICE, path + ("externalName",), "Required value")
        elif isinstance(cname, str):
            cname = cname[:-1] if cname.endswith(".") else cname
            wrong = dns1123_subdomain(cname)
            if wrong:
                r.each(RULE_SERVICE, path + ("externalName",), cname, wrong)
    names: set = set()
    pairs: set = set()
    for i, p in enumerate(ports):
        if not isinstance(p, dict):
            continue
        pp = path + ("ports", i)
        name = p.get("name")
        if len(ports) > 1 and not name:
            r.err(RULE_SERVICE, pp + ("name",), "Required value: a Service with several ports names each")
        elif isinstance(name, str) and name:
            wrong = dns1123_label(name)
            if wrong:
                r.each(RULE_SERVICE, pp + ("name",), name, wrong)
            if name in names:
                r.err(RULE_SERVICE, pp + ("name",), f"Duplicate value: {quote(name)}")
            names.add(name)
        port = as_int(p.get("port"))
        if port is not None:
            wrong = F.is_valid_port_num(port)
            if wrong:
                r.each(RULE_SERVICE, pp + ("port",), port, wrong)
        proto = p.get("protocol") or "TCP"
        if isinstance(proto, str) and proto not in P.PROTOCOLS:
            r.err(RULE_SERVICE, pp + ("protocol",), f"Unsupported value: {quote(proto)}: supported values: "
                                                    f"{_opts(P.PROTOCOLS)}")
        target = p.get("targetPort")
        if target not in (None, 0, ""):
            P.port_num_or_name(r, target, pp + ("targetPort",), RULE_SERVICE)
        ap = p.get("appProtocol")
        if isinstance(ap, str):
            wrong = label_key(ap)
            if wrong:
                r.each(RULE_SERVICE, pp + ("appProtocol",), ap, wrong)
        if as_int(p.get("nodePort")) and typ == "ClusterIP":
            r.err(RULE_SERVICE, pp + ("nodePort",), "Forbidden: may not be used when `type` is 'ClusterIP'")
        if port is not None:
            if (proto, port) in pairs:
                r.err(RULE_SERVICE, pp, f"Duplicate value: the port {port}/{proto} is listed twice")
            pairs.add((proto, port))
    if isinstance(spec.get("selector"), dict):
        M.labels(r, spec.get("selector"), path + ("selector",))
    sa = spec.get("sessionAffinity")
    if isinstance(sa, str) and sa and sa not in ("ClientIP", "None"):
        r.err(RULE_SERVICE, path + ("sessionAffinity",), f'Unsupported value: {quote(sa)}: supported values: '
                                                         '"ClientIP", "None"')
    etp = spec.get("externalTrafficPolicy")
    if isinstance(etp, str) and etp and typ not in ("NodePort", "LoadBalancer"):
        r.err(RULE_SERVICE, path + ("externalTrafficPolicy",), f"Invalid value: {quote(etp)}: may only be set for "
                                                               "externally-accessible services")
    for key in ("externalTrafficPolicy", "internalTrafficPolicy"):
        v = spec.get(key)
        if isinstance(v, str) and v and v not in ("Cluster", "Local"):
            r.err(RULE_SERVICE, path + (key,), f'Unsupported value: {quote(v)}: supported values: "Cluster", "Local"')
    _service_addresses(r, spec, typ, path)


# core.AnnotationLoadBalancerSourceRangesKey
LB_SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"


def _service_addresses(r: Report, spec: dict, typ, path: tuple) -> None:
    """ValidateService (kubernetes v1.36.3 pkg/apis/core/validation/validation.go), on create: each externalIP
    an IP address of a legacy field and no unspecified, loopback or link-local one (ValidateEndpointIP); the
    loadBalancerSourceRanges (space-padding allowed), or else the annotation's comma-separated list, CIDRs of a
    legacy field, only for a LoadBalancer. Strict from 1.36 (Options.strict_ip_cidr). On update the values the
    old object held pass unchecked (its existingExternalIPs, existingSourceRanges): kdt judges a create."""
    strict = r.opts.strict_ip_cidr
    for i, ip in enumerate(lst(spec.get("externalIPs"))):
        if isinstance(ip, str):
            r.each(RULE_SERVICE, path + ("externalIPs", i), ip,
                   F.is_valid_ip_for_legacy_field(ip, strict) or F.endpoint_ip_errors(ip))
    ranges = lst(spec.get("loadBalancerSourceRanges"))
    lb = typ == "LoadBalancer"
    if ranges:
        # the API server names the field `spec.LoadBalancerSourceRanges` (its Go name)
        if not lb:
            r.err(RULE_SERVICE, path + ("loadBalancerSourceRanges",),
                  "Forbidden: may only be used when `type` is 'LoadBalancer'")
        for i, value in enumerate(ranges):
            if isinstance(value, str):
                value = value.strip()
                r.each(RULE_SERVICE, path + ("loadBalancerSourceRanges", i), value,
                       F.is_valid_cidr_for_legacy_field(value, strict))
        return
    meta = d(r.doc.data.get("metadata"))
    value = d(meta.get("annotations")).get(LB_SOURCE_RANGES_ANNOTATION)
    if value is None:
        return
    where = ("metadata", "annotations", LB_SOURCE_RANGES_ANNOTATION)
    if not lb:
        r.err(RULE_SERVICE, where, "Forbidden: may only be used when `type` is 'LoadBalancer'")
    if isinstance(value, str) and value.strip():
        for cidr in value.strip().split(","):
            cidr = cidr.strip()
            r.each(RULE_SERVICE, where, cidr, F.is_valid_cidr_for_legacy_field(cidr, strict))


def node(r: Report) -> None:
    """ValidateNode (kubernetes v1.36.3 pkg/apis/core/validation/validation.go), its podCIDRs: each a CIDR of a
    legacy field (strict from 1.36: no bits beyond the prefix, `10.0.0.1/24` is refused), and more than one only
    as one IPv4 and one IPv6 (netutils.IsDualStackCIDRStrings). The v1 `spec.podCIDR` is the internal podCIDRs'
    first item when podCIDRs is empty or differs from it (pkg/apis/core/v1/conversion.go
    Convert_v1_NodeSpec_To_core_NodeSpec: podCIDR wins): the API server names it `spec.podCIDRs[0]`, kdt the field
    written. The same list is judged on update (ValidateNode runs there too, with no old values allowed)."""
    spec = r.doc.data.get("spec")
    if not isinstance(spec, dict):
        return
    single, listed = spec.get("podCIDR"), lst(spec.get("podCIDRs"))
    cidrs: list = [(("spec", "podCIDRs", i), v) for i, v in enumerate(listed)]
    if isinstance(single, str) and single and (not listed or listed[0] != single):
        cidrs = [(("spec", "podCIDR"), single)]
    if not cidrs:
        return
    strict = r.opts.strict_ip_cidr
    for where, value in cidrs:
        if isinstance(value, str):
            wrong = F.is_valid_cidr_for_legacy_field(value, strict)
            if where[-1] == "podCIDR":
                wrong = [f"{m} (the API server names it spec.podCIDRs[0], where it reads spec.podCIDR)" for m in wrong]
            r.each(RULE_NODE, where, value, wrong)
    if len(cidrs) > 1:
        values = [v for _, v in cidrs]
        families = [F.cidr_family(v) if isinstance(v, str) else None for v in values]
        for i, fam in enumerate(families):
            if fam is None:
                r.err(RULE_NODE, ("spec", "podCIDRs"), "Internal error: invalid PodCIDRs. failed to check with dual "
                                                       f"stack with error:invalid CIDR[{i}]: <nil> (invalid CIDR "
                                                       f"address: {values[i]})")
                break
        if None in families or set(families) != {4, 6} or len(values) > 2:
            r.err(RULE_NODE, ("spec", "podCIDRs"), f"Invalid value: {json.dumps(values, separators=(',', ':'))}: may "
                                                   "specify no more than one CIDR for each IP family")


NP_PROTOCOLS = ("TCP", "UDP", "SCTP")
NP_POLICY_TYPES = ("Ingress", "Egress")


def network_policy(r: Report) -> None:
    """ValidateNetworkPolicySpec (kubernetes v1.36.3 pkg/apis/networking/validation/validation.go), on create:
    the pod selector, each rule's ports (protocol, port number or name, endPort) and peers (exactly one kind of
    peer with an ipBlock; the ipBlock's cidr and except CIDRs of a legacy field, strict from 1.36, each except a
    strict subset of the cidr), policyTypes. On update the CIDRs the old policy held pass unchecked
    (ValidateNetworkPolicyUpdate's AllowCIDRsEvenIfInvalid)."""
    spec = r.doc.data.get("spec")
    if not isinstance(spec, dict):
        return
    path = ("spec",)
    M.selector(r, spec.get("podSelector"), path + ("podSelector",), RULE_NETWORK_POLICY)
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(lst(spec.get(direction))):
            if not isinstance(rule, dict):
                continue
            rp = path + (direction, i)
            for j, port in enumerate(lst(rule.get("ports"))):
                if isinstance(port, dict):
                    _np_port(r, port, rp + ("ports", j))
            for j, peer in enumerate(lst(rule.get(peers_key))):
                if isinstance(peer, dict):
                    _np_peer(r, peer, rp + (peers_key, j))
    types = lst(spec.get("policyTypes"))
    if len(types) > len(NP_POLICY_TYPES):
        r.err(RULE_NETWORK_POLICY, path + ("policyTypes",), f"Invalid value: {json.dumps(types, separators=(',', ':'))}: "
                                                            "may not specify more than two policyTypes")
        return
    for i, t in enumerate(types):
        if isinstance(t, str) and t not in NP_POLICY_TYPES:
            r.err(RULE_NETWORK_POLICY, path + ("policyTypes", i), f"Unsupported value: {quote(t)}: supported values: "
                                                                  f"{_opts(NP_POLICY_TYPES)}")


def _np_port(r: Report, port: dict, path: tuple) -> None:
    proto = port.get("protocol")
    if isinstance(proto, str) and proto not in NP_PROTOCOLS:
        r.err(RULE_NETWORK_POLICY, path + ("protocol",), f"Unsupported value: {quote(proto)}: supported values: "
                                                         f"{_opts(NP_PROTOCOLS)}")
    number, end = port.get("port"), as_int(port.get("endPort"))
    if as_int(number) is not None:
        r.each(RULE_NETWORK_POLICY, path + ("port",), number, F.is_valid_port_num(number))
        if end is not None:
            if end < number:
                r.err(RULE_NETWORK_POLICY, path + ("endPort",), f"Invalid value: {number}: must be greater than or "
                                                                "equal to `port`")
            r.each(RULE_NETWORK_POLICY, path + ("endPort",), end, F.is_valid_port_num(end))
    elif isinstance(number, str):
        if end is not None:
            r.err(RULE_NETWORK_POLICY, path + ("endPort",), f"Invalid value: {end}: may not be specified when `port` "
                                                            "is non-numeric")
        r.each(RULE_NETWORK_POLICY, path + ("port",), number, port_name(number))
    elif number is None and end is not None:
        r.err(RULE_NETWORK_POLICY, path + ("endPort",), f"Invalid value: {end}: may not be specified when `port` is "
                                                        "not specified")


def _np_peer(r: Report, peer: dict, path: tuple) -> None:
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if isinstance(peer.get(key), dict):
            count += 1
            M.selector(r, peer[key], path + (key,), RULE_NETWORK_POLICY)
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        count += 1
        _ip_block(r, block, path + ("ipBlock",))
    if count == 0:
        r.err(RULE_NETWORK_POLICY, path, "Required value: must specify a peer")
    elif count > 1 and isinstance(block, dict):
        r.err(RULE_NETWORK_POLICY, path, "Forbidden: may not specify both ipBlock and another peer")


def _ip_block(r: Report, block: dict, path: tuple) -> None:
    """ValidateIPBlock."""
    cidr = block.get("cidr")
    if not cidr:
        r.err(RULE_NETWORK_POLICY, path + ("cidr",), "Required value")
        return
    if not isinstance(cidr, str):
        return
    strict = r.opts.strict_ip_cidr
    r.each(RULE_NETWORK_POLICY, path + ("cidr",), cidr, F.is_valid_cidr_for_legacy_field(cidr, strict))
    outer = F.cidr_network(cidr)
    if outer is None:
        return
    for i, value in enumerate(lst(block.get("except"))):
        if not isinstance(value, str):
            continue
        r.each(RULE_NETWORK_POLICY, path + ("except", i), value, F.is_valid_cidr_for_legacy_field(value, strict))
        inner = F.cidr_network(value)
        if inner is None:
            continue
        if not F.cidr_contains(cidr, value) or outer[2] >= inner[2]:
            r.err(RULE_NETWORK_POLICY, path + ("except", i), f"Invalid value: {quote(value)}: must be a strict subset "
                                                             "of `cidr`")


def pvc_spec(r: Report, spec: dict, path: tuple) -> None:
    modes = spec.get("accessModes")
    if isinstance(modes, list) or modes is None:
        if not modes:
            r.err(RULE_PVC, path + ("accessModes",), "Required value: at least 1 access mode is required")
        for i, m in enumerate(lst(modes)):
            if isinstance(m, str) and m not in ACCESS_MODES:
                r.err(RULE_PVC, path + ("accessModes", i), f"Unsupported value: {quote(m)}: supported values: "
                                                           f"{_opts(ACCESS_MODES)}")
        if "ReadWriteOncePod" in lst(modes) and len(set(lst(modes))) > 1:
            r.err(RULE_PVC, path + ("accessModes",), "Forbidden: may not use ReadWriteOncePod with other access modes")
    requests = d(d(spec.get("resources")).get("requests"))
    if "storage" not in requests:
        r.err(RULE_PVC, path + ("resources", "requests"), "Required value: resources.requests.storage")
    else:
        v = P.quantity(r, requests["storage"], path + ("resources", "requests", "storage"))
        if v is not None and v <= 0:
            r.err(RULE_PVC, path + ("resources", "requests", "storage"),
                  f"Invalid value: {quote(requests['storage'])}: must be greater than zero")
    sc = spec.get("storageClassName")
    if isinstance(sc, str) and sc:
        wrong = dns1123_subdomain(sc)
        if wrong:
            r.each(RULE_PVC, path + ("storageClassName",), sc, wrong)
    vm = spec.get("volumeMode")
    if isinstance(vm, str) and vm not in VOLUME_MODES:
        r.err(RULE_PVC, path + ("volumeMode",), f"Unsupported value: {quote(vm)}: supported values: {_opts(VOLUME_MODES)}")
    if isinstance(spec.get("selector"), dict):
        M.selector(r, spec.get("selector"), path + ("selector",), RULE_PVC)


def pvc(r: Report) -> None:
    spec = r.doc.data.get("spec")
    if isinstance(spec, dict):
        pvc_spec(r, spec, ("spec",))


def _keys(r: Report, mapping, path: tuple) -> None:
    for k in d(mapping):
        if isinstance(k, str):
            wrong = config_key(k)
            if wrong:
                r.each(RULE_CONFIG, path + (k,), k, wrong)


def configmap(r: Report) -> None:
    data, binary = d(r.doc.data.get("data")), d(r.doc.data.get("binaryData"))
    _keys(r, data, ("data",))
    _keys(r, binary, ("binaryData",))
    for k in data:
        if k in binary:
            r.err(RULE_CONFIG, ("data", k), f"Invalid value: {quote(k)}: duplicate of key present in binaryData")
    size = sum(F.blen(v) for v in data.values() if isinstance(v, str))
    size += sum(_decoded_len(v) or 0 for v in binary.values())
    if size > MAX_SECRET_SIZE:
        r.err(RULE_CONFIG, (), f"Too long: may not be more than {MAX_SECRET_SIZE} bytes (the data holds {size})")


def _decoded_len(v) -> int | None:
    if not isinstance(v, str):
        return None
    try:
        return len(base64.b64decode(v, validate=True))
    except (binascii.Error, ValueError):
        return None


def secret(r: Report) -> None:
    data, string_data = d(r.doc.data.get("data")), d(r.doc.data.get("stringData"))
    _keys(r, data, ("data",))
    _keys(r, string_data, ("stringData",))
    size = 0
    for k, v in data.items():
        n = _decoded_len(v)
        if isinstance(v, str) and n is None:
            r.err(RULE_CONFIG, ("data", k), "Invalid value: the value is not base64 (use stringData for plain text)")
        size += n or 0
    merged = set(data) | set(string_data)
    size += sum(F.blen(v) for k, v in string_data.items() if isinstance(v, str))
    if size > MAX_SECRET_SIZE:
        r.err(RULE_CONFIG, ("data",), f"Too long: may not be more than {MAX_SECRET_SIZE} bytes (the data holds {size})")
    typ = r.doc.data.get("type")
    need = SECRET_TYPE_KEYS.get(typ) if isinstance(typ, str) else None
    if need:
        keys, how = need
        present = [k for k in keys if k in merged]
        if (how == "all" and len(present) < len(keys)) or (how == "any" and not present):
            missing = [k for k in keys if k not in merged]
            r.err(RULE_CONFIG, ("data",), f"Required value: a {typ} Secret needs the key(s) {', '.join(missing)}")
    if typ == "kubernetes.io/service-account-token" and \
            not d(d(r.doc.data.get("metadata")).get("annotations")).get("kubernetes.io/service-account.name"):
        r.err(RULE_CONFIG, ("metadata", "annotations"), "Required value: kubernetes.io/service-account.name")

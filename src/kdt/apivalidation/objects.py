"""Services, PersistentVolumeClaims, ConfigMaps and Secrets: the objects a training job sits beside.

kubernetes/kubernetes pkg/apis/core/validation/validation.go (as stored by the
search tool, Kubernetes 1.34/1.35): ValidateService and validateServicePort
(after the v1 defaults: type ClusterIP, sessionAffinity None, protocol TCP,
targetPort = port), ValidatePersistentVolumeClaimSpec, ValidateConfigMap,
ValidateSecret (MaxSecretSize 1 MiB for both, keys IsConfigMapKey, the keys
each Secret type requires).
"""
from __future__ import annotations

import base64
import binascii
from .. import formats as F
from . import meta as M
from . import pods as P
from .checker import Report, as_int, config_key, d, dns1123_label, dns1123_subdomain, label_key, lst, quote

RULE_SERVICE = "api-service"
RULE_PVC = "api-pvc"
RULE_CONFIG = "api-config"

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

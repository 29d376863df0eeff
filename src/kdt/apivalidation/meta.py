"""Object metadata: the name (or generateName) each kind allows, the namespace, labels and annotations.

kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidateObjectMeta and
k8s.io/apimachinery pkg/api/validation/objectmeta.go ValidateObjectMetaAccessor
(v0.35.0):
- a name, or a generateName prefix, is required ("name or generateName is
  required"); the API server generates the name before it validates
  (k8s.io/apiserver pkg/registry/rest/create.go BeforeCreate, names.SimpleNameGenerator:
  the prefix cut to 58 characters plus 5 random ones), so the generated name is
  what is judged, and the prefix itself with its trailing dash masked;
- each kind names its own rule (NAME_RULES below, the kind's Validate*Name in
  validation.go, apps/validation.go, batch/validation.go); every custom resource
  (Kubeflow, JobSet, Argo CD, the kinds of `--crd`) is a DNS-1123 subdomain
  (apiextensions-apiserver pkg/registry/customresource/validator.go Validate);
- a namespace is a DNS-1123 label (ValidateNamespaceName);
- label keys are qualified names and values label values (meta/v1/validation
  ValidateLabels); annotation keys are qualified names, lower-cased first, and
  all keys and values together are at most 256 KiB (ValidateAnnotations,
  TotalAnnotationSizeLimitB).
"""
from __future__ import annotations

from .. import formats as F
from .checker import (Report, d, dns1035_label, dns1123_label, dns1123_subdomain, label_key, label_value, lst,
                      quote)

RULE_NAME = "api-name"
RULE_LABELS = "api-labels"
RULE_ANNOTATIONS = "api-annotations"

SUBDOMAIN, LABEL, DNS1035, PATH_SEGMENT = "DNS-1123 subdomain", "DNS-1123 label", "DNS-1035 label", "path segment"
_NAME_FN = {SUBDOMAIN: F.name_is_dns_subdomain, LABEL: F.name_is_dns_label, DNS1035: F.name_is_dns1035_label,
            PATH_SEGMENT: F.name_is_path_segment}
_NAME_CHECK = {SUBDOMAIN: dns1123_subdomain, LABEL: dns1123_label, DNS1035: dns1035_label}   # names: memoized

# (API group, kind) -> the name rule of that kind's Validate function, and whether it is namespaced.
# Kinds not listed keep their names unjudged (a CRD's is <plural>.<group>, kdt.apivalidation.crd).
NAME_RULES: dict[tuple[str, str], tuple[str, bool]] = {
    ("", "Pod"): (SUBDOMAIN, True),                      # ValidatePodName
    ("", "PodTemplate"): (SUBDOMAIN, True),
    ("", "ReplicationController"): (SUBDOMAIN, True),    # ValidateReplicationControllerName
    ("", "Service"): (DNS1035, True),                    # ValidateServiceName
    ("", "ConfigMap"): (SUBDOMAIN, True),                # ValidateConfigMapName
    ("", "Secret"): (SUBDOMAIN, True),                   # ValidateSecretName
    ("", "ServiceAccount"): (SUBDOMAIN, True),           # ValidateServiceAccountName
    ("", "PersistentVolumeClaim"): (SUBDOMAIN, True),    # ValidatePersistentVolumeName
    ("", "LimitRange"): (SUBDOMAIN, True),
    ("", "ResourceQuota"): (SUBDOMAIN, True),
    ("", "Namespace"): (LABEL, False),                   # ValidateNamespaceName
    ("", "Node"): (SUBDOMAIN, False),                    # ValidateNodeName
    ("networking.k8s.io", "NetworkPolicy"): (SUBDOMAIN, True),   # networking/validation ValidateNetworkPolicyName
    # rbac/validation ValidateRBACName: content.IsPathSegmentName (no '.', '..', '/' or '%')
    ("rbac.authorization.k8s.io", "Role"): (PATH_SEGMENT, True),
    ("rbac.authorization.k8s.io", "RoleBinding"): (PATH_SEGMENT, True),
    ("rbac.authorization.k8s.io", "ClusterRole"): (PATH_SEGMENT, False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (PATH_SEGMENT, False),
    ("apps", "Deployment"): (SUBDOMAIN, True),
    ("apps", "ReplicaSet"): (SUBDOMAIN, True),
    ("apps", "DaemonSet"): (SUBDOMAIN, True),
    # apps/validation.go ValidateStatefulSetName: a DNS label since Kubernetes 1.27 (kubernetes#114172); before,
    # a subdomain the API server took while every pod it made was refused (pod hostnames are labels).
    ("apps", "StatefulSet"): (LABEL, True),
    ("batch", "Job"): (SUBDOMAIN, True),
    ("batch", "CronJob"): (SUBDOMAIN, True),
}
# k8s.io/apiserver pkg/storage/names/generate.go: maxNameLength 63, randomLength 5, and the alphabet
# of utilrand.String (k8s.io/apimachinery pkg/util/rand).
GENERATED_PREFIX_MAX = 63 - 5
GENERATED_SUFFIX = "bcdfg"
TOTAL_ANNOTATION_SIZE = 256 * (1 << 10)


def generated_name(meta: dict) -> str | None:
    """The name the API server judges: metadata.name, or the one it generates from generateName."""
    name = meta.get("name")
    if isinstance(name, str) and name:
        return name
    prefix = meta.get("generateName")
    if isinstance(prefix, str) and prefix:
        return prefix[:GENERATED_PREFIX_MAX] + GENERATED_SUFFIX
    return None


def check(r: Report, group: str, kind: str, custom: bool) -> None:
    """The metadata of a top-level object."""
    meta = r.doc.data.get("metadata", {})
    if not isinstance(meta, dict):
        return                                  # the schema's finding
    rule = NAME_RULES.get((group, kind))
    if rule is None and custom:
        rule = (SUBDOMAIN, None)
    if rule is not None:
        fmt, namespaced = rule
        fn = _NAME_FN[fmt]
        name = generated_name(meta)
        prefix = meta.get("generateName")
        if name is None:
            r.err(RULE_NAME, ("metadata",) if "metadata" in r.doc.data else (), "name or generateName is required")
        elif name is meta.get("name"):
            wrong = fn(name, False)
            if wrong:
                r.each(RULE_NAME, ("metadata", "name"), name, wrong)
            if isinstance(prefix, str) and prefix:
                wrong = fn(prefix, True)
                if wrong:
                    r.each(RULE_NAME, ("metadata", "generateName"), prefix, wrong)
        else:
            where = ("metadata", "generateName")
            wrong = fn(prefix, True)
            r.each(RULE_NAME, where, prefix, wrong)
            if not wrong:
                for m in fn(name, False):
                    r.err(RULE_NAME, where, f"Invalid value: {quote(name)} (the name generated from it): {m}")
        ns = meta.get("namespace")
        if namespaced is not False and isinstance(ns, str) and ns:
            wrong = dns1123_label(ns)
            if wrong:
                r.each(RULE_NAME, ("metadata", "namespace"), ns, wrong)
    labels(r, meta.get("labels"), ("metadata", "labels"))
    annotations(r, meta.get("annotations"), ("metadata", "annotations"))


def labels(r: Report, value, path: tuple) -> None:
    """ValidateLabels: a map of qualified-name keys to label values (labels, selectors, nodeSelector)."""
    for k, v in d(value).items():
        if not isinstance(k, str):
            continue
        wrong = label_key(k)
        if wrong:
            r.each(RULE_LABELS, path + (k,), k, wrong)
        if isinstance(v, str):
            wrong = label_value(v)
            if wrong:
                r.each(RULE_LABELS, path + (k,), v, wrong)


def annotations(r: Report, value, path: tuple) -> None:
    total = 0
    for k, v in d(value).items():
        if not isinstance(k, str):
            continue
        wrong = label_key(k.lower())
        if wrong:
            r.each(RULE_ANNOTATIONS, path + (k,), k, wrong)
        total += F.blen(k) + (F.blen(v) if isinstance(v, str) else 0)
    if total > TOTAL_ANNOTATION_SIZE:
        r.err(RULE_ANNOTATIONS, path, f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE} bytes "
                                      f"(keys and values hold {total})")


def template_meta(r: Report, template: dict, path: tuple) -> None:
    """A pod or job template's metadata: labels and annotations (ValidatePodTemplateSpec)."""
    meta = d(template.get("metadata"))
    labels(r, meta.get("labels"), path + ("metadata", "labels"))
    annotations(r, meta.get("annotations"), path + ("metadata", "annotations"))


def selector(r: Report, sel, path: tuple, rule: str) -> None:
    """ValidateLabelSelector (meta/v1/validation): match labels, and expressions with their operators."""
    sel = d(sel)
    labels(r, sel.get("matchLabels"), path + ("matchLabels",))
    for i, e in enumerate(lst(sel.get("matchExpressions"))):
        if not isinstance(e, dict):
            continue
        p = path + ("matchExpressions", i)
        op, values = e.get("operator"), e.get("values")
        if op in ("In", "NotIn"):
            if not lst(values):
                r.err(rule, p + ("values",), "Required value: must be specified when `operator` is 'In' or 'NotIn'")
        elif op in ("Exists", "DoesNotExist"):
            if lst(values):
                r.err(rule, p + ("values",), "Forbidden: may not be specified when `operator` is 'Exists' or "
                                             "'DoesNotExist'")
        elif isinstance(op, str):
            r.err(rule, p + ("operator",), f"Invalid value: {quote(op)}: not a valid selector operator")
        key = e.get("key")
        if isinstance(key, str):
            wrong = label_key(key)
            if wrong:
                r.each(RULE_LABELS, p + ("key",), key, wrong)
        for j, v in enumerate(lst(values)):
            if isinstance(v, str):
                wrong = label_value(v)
                if wrong:
                    r.each(RULE_LABELS, p + ("values", j), v, wrong)


def matches(sel: dict, have: dict) -> bool:
    """metav1.LabelSelectorAsSelector(sel).Matches(labels)."""
    for k, v in d(sel.get("matchLabels")).items():
        if have.get(k) != v:
            return False
    for e in lst(sel.get("matchExpressions")):
        e = d(e)
        key, op, values = e.get("key"), e.get("operator"), lst(e.get("values"))
        if op == "In" and (key not in have or have[key] not in values):
            return False
        if op == "NotIn" and key in have and have[key] in values:
            return False
        if op == "Exists" and key not in have:
            return False
        if op == "DoesNotExist" and key in have:
            return False
    return True

"""Roles and role bindings: what a training job's ServiceAccount is granted.

kubernetes v1.36.3 pkg/apis/rbac/validation/validation.go, after the v1 defaults
(pkg/apis/rbac/v1/defaults.go: an empty roleRef.apiGroup is rbac.authorization.k8s.io;
a subject's empty apiGroup is "" for a ServiceAccount and rbac.authorization.k8s.io
for a User or Group):
- ValidateRoleBinding / ValidateClusterRoleBinding: roleRef.apiGroup is
  rbac.authorization.k8s.io, roleRef.kind Role or ClusterRole (a ClusterRoleBinding:
  ClusterRole only), roleRef.name required and a path segment (ValidateRBACName:
  apimachinery pkg/api/validate/content/path.go IsPathSegmentName);
- ValidateRoleBindingSubject: a name; a ServiceAccount's name a DNS-1123
  subdomain (ValidateServiceAccountName), its apiGroup "", and, in a
  ClusterRoleBinding, a namespace (a RoleBinding's subject defaults to the
  binding's own); a User's or Group's apiGroup rbac.authorization.k8s.io; no other kind;
- ValidateRole / ValidateClusterRole, ValidatePolicyRule: verbs required; a rule with
  nonResourceURLs only in a ClusterRole and without apiGroups, resources or
  resourceNames; any other rule needs apiGroups and resources; a ClusterRole's
  aggregationRule needs a clusterRoleSelector, each a label selector.
The object names (path segments) are kdt.apivalidation.meta's.
"""
from __future__ import annotations

import json

from . import meta as M
from .checker import Report, d, dns1123_subdomain, lst, quote
from .. import formats as F

RULE_RBAC = "api-rbac"

GROUP = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT, USER, GROUP_KIND = "ServiceAccount", "User", "Group"
SUBJECT_KINDS = (SERVICE_ACCOUNT, USER, GROUP_KIND)


def _supported(value, allowed) -> str:
    return f"Unsupported value: {quote(value)}: supported values: " + ", ".join(quote(v) for v in allowed)


def _s(v) -> str:
    """A string field as the Go struct holds it (absent or another type: empty)."""
    return v if isinstance(v, str) else ""


def role_binding(r: Report, cluster: bool) -> None:
    data = r.doc.data
    ref = data.get("roleRef")
    if isinstance(ref, dict) or ref is None:
        ref = d(ref)
        group = _s(ref.get("apiGroup")) or GROUP            # SetDefaults_RoleBinding / _ClusterRoleBinding
        if group != GROUP:
            r.err(RULE_RBAC, ("roleRef", "apiGroup"), _supported(group, (GROUP,)))
        kinds = ("ClusterRole",) if cluster else ("Role", "ClusterRole")
        kind = _s(ref.get("kind"))
        if kind not in kinds:
            r.err(RULE_RBAC, ("roleRef", "kind"), _supported(kind, kinds))
        name = _s(ref.get("name"))
        if not name:
            r.err(RULE_RBAC, ("roleRef", "name"), "Required value")
        else:
            r.each(RULE_RBAC, ("roleRef", "name"), name, F.name_is_path_segment(name))
    for i, subject in enumerate(lst(data.get("subjects"))):
        if isinstance(subject, dict):
            _subject(r, subject, ("subjects", i), namespaced=not cluster)


def _subject(r: Report, s: dict, path: tuple, namespaced: bool) -> None:
    """ValidateRoleBindingSubject, after SetDefaults_Subject."""
    name, kind, group = _s(s.get("name")), _s(s.get("kind")), _s(s.get("apiGroup"))
    if not group and kind in (USER, GROUP_KIND):
        group = GROUP
    if not name:
        r.err(RULE_RBAC, path + ("name",), "Required value")
    if kind == SERVICE_ACCOUNT:
        if name:
            r.each(RULE_RBAC, path + ("name",), name, dns1123_subdomain(name))
        if group:
            r.err(RULE_RBAC, path + ("apiGroup",), _supported(group, ("",)))
        if not namespaced and not _s(s.get("namespace")):
            r.err(RULE_RBAC, path + ("namespace",), "Required value")
    elif kind in (USER, GROUP_KIND):
        if group != GROUP:
            r.err(RULE_RBAC, path + ("apiGroup",), _supported(group, (GROUP,)))
    else:
        r.err(RULE_RBAC, path + ("kind",), _supported(kind, SUBJECT_KINDS))


def role(r: Report, cluster: bool) -> None:
    data = r.doc.data
    for i, rule in enumerate(lst(data.get("rules"))):
        if isinstance(rule, dict):
            _policy_rule(r, rule, ("rules", i), namespaced=not cluster)
    if not cluster or not isinstance(data.get("aggregationRule"), dict):
        return
    selectors = lst(data["aggregationRule"].get("clusterRoleSelectors"))
    if not selectors:
        r.err(RULE_RBAC, ("aggregationRule", "clusterRoleSelectors"), "Required value: at least one "
                                                                      "clusterRoleSelector required if aggregationRule "
                                                                      "is non-nil")
    for i, sel in enumerate(selectors):
        M.selector(r, sel, ("aggregationRule", "clusterRoleSelectors", i), RULE_RBAC)


def _policy_rule(r: Report, rule: dict, path: tuple, namespaced: bool) -> None:
    """ValidatePolicyRule."""
    if not lst(rule.get("verbs")):
        r.err(RULE_RBAC, path + ("verbs",), "Required value: verbs must contain at least one value")
    urls = lst(rule.get("nonResourceURLs"))
    if urls:
        shown = json.dumps(urls, separators=(",", ":"))
        if namespaced:
            r.err(RULE_RBAC, path + ("nonResourceURLs",), f"Invalid value: {shown}: namespaced rules cannot apply to "
                                                          "non-resource URLs")
        if lst(rule.get("apiGroups")) or lst(rule.get("resources")) or lst(rule.get("resourceNames")):
            r.err(RULE_RBAC, path + ("nonResourceURLs",), f"Invalid value: {shown}: rules cannot apply to both "
                                                          "regular resources and non-resource URLs")
        return
    if not lst(rule.get("apiGroups")):
        r.err(RULE_RBAC, path + ("apiGroups",), "Required value: resource rules must supply at least one api group")
    if not lst(rule.get("resources")):
        r.err(RULE_RBAC, path + ("resources",), "Required value: resource rules must supply at least one resource")

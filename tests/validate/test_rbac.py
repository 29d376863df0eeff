"""Roles and role bindings as the API server validates them (kdt.apivalidation.rbac).

Reference: kubernetes v1.36.3 pkg/apis/rbac/validation/validation.go (ValidateRoleBinding,
ValidateClusterRoleBinding, ValidateRoleBindingSubject, ValidatePolicyRule, ValidateRBACName) after
pkg/apis/rbac/v1/defaults.go. The messages are those the API server gave for these objects (Kubernetes
v1.36.3, kdt.live, dry-run creates); kubeflow/trainer v2.3.0 manifests/base/rbac has the binding of the first case.
"""
from __future__ import annotations

from kdt.documents import load_stream
from kdt.validate import validate_documents


def api(text: str):
    docs, problems = load_stream(text, "t.yaml")
    assert not problems, problems
    return [(f.rule, f.path, f.message) for f in validate_documents(docs, kubernetes_version="1.36")]


BINDING = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: {kind}
metadata: {{name: trainer-controller, namespace: kubeflow-system}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: trainer-controller}}
subjects:
  - kind: ServiceAccount
    name: trainer-controller
"""


def test_a_cluster_role_binding_names_its_service_accounts_namespace():
    found = api(BINDING.format(kind="ClusterRoleBinding").replace(", namespace: kubeflow-system", ""))
    assert found == [("api-rbac", "subjects[0].namespace", "Required value")]
    fixed = BINDING.format(kind="ClusterRoleBinding").replace(", namespace: kubeflow-system", "")
    assert api(fixed + "    namespace: kubeflow-system\n") == []


def test_a_role_binding_takes_its_own_namespace():
    assert api(BINDING.format(kind="RoleBinding")) == []


def test_role_refs_and_subjects():
    text = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: many}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: "a/b"}
subjects:
  - {kind: ServiceAccount, name: Bad_Name, namespace: default, apiGroup: rbac.authorization.k8s.io}
  - {kind: User, name: bob}
  - {kind: Robot, name: r2}
  - {kind: Group, name: "", apiGroup: example.com}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ref, namespace: default}
roleRef: {apiGroup: example.com, kind: Deployment, name: ""}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "crb%bad"}
roleRef: {kind: ClusterRole, name: view}
"""
    found = api(text)
    assert [(p, m.split(":")[0]) for _, p, m in found] == [
        ("roleRef.kind", "Unsupported value"),
        ("roleRef.name", "Invalid value"),
        ("subjects[0].name", "Invalid value"),
        ("subjects[0].apiGroup", "Unsupported value"),
        ("subjects[2].kind", "Unsupported value"),
        ("subjects[3].name", "Required value"),
        ("subjects[3].apiGroup", "Unsupported value"),
        ("roleRef.apiGroup", "Unsupported value"),
        ("roleRef.kind", "Unsupported value"),
        ("roleRef.name", "Required value"),
        ("metadata.name", "Invalid value"),
    ]
    by = {(p, m) for _, p, m in found}
    assert ("roleRef.kind", 'Unsupported value: "Role": supported values: "ClusterRole"') in by
    assert ("roleRef.name", "Invalid value: \"a/b\": may not contain '/'") in by
    assert ("subjects[2].kind", 'Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"') in by
    assert ("subjects[3].apiGroup", 'Unsupported value: "example.com": supported values: '
                                    '"rbac.authorization.k8s.io"') in by
    assert ("metadata.name", "Invalid value: \"crb%bad\": may not contain '%'") in by


def test_policy_rules():
    text = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r, namespace: default}
rules:
  - {apiGroups: [""], resources: [pods], verbs: []}
  - {nonResourceURLs: [/healthz], verbs: [get]}
  - {verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cr}
rules:
  - {nonResourceURLs: [/healthz], resources: [pods], verbs: [get]}
  - {nonResourceURLs: [/metrics], verbs: [get]}
  - {apiGroups: [""], verbs: [get]}
aggregationRule: {clusterRoleSelectors: []}
"""
    assert [(p, m) for r, p, m in api(text) if r == "api-rbac"] == [
        ("rules[0].verbs", "Required value: verbs must contain at least one value"),
        ("rules[1].nonResourceURLs", 'Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs'),
        ("rules[2].apiGroups", "Required value: resource rules must supply at least one api group"),
        ("rules[2].resources", "Required value: resource rules must supply at least one resource"),
        ("rules[0].nonResourceURLs", 'Invalid value: ["/healthz"]: rules cannot apply to both regular resources and '
                                     "non-resource URLs"),
        ("rules[2].resources", "Required value: resource rules must supply at least one resource"),
        ("aggregationRule.clusterRoleSelectors", "Required value: at least one clusterRoleSelector required if "
                                                 "aggregationRule is non-nil"),
    ]

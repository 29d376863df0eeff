"""Which checks of this package each kind gets (the registry of kinds says what a document is), and
the rules they report (`RULES`); `check(doc, kubernetes_version, custom)` is what `kdt validate` calls."""
from __future__ import annotations

from .. import kinds as K
from ..documents import Document
from ..errors import MALFORMED
from ..findings import Finding
from . import crd as C
from . import meta as M
from . import objects as O
from . import pods as P
from . import rbac as RB
from . import required as RQ
from . import workloads as W
from .checker import Options, Report

RULES = {
    M.RULE_NAME: "An object's name, generateName or namespace is not what its kind allows (DNS-1123 subdomain or "
                 "label, DNS-1035 label; pkg/apis/core/validation ValidateObjectMeta and each kind's name function).",
    M.RULE_LABELS: "A label key or value (metadata, selectors, nodeSelector) is not a qualified name or a label value "
                   "(meta/v1/validation ValidateLabels).",
    M.RULE_ANNOTATIONS: "An annotation key is not a qualified name, or the annotations exceed 256 KiB "
                        "(ValidateAnnotations).",
    P.RULE_POD: "A pod-level field the API server refuses: dnsPolicy, hostname, subdomain, priorityClassName, "
                "serviceAccountName, tolerations, activeDeadlineSeconds, hostAliases and dnsConfig nameservers (IPs: "
                "strict from 1.36) (ValidatePodSpec).",
    P.RULE_RESTART: "A restartPolicy the kind does not allow: Always for controllers, OnFailure or Never for Jobs "
                    "(ValidatePodSpec, batch and apps validation).",
    P.RULE_CONTAINER: "A container name that is no DNS-1123 label or is used twice, a missing image, a policy value "
                      "the API does not know (validateContainers, validateContainerCommon).",
    P.RULE_PORT: "A port number outside 1-65535, a port name that is no IANA service name (15 characters, lower "
                 "case), a port name used twice, conflicting host ports (validateContainerPorts); a warning where "
                 "the API server warns: a port listed twice, overlapping or ambiguous host ports, a port name in "
                 "two containers, hostIP without hostPort (pkg/api/pod/warnings.go).",
    P.RULE_ENV: "An env or envFrom entry the API server refuses: its name, a valueFrom with no or several sources, a "
                "field path or key it does not know (ValidateEnv, ValidateEnvFrom).",
    P.RULE_VOLUME: "A volume or mount the API server refuses: names, duplicates, several sources, a mount naming no "
                   "volume, a repeated mountPath (ValidateVolumes, ValidateVolumeMounts).",
    P.RULE_PROBE: "A probe or lifecycle handler with no or several handler types, a bad port, negative thresholds "
                  "(validateProbe, validateHandler).",
    P.RULE_RESOURCES: "A resource name or amount the API server refuses: unknown names, negative or fractional "
                      "extended resources, requests above limits, GPUs requested without an equal limit "
                      "(validateResourceRequirements).",
    P.RULE_QUANTITY: "A value that is no resource.Quantity: `16GB`, `two`, `1 Gi` (pkg/api/resource/quantity.go "
                     "ParseQuantity); the API server refuses the whole object.",
    W.RULE_JOB: "A Job (or a Job template of a CronJob, JobSet or runtime) the API server refuses: completions and "
                "parallelism, completionMode, podFailurePolicy, successPolicy, selector (batch/validation).",
    W.RULE_WORKLOAD: "A StatefulSet, Deployment, ReplicaSet or DaemonSet the API server refuses: selector empty or "
                     "not matching the template, serviceName, update strategy (apps/validation).",
    O.RULE_SERVICE: "A Service the API server refuses: ports, port names, protocols, type, externalIPs and "
                    "load-balancer source ranges that are no IP or CIDR (strict from 1.36) (ValidateService).",
    O.RULE_PVC: "A PersistentVolumeClaim (or StatefulSet claim template) without access modes or storage request, "
                "or with unknown modes (ValidatePersistentVolumeClaimSpec).",
    C.RULE_CRD: "A CustomResourceDefinition the API server refuses: a type it does not know (`strign`), a name that "
                "is not <plural>.<group>, a schema that is not structural, not exactly one storage version, "
                "duplicate or invalid version names, scope, names, list-type and map-type extensions "
                "(apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go, "
                "pkg/apiserver/schema/validation.go).",
    O.RULE_CONFIG: "A ConfigMap or Secret key or size the API server refuses, or a Secret missing the keys of its "
                   "type (ValidateConfigMap, ValidateSecret).",
    O.RULE_NODE: "A Node the API server refuses: a podCIDRs entry that is no CIDR (from Kubernetes 1.36 also one with "
                 "bits beyond its prefix, leading zeros or an IPv4-mapped address: StrictIPCIDRValidation), more than "
                 "one CIDR of a family (ValidateNode).",
    O.RULE_NETWORK_POLICY: "A NetworkPolicy the API server refuses: selectors, ports, a peer with no or several kinds "
                           "with an ipBlock, an ipBlock cidr or except that is no CIDR (strict from 1.36) or no strict "
                           "subset, policyTypes (networking/validation ValidateNetworkPolicySpec).",
    RQ.RULE_SPEC: "A built-in object without the spec its kind's validation requires: the API server validates a "
                  "missing (or null) spec as the zero value and refuses it where that lacks required fields (a "
                  "PersistentVolumeClaim's access modes and storage request, a Pod's containers, a Deployment's "
                  "selector; kdt.apivalidation.required names each kind's Kubernetes source).",
    RB.RULE_RBAC: "A Role, ClusterRole or binding the API server refuses: a roleRef that is no Role or ClusterRole of "
                  "rbac.authorization.k8s.io, a subject of an unknown kind or apiGroup, a ServiceAccount subject of a "
                  "ClusterRoleBinding without a namespace, a policy rule without verbs, apiGroups or resources "
                  "(rbac/validation ValidateRoleBinding, ValidateRoleBindingSubject, ValidatePolicyRule).",
}


def _controller(kind: str, statefulset: bool = False):
    return lambda r: W.controller(r, kind, statefulset)


# The checks of the built-in kinds, by the registered kind (kdt.kinds) they apply to.
_BUILTIN = {
    K.POD: W.pod,
    K.SERVICE: O.service,
    K.lookup("", "PersistentVolumeClaim"): O.pvc,
    K.CONFIGMAP: O.configmap,
    K.SECRET: O.secret,
    K.lookup("batch", "Job"): W.job,
    K.lookup("batch", "CronJob"): W.cronjob,
    K.lookup("apps", "Deployment"): _controller("Deployment"),
    K.lookup("apps", "ReplicaSet"): _controller("ReplicaSet"),
    K.lookup("apps", "DaemonSet"): _controller("DaemonSet"),
    K.STATEFULSET: _controller("StatefulSet", statefulset=True),
    K.CRD: C.check,
    K.lookup("", "Node"): O.node,
    K.lookup("networking.k8s.io", "NetworkPolicy"): O.network_policy,
    K.lookup(RB.GROUP, "Role"): lambda r: RB.role(r, cluster=False),
    K.lookup(RB.GROUP, "ClusterRole"): lambda r: RB.role(r, cluster=True),
    K.lookup(RB.GROUP, "RoleBinding"): lambda r: RB.role_binding(r, cluster=False),
    K.lookup(RB.GROUP, "ClusterRoleBinding"): lambda r: RB.role_binding(r, cluster=True),
}
_OPERATOR_ROLES = (K.JOB, K.RUNTIME)
_options: dict[str, Options] = {}


def options(kubernetes_version: str) -> Options:
    got = _options.get(kubernetes_version)
    if got is None:
        got = _options[kubernetes_version] = Options.for_version(kubernetes_version)
    return got


def check(doc: Document, kubernetes_version: str, custom: bool = False) -> list[Finding]:
    """Every API-server validation error of one object whose kind has a schema.

    `custom`: the kind is a custom resource (Kubeflow, JobSet, Argo CD, a `--crd` kind), whose
    metadata the API server judges as a custom resource's."""
    data = doc.data
    if not isinstance(data, dict):
        return []
    av, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(av, str) or not isinstance(kind, str):
        return []
    group = av.partition("/")[0] if "/" in av else ""
    r = Report(doc, _options.get(kubernetes_version) or options(kubernetes_version))
    try:
        M.check(r, group, kind, custom)
        if not custom and RQ.check(r, group, kind):
            return r.findings()
        k = K.of(doc)
        if k is not None:
            builtin = _BUILTIN.get(k)
            if builtin is not None:
                builtin(r)
            elif k.role in _OPERATOR_ROLES:
                W.operator_templates(r, k, runtime=k.role == K.RUNTIME)
                for path, c in k.extra_containers(doc):
                    W.extra_container(r, tuple(path), c)
    except MALFORMED:
        # A shape no check expected (the schema findings say what is wrong): what was found so far stands.
        pass
    return r.findings() if r else []

"""Built-in Kubernetes kinds: the ones that hold pod templates, and the ones other objects read.

Pod template paths are the API's own (k8s.io/api: apps/v1 DeploymentSpec, ReplicaSetSpec,
DaemonSetSpec; batch/v1 JobSpec, CronJobSpec.jobTemplate; core/v1 ReplicationControllerSpec,
Pod.spec). The StatefulSet, a training path of its own, is `kdt.operators.statefulset.kind`.
"""
from __future__ import annotations

from typing import Iterator

from ..operators.kueue import expand as XK
from ..fields import as_dict, as_int
from ..operators.framework.kind import PODS, Kind, PodTemplate


class _Templated(Kind):
    """A built-in kind with one pod template at `spec.template` (or a longer path)."""
    role = PODS
    template_path: tuple = ("spec", "template")
    counts_replicas = True

    def pod_templates(self, doc) -> Iterator[PodTemplate]:
        tmpl = doc.data
        for key in self.template_path:
            tmpl = as_dict(as_dict(tmpl).get(key))
        spec = as_dict(doc.data.get("spec")) if isinstance(doc.data, dict) else {}
        replicas = as_int(spec.get("replicas", 1)) if self.counts_replicas else None
        yield PodTemplate(doc, self.template_path + ("spec",), as_dict(tmpl.get("spec")), self.kind, replicas,
                          self.template_path + ("metadata",))


class Deployment(_Templated):
    group, kind, versions = "apps", "Deployment", ("v1",)

    # kdt run: a Deployment beside a job is a server the job needs (the torchft Lighthouse of
    # components/torchft); it is not expanded by the merge preview, so `kdt run` asks for its pods here.
    def run_pods(self, doc) -> list:
        """`replicas` pods named `<deployment>-<k>` (a cluster adds a ReplicaSet hash and a random suffix),
        labelled as the template says."""
        from ..operators.framework.pods import LocalPod, pod_containers
        spec = as_dict(doc.data.get("spec")) if isinstance(doc.data, dict) else {}
        tmpl = as_dict(spec.get("template"))
        meta = as_dict(tmpl.get("metadata"))
        out = []
        for k in range(as_int(spec.get("replicas", 1)) or 0):
            pod_meta = {"name": f"{doc.name}-{k}", "labels": dict(as_dict(meta.get("labels"))),
                        "annotations": dict(as_dict(meta.get("annotations")))}
            if doc.namespace:
                pod_meta["namespace"] = doc.namespace
            pod = LocalPod(pod_meta["name"], {"metadata": pod_meta, "spec": dict(as_dict(tmpl.get("spec")))},
                           self, doc.name, doc.name, k, doc)
            out.append(pod_containers(pod, ("spec", "template", "spec"), doc))
        return out

    def controller(self, pods, ctx):
        from ..operators.framework import controller as C
        return C.DeploymentController(pods)


class ReplicaSet(_Templated):
    group, kind, versions = "apps", "ReplicaSet", ("v1",)


class DaemonSet(_Templated):
    group, kind, versions = "apps", "DaemonSet", ("v1",)
    counts_replicas = False          # one pod per node


class Job(_Templated):
    group, kind, versions = "batch", "Job", ("v1",)
    rest = True
    ends = ("Complete", "Failed")      # k8s.io/api v0.36.3 batch/v1 types.go JobComplete, JobFailed

    def kueue_workload(self, doc, ctx, expanded=None):
        # Kueue's batch/job integration (jobs/job/job_controller.go PodSets)
        return XK.workload(self.kind, doc.data, XK.job_pod_sets(doc.data))


class ReplicationController(_Templated):
    group, kind, versions = "", "ReplicationController", ("v1",)


class CronJob(_Templated):
    group, kind, versions = "batch", "CronJob", ("v1",)
    template_path = ("spec", "jobTemplate", "spec", "template")

    def pod_templates(self, doc) -> Iterator[PodTemplate]:
        for pt in super().pod_templates(doc):
            pt.replicas = 1
            yield pt


class Pod(Kind):
    group, kind, versions = "", "Pod", ("v1",)
    rest = True
    role = PODS

    def pod_templates(self, doc) -> Iterator[PodTemplate]:
        yield PodTemplate(doc, ("spec",), as_dict(doc.data.get("spec")) if isinstance(doc.data, dict) else {},
                          self.kind, 1, ("metadata",))


class Service(Kind):
    group, kind, versions = "", "Service", ("v1",)
    rest = True
    tier = 2


class Secret(Kind):
    group, kind, versions = "", "Secret", ("v1",)
    tier = 1


class ConfigMap(Kind):
    group, kind, versions = "", "ConfigMap", ("v1",)
    rest = True
    tier = 1


class Namespace(Kind):
    group, kind, versions = "", "Namespace", ("v1",)
    namespaced = False
    tier = 0
    admission_reads = True     # Kubernetes v1.36.3 plugin/pkg/admission/namespace/lifecycle


class PersistentVolumeClaim(Kind):
    group, kind, versions = "", "PersistentVolumeClaim", ("v1",)
    tier = 1
    rest = True     # JobSet's volumeClaimPolicies create claims: the judge lists them (v0.12.0 volume_claim_policy.go)


class _Namespaced(Kind):
    """A built-in kind with nothing to do but be known (the API server may validate it beyond its schema,
    kdt.apivalidation); `attrs`: what the live path reads of it (kdt.operators.framework.kind.Kind)."""

    def __init__(self, group: str, kind: str, version: str = "v1", **attrs):
        self.group, self.kind, self.versions = group, kind, (version,)
        for k, v in attrs.items():
            setattr(self, k, v)


class _ClusterScoped(_Namespaced):
    """A built-in kind with no namespace (its API's scope: Cluster)."""
    namespaced = False


POD = Pod()
KINDS = (POD, Deployment(), ReplicaSet(), DaemonSet(), Job(), ReplicationController(), CronJob(),
         Service(), Secret(), ConfigMap(), Namespace(), PersistentVolumeClaim(),
         _ClusterScoped("apiextensions.k8s.io", "CustomResourceDefinition", tier=0, infrastructure=True),
         _ClusterScoped("rbac.authorization.k8s.io", "ClusterRole"),
         _ClusterScoped("rbac.authorization.k8s.io", "ClusterRoleBinding"),
         _Namespaced("rbac.authorization.k8s.io", "Role", tier=1),
         _Namespaced("rbac.authorization.k8s.io", "RoleBinding", tier=1),
         _Namespaced("networking.k8s.io", "NetworkPolicy"),
         _ClusterScoped("", "Node"),
         # Kubernetes v1.36.3 plugin/pkg/admission: priority/admission.go resolvePriorityClass ("no PriorityClass
         # with name"), serviceaccount/admission.go ("error looking up service account"), runtimeclass/admission.go
         # ("RuntimeClass ... not found"), limitranger and resourcequota (a pod's defaults and limits)
         _ClusterScoped("scheduling.k8s.io", "PriorityClass", admission_reads=True),
         _Namespaced("", "ServiceAccount", tier=1, admission_reads=True),
         _Namespaced("", "LimitRange", tier=1, admission_reads=True),
         _Namespaced("", "ResourceQuota", tier=1, admission_reads=True),
         _ClusterScoped("node.k8s.io", "RuntimeClass", admission_reads=True),
         _ClusterScoped("storage.k8s.io", "StorageClass"),
         _ClusterScoped("", "PersistentVolume"),
         # cluster-scoped infrastructure: judged by a dry run only. Applied for real, each would change what every
         # later request meets: a CRD replaces the schema of its kind (the operators' own); a webhook configuration
         # or an admission policy runs on every matching request (one naming a Service that does not run here
         # refuses them all: failurePolicy Fail); an APIService routes an API group to a Service (discovery fails
         # for every client while it is unavailable); a FlowSchema or PriorityLevelConfiguration throttles the API
         # server
         *(_ClusterScoped("admissionregistration.k8s.io", k, infrastructure=True)
           for k in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
                     "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")),
         _ClusterScoped("apiregistration.k8s.io", "APIService", infrastructure=True),
         _ClusterScoped("flowcontrol.apiserver.k8s.io", "FlowSchema", infrastructure=True),
         _ClusterScoped("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", infrastructure=True))

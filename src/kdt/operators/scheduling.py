"""Gang scheduling and queueing: how each path spells them (facts the scale rules read).

- Kueue reads the queue of a job from the job object's own `metadata.labels`
  (`kueue.x-k8s.io/queue-name`): PyTorchJob (integration kubeflow.org/pytorchjob),
  TrainJob (trainer.kubeflow.org/trainjob), JobSet, StatefulSet. On a pod
  template the label is read by Kueue's plain-pod integration instead, which
  makes each pod a workload of its own: the job is no longer admitted as one.
  (kueue site/content/en/docs/concepts/workload.md and tasks/run/*.)
- Training Operator v1: `spec.runPolicy.schedulingPolicy` (minAvailable, queue,
  priorityClass, scheduleTimeoutSeconds) makes a PodGroup for Volcano or the
  scheduler-plugins coscheduling; minAvailable defaults to the sum of the
  replicas (pkg/controller.v1/common/scheduling.go calcPGMinResources and
  the PodGroup's MinMember).
- Trainer v2: a runtime's `spec.podGroupPolicy` (coscheduling, volcano) makes
  the PodGroup of every TrainJob that uses it, MinMember = all pods
  (pkg/runtime/framework/plugins/coscheduling).
"""
from __future__ import annotations

from .jobset.facts import LABEL_JOBSET_NAME as JOBSET_NAME_LABEL      # noqa: F401  (the labels JobSet puts on
from .jobset.facts import LABEL_REPLICATED_JOB as JOBSET_RJOB_LABEL   # noqa: F401   every pod; read by the rules)

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

# The schedulers' API groups and kinds (their official CRDs: kubernetes-sigs/kueue v0.19.2
# config/components/crd/bases, volcano-sh/volcano v1.15.1 config/crd/volcano/bases,
# kubernetes-sigs/scheduler-plugins v0.34.7 config/crd/bases; kdt.schemas.crd_sets commits them).
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")      # v1beta2 stored, v1beta1 served and deprecated
# kind -> namespaced (the CRD's scope)
KUEUE_KINDS = {"AdmissionCheck": False, "ClusterQueue": False, "Cohort": False, "LocalQueue": True,
               "MultiKueueCluster": False, "MultiKueueConfig": False, "ProvisioningRequestConfig": False,
               "ResourceFlavor": False, "Topology": False, "WorkloadPriorityClass": False, "Workload": True}
VOLCANO_SCHEDULING_GROUP = "scheduling.volcano.sh"     # PodGroup (namespaced), Queue (cluster), v1beta1
VOLCANO_BATCH_GROUP = "batch.volcano.sh"               # Job (namespaced), v1alpha1
# volcano pkg/apis batch/v1alpha1 job.go TaskSpec: each task is `replicas` pods of its `template`.
VOLCANO_JOB_TASKS = "tasks"
COSCHEDULING_GROUP = "scheduling.x-k8s.io"             # scheduler-plugins PodGroup, ElasticQuota (namespaced), v1alpha1


def queued(labels) -> bool:
    """Whether a job's own labels queue it in Kueue. Kueue's pod integration leaves alone every pod whose owner
    chain reaches such a job of an enabled integration (kubernetes-sigs/kueue v0.19.2
    pkg/controller/jobs/pod/pod_webhook.go Default -> jobframework.FindAncestorJobManagedByKueue in
    pkg/controller/jobframework/reconciler.go): the label on a queued job's pod template does nothing."""
    return isinstance(labels, dict) and QUEUE_LABEL in labels


def gang_scheduled(doc) -> bool:
    """Whether the workload is admitted all-or-nothing by a gang scheduler (not a queue alone)."""
    if doc.kind == "PyTorchJob":
        return isinstance(doc.get(("spec", "runPolicy", "schedulingPolicy")), dict)
    if doc.kind in ("ClusterTrainingRuntime", "TrainingRuntime"):
        return isinstance(doc.get(("spec", "podGroupPolicy")), dict)
    return False

# PodGroups, as the operators write them (the key names are the schedulers' own API constants, which the
# operators import: sigs.k8s.io/scheduler-plugins apis/scheduling/v1alpha1 PodGroupLabel; volcano.sh/apis
# pkg/apis/scheduling/v1beta1 KubeGroupNameAnnotationKey, QueueNameAnnotationKey, and batch/v1alpha1
# TaskSpecKey). Trainer: plugins/coscheduling/coscheduling.go and plugins/volcano/volcano.go (v2.1.0, v2.3.0);
# Training Operator: pkg/controller.v1/control/podgroup_control.go DecoratePodTemplateSpec (v1.9.4).
COSCHEDULING_API = "scheduling.x-k8s.io/v1alpha1"
COSCHEDULING_POD_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_API = "scheduling.volcano.sh/v1beta1"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
VOLCANO_TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
VOLCANO_SCHEDULER_NAME = "volcano"

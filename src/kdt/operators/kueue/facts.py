"""Kueue: what it reads from a job and from its queue objects, and how it admits a workload.

Every fact is read from kubernetes-sigs/kueue at v0.19.2 (the release of kdt.versions.KUEUE and of the
CRDs in ../shared/corpus/scheduling/kueue-v0.19.2), file and function named beside it. The Workload a job
becomes is built from these facts by kdt.operators.kueue.expand; the lint rules kueue-* join a job to the queue
objects of a run with them.

Feature gates and API versions the shipped objects need (pkg/features/kube_features.go
defaultVersionedFeatureGates; apis/kueue/):

| what | gate | since |
|---|---|---|
| `kueue.x-k8s.io/v1beta2` (the storage version; v1beta1 still served, deprecated) | none | v0.15 |
| a `Cohort` object (quota and borrowing shared by ClusterQueues) | HierarchicalCohorts, GA (locked on) | beta v0.11, GA v0.17 |
| `Topology` and a ResourceFlavor's `topologyName` (topology-aware scheduling) | TopologyAwareScheduling, beta, on by default | alpha v0.9, beta v0.14 |
| the podset topology annotations (required, preferred, unconstrained) | TopologyAwareScheduling | v0.14 |
| `kueue.x-k8s.io/podset-slice-required-topology-constraints` | TASMultiLayerTopology, beta, on by default | alpha v0.17, beta v0.19 |
| `WorkloadPriorityClass` and the job label `kueue.x-k8s.io/priority-class` | none | v0.5 |
| flavor fungibility (`flavorFungibility`: try the next flavor) | FlavorFungibility, beta, on by default | v0.5 |
"""
from __future__ import annotations

import math
from fractions import Fraction

from ..scheduling import QUEUE_LABEL  # noqa: F401  (the queue label: one fact, kept in kdt.operators.scheduling)

RELEASE = "v0.19.2"
GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"      # the storage version (apis/kueue/v1beta2, +kubebuilder:storageversion)

# The job's labels (pkg/controller/constants/constants.go): the WorkloadPriorityClass of the job's
# Workload (wins over the pods' PriorityClass: jobframework/reconciler.go ExtractPriority).
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
# The Workload's spec.priorityClassRef (group, kind): the label's WorkloadPriorityClass, else the pods'
# PriorityClass (apis/kueue/v1beta2/workload_types.go NewWorkloadPriorityClassRef, NewPodPriorityClassRef).
WORKLOAD_PRIORITY_CLASS = (GROUP, "WorkloadPriorityClass")
POD_PRIORITY_CLASS = ("scheduling.k8s.io", "PriorityClass")

# Pod template annotations of topology-aware scheduling (apis/kueue/v1beta2/topology_types.go), read per
# pod set by jobframework/tas.go NewPodSetTopologyRequest(...).Build().
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
PODSET_GROUP = "kueue.x-k8s.io/podset-group-name"

# MultiKueue (apis/kueue/v1beta2/multikueue_types.go MultiKueueControllerName): a job whose managedBy is this
# is left by its own controller to Kueue, which runs it on a worker cluster through an AdmissionCheck of this
# controllerName (admissioncheck_types.go ControllerName, Parameters) whose parameters name a MultiKueueConfig
# (multikueue_types.go MultiKueueConfigSpec.Clusters) listing MultiKueueClusters; the check is inactive
# ("NoUsableClusters") when none of them exists (pkg/controller/admissionchecks/multikueue/admissioncheck.go).
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
# One of these three at most (jobframework/tas_validation.go ValidateTASPodSetRequest: "must not contain
# more than one topology annotation"); Build() reads them in this order.
TOPOLOGY_MODES = (REQUIRED_TOPOLOGY, PREFERRED_TOPOLOGY, UNCONSTRAINED_TOPOLOGY)
HOSTNAME_LABEL = "kubernetes.io/hostname"   # a Topology may use it at its lowest level only (the CRD's CEL rule)

# Pod sets (apis/kueue/v1beta2/workload_types.go): a name is lowercased (NewPodSetReference); a
# Workload has at most 8 of them (PodSets MaxItems).
DEFAULT_POD_SET = "main"                    # kueue.DefaultPodSetName: the one pod set of a pod group
MAX_POD_SETS = 8
# A batch Job's pod set `main` may be admitted with fewer pods, down to this annotation's count
# (jobs/job/job_controller.go JobMinParallelismAnnotation, minPodsCount; gate PartialAdmission, beta, on).
JOB_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
# The order of a PyTorchJob's pod sets (jobs/kubeflow/jobs/pytorchjob/pytorchjob_controller.go
# OrderedReplicaTypes); a replica type the job does not have is left out (kubeflowjob_controller.go).
PYTORCHJOB_ORDER = ("Master", "Worker")

# The Workload's name: the owner's kind, lowercased, and name, cut to 253 - 6 characters, then "-" and 5 hex
# digits of a hash of the owner's kind, group, name and UID (jobframework/workload_names.go
# GetWorkloadNameForOwnerWithGVK; 63 with the ShortWorkloadNames gate, off by default).
WORKLOAD_NAME_MAX = 253
WORKLOAD_HASH_LENGTH = 5

# Quota (apis/kueue/v1beta2/clusterqueue_types.go): the ClusterQueue's cohort field is `cohortName` in
# v1beta2 and `cohort` in v1beta1; a Cohort names its parent in `parentName`.
COHORT_FIELD = {"v1beta2": "cohortName", "v1beta1": "cohort"}
# A ClusterQueue with no namespaceSelector admits no namespace (clusterqueue_types.go: "Defaults to null
# which is a nothing selector"); `{}` admits every namespace.

# Flavor matching (pkg/scheduler/flavorassigner/flavorassigner.go checkFlavorForPodSets): the flavor's
# nodeTaints of these effects must be tolerated by the pod's tolerations plus the flavor's own.
TAINT_EFFECTS = ("NoSchedule", "NoExecute")

# Integrations (pkg/controller/jobs/*: the framework names of Kueue's configuration
# `integrations.frameworks`) that admit each kind this project ships as one Workload.
FRAMEWORKS = {"PyTorchJob": "kubeflow.org/pytorchjob", "TrainJob": "trainer.kubeflow.org/trainjob",
              "JobSet": "jobset.x-k8s.io/jobset", "StatefulSet": "statefulset (with pod)"}


def pod_set_name(name: str) -> str:
    """NewPodSetReference: a replica type or replicated job name as a pod set's name."""
    return str(name).lower()


def resource_value(resource: str, amount: int | Fraction) -> int:
    """pkg/resources/requests.go ResourceValue: CPU in thousandths of a core, anything else in whole units,
    both rounded up (Quantity.MilliValue, Quantity.Value)."""
    return math.ceil(amount * 1000) if resource == "cpu" else math.ceil(amount)


def show_value(resource: str, value: int) -> str:
    """A ResourceValue as a quantity a reader knows: `500m` or `8` CPU, `32Gi` memory, `512` GPUs."""
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    for suffix, size in (("Ti", 2 ** 40), ("Gi", 2 ** 30), ("Mi", 2 ** 20), ("Ki", 2 ** 10)):
        if value >= size and value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)


def workload_name_prefix(kind: str, name: str) -> str:
    """The Workload's name before its hash (GenerateWorkloadNamePrefix), with the trailing dash."""
    return f"{kind.lower()}-{name}"[: WORKLOAD_NAME_MAX - 1 - WORKLOAD_HASH_LENGTH] + "-"

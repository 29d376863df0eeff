"""Kubeflow Training Operator v1: the PyTorchJob (`kubeflow.org/v1`).

Facts read from kubeflow/training-operator at v1.8.1 and v1.9.4 (the releases
the project targets; see kdt.versions.TRAINING_OPERATOR). Paths are relative to
that repository.
"""
from __future__ import annotations

from ...formats import name_is_dns1035_label
from ...fields import as_int
from ..admission import Rejection

GROUP = "kubeflow.org"
API_VERSION = "kubeflow.org/v1"
KIND = "PyTorchJob"

# Every kind of the Training Operator v1 (v1.8.1, v1.9.4): kind -> (the field of its spec that maps
# replica types to replica specs, the controller's name that labels its pods operator-name).
# pkg/apis/kubeflow.org/v1/*_types.go (`json:"...ReplicaSpecs"`) and pkg/controller.v1/*/*_controller.go
# (controllerName).
V1_KINDS = {
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorchjob-controller"),
    "TFJob": ("tfReplicaSpecs", "tfjob-controller"),
    "MPIJob": ("mpiReplicaSpecs", "mpijob-controller"),
    "PaddleJob": ("paddleReplicaSpecs", "paddlejob-controller"),
    "XGBoostJob": ("xgbReplicaSpecs", "xgboostjob-controller"),
    "JAXJob": ("jaxReplicaSpecs", "jaxjob-controller"),
}
REPLICA_SPECS = V1_KINDS[KIND][0]

# API versions of these kinds that another operator serves, not the Training Operator (whose CRDs serve v1
# only, manifests/base/crds at v1.8.1 and v1.9.4): the MPI Operator's MPIJob, kubeflow.org/v1alpha1,
# v1alpha2 and v2beta1 (kubeflow/mpi-operator pkg/apis/kubeflow/<version>/types.go; its v2beta1 replaces
# the Training Operator's MPIJob, which is disabled to install it).
SERVED_ELSEWHERE = {
    ("MPIJob", f"{GROUP}/{v}"): "served by the MPI Operator (kubeflow/mpi-operator), not the Training Operator"
    for v in ("v1alpha1", "v1alpha2", "v2beta1")
}

# pkg/apis/kubeflow.org/v1/pytorch_types.go (v1.8.1, v1.9.4): PytorchJobDefaultContainerName.
# The webhook requires a container of this name in every replica, and the operator
# injects its env and port into it only.
CONTAINER_NAME = "pytorch"

# pkg/apis/kubeflow.org/v1/pytorch_types.go: PytorchJobDefaultPortName / PytorchJobDefaultPort.
# The defaulter adds this port to the `pytorch` container when no port has this
# name; MASTER_PORT (and the elastic rendezvous port) is read from the port of this
# name only (pkg/controller.v1/pytorch/envvar.go getPortFromPyTorchJob).
PORT_NAME = "pytorchjob-port"
DEFAULT_PORT = 23456

# pkg/apis/kubeflow.org/v1/pytorch_types.go: PyTorchJobReplicaTypeMaster/Worker;
# pkg/webhooks/pytorch/pytorchjob_webhook.go validPyTorchReplicaSpecs: any other key is NotSupported.
MASTER = "Master"
WORKER = "Worker"
REPLICA_TYPES = (MASTER, WORKER)

# pkg/apis/kubeflow.org/v1/common_types.go: RestartPolicy (Always, OnFailure, Never, ExitCode);
# pkg/apis/kubeflow.org/v1/pytorch_types.go: PytorchJobDefaultRestartPolicy = OnFailure.
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
DEFAULT_RESTART_POLICY = "OnFailure"
# pkg/controller.v1/common/pod.go createNewPod -> pkg/core/pod.go SetRestartPolicy (with a
# warning event "Restart policy in pod template will be overwritten"): the pod template's restartPolicy is
# overwritten by the replica's (ExitCode becomes Never on the pod), so a value
# written inside the template never takes effect.
TEMPLATE_RESTART_POLICY_OVERWRITTEN = True

# pkg/apis/kubeflow.org/v1/common_types.go: CleanPodPolicy (All, Running, None).
CLEAN_POD_POLICIES = ("All", "Running", "None")

# pkg/apis/kubeflow.org/v1/pytorch_types.go: RDZVBackend (c10d, etcd, etcd-v2).
RDZV_BACKENDS = ("c10d", "etcd", "etcd-v2")

# pkg/apis/kubeflow.org/v1/pytorch_types.go: NprocPerNode "auto, cpu, gpu, int";
# ElasticPolicy.NProcPerNode "Deprecated: This API is deprecated in v1.7+".
NPROC_PER_NODE_WORDS = ("auto", "cpu", "gpu")

# pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchJob (v1.9.4; v1.8.1 has no name or managedBy
# check), what the validating webhook rejects (R) or warns about (W), each with the lint rule that reports
# it. The webhook sees the object as submitted: the defaults (pytorch_defaults.go) are applied later by the
# controller (pytorchjob_controller.go Reconcile: r.Scheme.Default), so an unset Master `replicas` is refused.
WEBHOOK = {
    "name-dns1035": ("R", "metadata.name must be a DNS-1035 label", "pytorchjob-name"),
    "managed-by": ("R", "spec.runPolicy.managedBy other than the operator or MultiKueue "
                        "(pkg/common/util/webhooks.go ValidateRunPolicy)", "pytorchjob-managed-by"),
    "replica-specs-required": ("R", "spec.pytorchReplicaSpecs must be set", "pytorchjob-replica-types"),
    "replica-type": ("R", "keys of pytorchReplicaSpecs other than Master/Worker (case-sensitive)",
                     "pytorchjob-replica-types"),
    "containers-required": ("R", "a replica without containers", "pytorchjob-container"),
    "image-required": ("R", "a container without image", "pytorchjob-container"),
    "default-container": ("R", "a replica without a container named `pytorch`", "pytorchjob-container"),
    "master-replicas": ("R", "Master replicas unset or not 1", "pytorchjob-master-replicas"),
    "worker-replicas": ("R", "Worker replicas < 1", "pytorchjob-worker-replicas"),
    "elastic-worker": ("R", "elasticPolicy without a Worker replica spec", "pytorchjob-elastic-worker"),
    "elastic-nproc-deprecated": ("W", "elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode",
                                 "pytorchjob-nproc-deprecated"),
    "elastic-nproc-conflict": ("R", "elasticPolicy.nProcPerNode together with spec.nprocPerNode",
                               "pytorchjob-nproc-conflict"),
}
# pkg/apis/kubeflow.org/v1/common_types.go KubeflowJobsController, MultiKueueController: the managedBy values
# the webhook accepts; pkg/controller.v1/common/job.go ManagedByExternalController: any value but the first
# leaves the job to that controller (the operator creates nothing).
MANAGED_BY_OPERATOR = "kubeflow.org/training-operator"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGED_BY = (MANAGED_BY_OPERATOR, MANAGED_BY_MULTIKUEUE)


def webhook_rejections(data) -> list:
    """What validatePyTorchJob (v1.9.4) says of a PyTorchJob on create: kdt.operators.admission.Rejection each."""
    def rej(key: str, path: tuple, message: str) -> Rejection:
        level, _, rule = WEBHOOK[key]
        return Rejection(rule, path, message, level == "W")

    out: list = []
    if not isinstance(data, dict):
        return out
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    name = meta.get("name")
    if isinstance(name, str) and name:
        # apimachinery pkg/api/validation NameIsDNS1035Label(name, false): kdt.apivalidation's port of it
        errs = name_is_dns1035_label(name)
        if errs:
            out.append(rej("name-dns1035", ("metadata", "name"),
                           f"metadata.name {name!r} is not a DNS-1035 label: {'; '.join(errs)} (the webhook rejects "
                           "the job: its Services are named after it)"))
    spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
    run = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), dict) else {}
    managed = run.get("managedBy")
    if managed is not None and managed not in MANAGED_BY:
        out.append(rej("managed-by", ("spec", "runPolicy", "managedBy"),
                       f"runPolicy.managedBy {managed!r} is not supported: use {' or '.join(MANAGED_BY)}"))
    rspecs = spec.get(REPLICA_SPECS)
    elastic = spec.get("elasticPolicy")
    if isinstance(elastic, dict):
        if not isinstance(rspecs, dict) or WORKER not in rspecs:
            out.append(rej("elastic-worker", ("spec", REPLICA_SPECS, WORKER),
                           "elasticPolicy needs a Worker replica spec (the webhook: must be configured if elastic "
                           "policy is used)"))
        if elastic.get("nProcPerNode") is not None:
            out.append(rej("elastic-nproc-deprecated", ("spec", "elasticPolicy", "nProcPerNode"),
                           "elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode"))
            if spec.get("nprocPerNode") is not None:
                out.append(rej("elastic-nproc-conflict", ("spec", "elasticPolicy", "nProcPerNode"),
                               "elasticPolicy.nProcPerNode must not be used with spec.nprocPerNode"))
    if rspecs is None:
        out.append(rej("replica-specs-required", ("spec", REPLICA_SPECS), f"spec.{REPLICA_SPECS} is required"))
        return out
    if not isinstance(rspecs, dict):
        return out          # the schema's finding
    for rtype, rs in rspecs.items():
        base = ("spec", REPLICA_SPECS, rtype)
        if rtype not in REPLICA_TYPES:
            out.append(rej("replica-type", base, f"replica type {rtype!r} is not supported: use "
                                                 f"{' or '.join(REPLICA_TYPES)} (case-sensitive)"))
        rs = rs if isinstance(rs, dict) else {}
        tmpl = rs.get("template") if isinstance(rs.get("template"), dict) else {}
        pod = tmpl.get("spec") if isinstance(tmpl.get("spec"), dict) else {}
        containers = pod.get("containers") if isinstance(pod.get("containers"), list) else []
        cpath = base + ("template", "spec", "containers")
        if not containers:
            out.append(rej("containers-required", cpath, f"replica {rtype} has no containers"))
        for i, c in enumerate(containers):
            if isinstance(c, dict) and not c.get("image"):
                out.append(rej("image-required", cpath + (i, "image"),
                               f"container {c.get('name', i)!r} of replica {rtype} has no image"))
        if not any(isinstance(c, dict) and c.get("name") == CONTAINER_NAME for c in containers):
            out.append(rej("default-container", cpath,
                           f"replica {rtype} has no container named {CONTAINER_NAME!r} (the webhook rejects it; "
                           "the operator injects its env and port into that container only)"))
        reps = rs.get("replicas")
        if rtype == MASTER:
            if reps is None:
                out.append(rej("master-replicas", base + ("replicas",),
                               "Master replicas is not set: write `replicas: 1` (the webhook rejects an unset value)"))
            elif as_int(reps) != 1:
                out.append(rej("master-replicas", base + ("replicas",), f"Master replicas is {reps!r}: it must be 1"))
        elif reps is not None and (as_int(reps) is None or as_int(reps) < 1):
            out.append(rej("worker-replicas", base + ("replicas",),
                           f"{rtype} replicas is {reps!r}: it must be at least 1"))
    return out


# Env the operator appends to every container of every replica.
# pkg/controller.v1/pytorch/envvar.go setPodEnv (v1.8.1, v1.9.4):
ENV_ALWAYS = ("PYTHONUNBUFFERED",)
# ... when a Master replica exists (envvar.go + master.go MasterEnvVarGenerator):
ENV_MASTER = ("MASTER_PORT", "PET_MASTER_PORT", "MASTER_ADDR", "PET_MASTER_ADDR",
              "WORLD_SIZE", "RANK", "PET_NPROC_PER_NODE", "PET_NODE_RANK")
# ... without elasticPolicy (envvar.go): PET_NNODES = total replicas.
ENV_NON_ELASTIC = ("PET_NNODES",)
# ... with elasticPolicy (pkg/controller.v1/pytorch/elastic.go ElasticEnvVarGenerator):
ENV_ELASTIC = ("PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_NNODES", "PET_MAX_RESTARTS",
               "PET_NPROC_PER_NODE", "PET_RDZV_ID", "PET_RDZV_CONF", "PET_STANDALONE")
INJECTED_ENV = frozenset(ENV_ALWAYS + ENV_MASTER + ENV_NON_ELASTIC + ENV_ELASTIC)


def master_address(job_name: str) -> str:
    """MASTER_ADDR the operator injects: `<job>-master-0` (envvar.go replicaName / master.go)."""
    return f"{job_name}-master-0"


def elastic_rdzv_host(job_name: str) -> str:
    """Default rendezvous host without rdzvHost: `<job>-worker-0` (elastic.go generateEnvRDZVEndpoint)."""
    return f"{job_name}-worker-0"


def pod_name(job_name: str, replica_type: str, index: int) -> str:
    """Pod (and Service) name of a replica: `<job>-<type lowercased>-<index>` (envvar.go replicaName)."""
    return f"{job_name}-{replica_type.lower()}-{index}".replace("/", "-")


def world_size(total_replicas: int, nproc_per_node: str | int | None) -> int:
    """WORLD_SIZE as injected: replicas x nprocPerNode when that is an int, else replicas (envvar.go getNprocPerNodeInt)."""
    try:
        n = int(str(nproc_per_node))
    except (TypeError, ValueError):
        n = 1
    return total_replicas * n


# ---------------------------------------------------------------- what the controller creates (v1.9.4)
# pkg/controller.v1/common/service.go CreateNewService: one headless Service per replica, named as its pod,
# labelled and selecting by the job-name, operator-name, replica-type and replica-index labels (GenLabels,
# no job-role), its ports those of the `pytorch` container by name (pkg/core/service.go GetPortsFromJob: a
# map, so unordered; shown sorted by name).
SERVICE_CLUSTER_IP = "None"
# pkg/controller.v1/common/job.go ReconcileJobs: runPolicy.suspend true creates no pods and Services (and
# deletes those there); pkg/util/train IsJobSuspended.
# Gang scheduling is the operator's flag --gang-scheduler-name (cmd/training-operator.v1/main.go): "volcano"
# makes a Volcano PodGroup, any other name a scheduler-plugins (coscheduling) one; without it no PodGroup.
GANG_VOLCANO = "volcano"
GANG_SCHEDULER_PLUGINS = "scheduler-plugins"
GANG_OPTION = "gang_scheduler"     # the flag's value in the merge preview's options (ExpandContext.options)
# common/job.go ReconcileJobs: minMember = sum of replicas unless schedulingPolicy.minAvailable; Volcano's
# queue "default" unless schedulingPolicy.queue; minResources = schedulingPolicy.minResources, else
# common/util.go CalcPGMinResources: the requests (limits when a container has no requests) of the first
# minMember pods, replicas ordered by their PriorityClass value (unknown offline: taken in type order).
VOLCANO_DEFAULT_QUEUE = "default"
# pkg/apis/kubeflow.org/v1/pytorch_defaults.go SetDefaults_PyTorchJob (v1.9.4): cleanPodPolicy defaults to None
# (the pods of a finished job are kept).
DEFAULT_CLEAN_POD_POLICY = "None"

# the status conditions (type, status True) that end a job: (succeeded, failed) (training-operator v1.9.4 pkg/apis/kubeflow.org/v1 common_types.go JobSucceeded, JobFailed)
JOB_ENDS = ("Succeeded", "Failed")

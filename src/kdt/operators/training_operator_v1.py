"""Kubeflow Training Operator v1: the PyTorchJob (`kubeflow.org/v1`).

Facts read from kubeflow/training-operator at v1.8.1 and v1.9.4 (the releases
the project targets; see kdt.versions.TRAINING_OPERATOR). Paths are relative to
that repository.
"""
from __future__ import annotations

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

# pkg/webhooks/pytorch/pytorchjob_webhook.go (v1.8.1, v1.9.4), what the validating
# webhook rejects (R) or warns about (W):
WEBHOOK = {
    "name-dns1035": "R metadata.name must be a DNS-1035 label",
    "replica-specs-required": "R spec.pytorchReplicaSpecs must be set",
    "replica-type": "R keys of pytorchReplicaSpecs other than Master/Worker",
    "containers-required": "R a replica without containers",
    "image-required": "R a container without image",
    "default-container": "R a replica without a container named `pytorch`",
    "master-replicas": "R Master replicas unset or not 1",
    "worker-replicas": "R Worker replicas < 1",
    "elastic-worker": "R elasticPolicy without a Worker replica spec",
    "elastic-nproc-deprecated": "W elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode",
    "elastic-nproc-conflict": "R elasticPolicy.nProcPerNode together with spec.nprocPerNode",
}

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

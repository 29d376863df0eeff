"""What the operators add to the objects they create: values, defaults and merge rules.

The merge preview (kdt.expand) needs, beyond the names in the sibling modules,
the values the operators write and the order they write them in. Each fact
names its release and source file (relative to the operator's repository).
Names already defined by the sibling modules are imported, never restated.
"""
from __future__ import annotations

from .trainer_v2 import facts as TV2
from .training_operator_v1 import facts as TO1

# ---------------------------------------------------------------- Training Operator v1
# pkg/controller.v1/pytorch/envvar.go setPodEnv (v1.8.1, v1.9.4): appended first to
# every container, with this value ("Set PYTHONUNBUFFERED to true, to disable output buffering").
V1_PYTHONUNBUFFERED = ("PYTHONUNBUFFERED", "1")
# pkg/apis/kubeflow.org/v1/pytorch_defaults.go DefaultNprocPerNode, set by
# setDefaultNprocPerNode when neither spec.nprocPerNode nor elasticPolicy.nProcPerNode is set.
V1_DEFAULT_NPROC_PER_NODE = "auto"
# pytorch_defaults.go SetDefaults_PyTorchJob: setDefaultReplicas(spec, 1).
V1_DEFAULT_REPLICAS = 1
# pytorch_defaults.go setElasticPolicy: a missing bound takes the other one; both
# missing take Worker replicas. elastic.go generateEnvBackend: c10d when unset.
V1_DEFAULT_RDZV_BACKEND = "c10d"
# pkg/controller.v1/common/pod.go setRestartPolicy: ExitCode is run by the pod as Never.
V1_POD_RESTART_POLICY = {"ExitCode": "Never"}
# pkg/controller.v1/pytorch/initcontainer.go (v1.8.1, v1.9.4): only when a Master
# replica exists, appended to the init containers of Worker pods. Image and tries
# from pkg/config/config.go PyTorchInitContainerImageDefault / ...MaxTriesDefault
# (operator flags --pytorch-init-container-image, --pytorch-init-container-max-tries).
V1_INIT_CONTAINER_NAME = "init-pytorch"
V1_INIT_CONTAINER_IMAGE = "alpine:3.10"
V1_INIT_CONTAINER_MAX_TRIES = 100
V1_INIT_CONTAINER_RESOURCES = {"limits": {"cpu": "100m", "memory": "20Mi"},
                               "requests": {"cpu": "50m", "memory": "10Mi"}}


def v1_init_container(job_name: str) -> dict:
    """The init container a Worker pod gets (initcontainer.go initContainerTemplate)."""
    addr = TO1.master_address(job_name)
    script = (f"err=1;for i in $(seq {V1_INIT_CONTAINER_MAX_TRIES}); do if nslookup {addr}; "
              "then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err")
    return {
        "name": V1_INIT_CONTAINER_NAME,
        "image": V1_INIT_CONTAINER_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "resources": {k: dict(v) for k, v in V1_INIT_CONTAINER_RESOURCES.items()},
        "command": ["sh", "-c", script],
    }


# pkg/controller.v1/common/job_controller.go GenLabels (operator-name, job-name) and
# pkg/controller.v1/common/pod.go createNewPod (replica-type, lower-cased; replica-index; and
# job-role=master on the Master's pods, pytorchjob_controller.go IsMasterRole): the labels the
# operator sets on every pod it creates.
V1_LABEL_JOB_NAME = "training.kubeflow.org/job-name"
V1_LABEL_OPERATOR = "training.kubeflow.org/operator-name"
V1_LABEL_REPLICA_TYPE = "training.kubeflow.org/replica-type"
V1_LABEL_REPLICA_INDEX = "training.kubeflow.org/replica-index"
V1_LABEL_JOB_ROLE = "training.kubeflow.org/job-role"
V1_OPERATOR_NAME = TO1.V1_KINDS[TO1.KIND][1]

# ---------------------------------------------------------------- Trainer v2
# pkg/runtime/framework/plugins/torch/torch.go EnforceMLPolicy (v2.1.0, v2.3.0):
# the env upserted into the `node` container, in this order (names are
# trainer_v2.RESERVED_ENV, pkg/constants/constants.go TorchEnv*).
V2_ENV_NNODES, V2_ENV_NPROC, V2_ENV_NODE_RANK, V2_ENV_MASTER_ADDR, V2_ENV_MASTER_PORT = TV2.RESERVED_ENV
# PET_NODE_RANK comes from the Job's completion index (pkg/constants JobCompletionIndexFieldPath).
V2_COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
# torch.go: numProcPerNode defaults to "auto" (runtime mlPolicy.torch, then TrainJob trainer).
V2_DEFAULT_NUM_PROC_PER_NODE = "auto"
# torch.go calculateNumProcPerNode: with resourcesPerNode, "auto" and no resource
# whose name contains "gpu" -> the CPU quantity (at least 1), limits before requests;
# "cpu" -> the CPU quantity (1 without one); other values kept as they are.
V2_CPU_FALLBACK = 1
V2_GPU_MARKER = "gpu"
# pkg/runtime/framework/plugins/jobset/builder.go Trainer: replicas of the trainer
# job become 1; parallelism and completions become the node count.
V2_TRAINER_JOB_REPLICAS = 1

# ---------------------------------------------------------------- JobSet
# kubernetes-sigs/jobset pkg/util/placement/placement.go GenPodName (v0.8): the pod
# hostname `<jobset>-<rjob>-<jobIdx>-<podIdx>`; pkg/controllers/jobset_controller.go
# sets the pod subdomain to the JobSet name (network.subdomain when set), so
# `<hostname>.<jobset>` resolves through the JobSet's headless Service.


def jobset_hostname(jobset: str, replicated_job: str, job_index: int, pod_index: int) -> str:
    return f"{jobset}-{replicated_job}-{job_index}-{pod_index}"


# pkg/runtime/framework/plugins/jobset/constants InitializerEnvStorageUri (v2.1.0, v2.3.0):
# builder.go Initializer upserts it from spec.initializer.{dataset,model}.storageUri.
V2_INITIALIZER_ENV_STORAGE_URI = "STORAGE_URI"

# ---------------------------------------------------------------- StatefulSet
# kubernetes pkg/controller/statefulset/stateful_set_utils.go (1.28+): pod `<set>-<ordinal>`,
# hostname = pod name, subdomain = spec.serviceName, and the labels below.
STS_LABEL_POD_NAME = "statefulset.kubernetes.io/pod-name"
STS_LABEL_POD_INDEX = "apps.kubernetes.io/pod-index"

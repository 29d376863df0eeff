"""What the operators add to the objects they create: values, defaults and merge rules.

The merge preview (kdt.expand) needs, beyond the names in the sibling modules,
the values the operators write and the order they write them in. Each fact
names its release and source file (relative to the operator's repository).
Names already defined by the sibling modules are imported, never restated.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..fields import as_dict
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

# ---------------------------------------------------------------- the pod as the operator creates it
@dataclass(frozen=True)
class PodAdditions:
    """What an operator appends to the pod spec it creates from a pod template: volumes to `volumes`, mounts
    and env to the first container, init containers after the template's. Every operator modelled here appends
    (none replaces or reorders what the template has), so each of the template's own items keeps its index."""
    by: str                                  # who adds them, with release and source file
    volumes: tuple = ()                      # volume mappings
    mounts: tuple = ()                       # volumeMount mappings of the first container
    env: tuple = ()                          # (name, value or None) of the first container
    init_containers: tuple = ()              # container mappings


def created_spec(spec: dict, add: PodAdditions) -> dict:
    """The pod spec the operator creates from the template's `spec`: a copy with `add` appended (the template's
    own mappings are shared, not copied: nothing here changes them)."""
    out = dict(spec)
    if add.volumes:
        out["volumes"] = [*(spec.get("volumes") if isinstance(spec.get("volumes"), list) else ()),
                          *(dict(v) for v in add.volumes)]
    if add.init_containers:
        init = spec.get("initContainers")
        out["initContainers"] = [*(init if isinstance(init, list) else ()), *(dict(c) for c in add.init_containers)]
    containers = spec.get("containers")
    if (add.mounts or add.env) and isinstance(containers, list) and containers and isinstance(containers[0], dict):
        first = dict(containers[0])
        if add.mounts:
            mounts = first.get("volumeMounts")
            first["volumeMounts"] = [*(mounts if isinstance(mounts, list) else ()), *(dict(m) for m in add.mounts)]
        if add.env:
            env = first.get("env")
            first["env"] = [*(env if isinstance(env, list) else ()),
                            *({"name": n} if v is None else {"name": n, "value": v} for n, v in add.env)]
        out["containers"] = [first, *containers[1:]]
    return out


# pkg/controller.v1/pytorch/pytorchjob_controller.go (v1.8.1, v1.9.4) calls SetInitContainer
# (initcontainer.go) for every Worker pod of a job with a Master replica: the operator's built-in template,
# v1_init_container above (a cluster may give the operator another template: kdt.operators.pytorch_init).
V1_INIT_BY = ("the Training Operator (kubeflow/training-operator v1.8.1, v1.9.4 pkg/controller.v1/pytorch/"
              "initcontainer.go, its built-in template)")


def v1_pytorch_pod_additions(job: dict, role: str) -> PodAdditions | None:
    replicas = as_dict(as_dict(job.get("spec")).get(TO1.REPLICA_SPECS))
    if role != TO1.WORKER or TO1.MASTER not in replicas:
        return None
    name = str(as_dict(job.get("metadata")).get("name") or "")
    return PodAdditions(V1_INIT_BY, init_containers=(v1_init_container(name),))


# The Training Operator's own MPIJob (`kubeflow.org/v1`; kubeflow/training-operator v1.8.1 and v1.9.4
# pkg/controller.v1/mpi/mpijob.go constants, mpijob_controller.go newLauncher and newWorker; the MPI Operator's
# v1alpha2 and v1 controllers have the same design, kubeflow/mpi-operator v0.3.0
# pkg/controllers/v1alpha2/mpi_job_controller.go): a `kubectl-delivery` init container and an emptyDir
# `mpi-job-kubectl` at /opt/kube, the ConfigMap `<job>-config` as `mpi-job-config` at /etc/mpi.
V1_MPI_BY = "the Training Operator (kubeflow/training-operator v1.8.1, v1.9.4 pkg/controller.v1/mpi/mpijob_controller.go)"
V1_MPI_LAUNCHER, V1_MPI_WORKER = "Launcher", "Worker"     # pkg/apis/kubeflow.org/v1/mpi_types.go
V1_MPI_CONFIG_VOLUME, V1_MPI_CONFIG_MOUNT_PATH = "mpi-job-config", "/etc/mpi"
V1_MPI_KUBECTL_VOLUME, V1_MPI_KUBECTL_MOUNT_PATH = "mpi-job-kubectl", "/opt/kube"
V1_MPI_KUBECTL_DELIVERY = "kubectl-delivery"
# pkg/config/config.go MPIKubectlDeliveryImageDefault (operator flag --mpi-kubectl-delivery-image): v1.9.4's;
# v1.8.1's is kubeflow/kubectl-delivery:latest.
V1_MPI_KUBECTL_DELIVERY_IMAGE = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"
V1_MPI_INIT_RESOURCES = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}   # initContainer* (limits = requests)
V1_MPI_KUBEXEC, V1_MPI_HOSTFILE, V1_MPI_DISCOVER_HOSTS = "kubexec.sh", "hostfile", "discover_hosts.sh"
V1_MPI_GPU_SUFFIX = ".com/gpu"                           # gpuResourceNameSuffix, mpijob.go isGPULauncher


def v1_mpi_pod_additions(job: dict, role: str) -> PodAdditions | None:
    name = str(as_dict(job.get("metadata")).get("name") or "")
    spec = as_dict(job.get("spec"))
    config = f"{name}-config"
    script = {"key": V1_MPI_KUBEXEC, "path": V1_MPI_KUBEXEC, "mode": 0o555}
    config_mount = {"name": V1_MPI_CONFIG_VOLUME, "mountPath": V1_MPI_CONFIG_MOUNT_PATH}
    if role == V1_MPI_WORKER:
        return PodAdditions(V1_MPI_BY, volumes=({"name": V1_MPI_CONFIG_VOLUME,
                                                 "configMap": {"name": config, "items": [script]}},),
                            mounts=(config_mount,))
    if role != V1_MPI_LAUNCHER:
        return None
    kubectl_mount = {"name": V1_MPI_KUBECTL_VOLUME, "mountPath": V1_MPI_KUBECTL_MOUNT_PATH}
    init = {"name": V1_MPI_KUBECTL_DELIVERY, "image": V1_MPI_KUBECTL_DELIVERY_IMAGE, "imagePullPolicy": "IfNotPresent",
            "env": [{"name": "TARGET_DIR", "value": V1_MPI_KUBECTL_MOUNT_PATH},
                    {"name": "NAMESPACE", "value": str(as_dict(job.get("metadata")).get("namespace") or "")}],
            "volumeMounts": [dict(kubectl_mount), dict(config_mount)],
            "resources": {"limits": dict(V1_MPI_INIT_RESOURCES), "requests": dict(V1_MPI_INIT_RESOURCES)}}
    template = as_dict(as_dict(as_dict(spec.get("mpiReplicaSpecs")).get(V1_MPI_LAUNCHER)).get("template"))
    containers = [c for c in as_dict(template.get("spec")).get("containers") or [] if isinstance(c, dict)]
    gpu = any(str(k).endswith(V1_MPI_GPU_SUFFIX) for c in containers
              for k in as_dict(as_dict(c.get("resources")).get("limits")))
    first_env = {as_dict(e).get("name") for e in (containers[0].get("env") or [] if containers else [])
                 if isinstance(e, dict)}
    env = [("OMPI_MCA_plm_rsh_agent", f"{V1_MPI_CONFIG_MOUNT_PATH}/{V1_MPI_KUBEXEC}"),
           ("OMPI_MCA_orte_default_hostfile", f"{V1_MPI_CONFIG_MOUNT_PATH}/{V1_MPI_HOSTFILE}")]
    if not gpu:
        env += [("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", "")]
    if "I_MPI_HYDRA_BOOTSTRAP" not in first_env:                 # mpijob.go hasIntelMPIBootstrapValues
        env.append(("I_MPI_HYDRA_BOOTSTRAP", "rsh"))              # iMPIDefaultBootstrap
    if "I_MPI_HYDRA_BOOTSTRAP_EXEC" not in first_env:
        env.append(("I_MPI_HYDRA_BOOTSTRAP_EXEC", f"{V1_MPI_CONFIG_MOUNT_PATH}/{V1_MPI_KUBEXEC}"))
    volumes = ({"name": V1_MPI_KUBECTL_VOLUME, "emptyDir": {}},
               {"name": V1_MPI_CONFIG_VOLUME, "configMap": {"name": config, "items": [
                   script, {"key": V1_MPI_HOSTFILE, "path": V1_MPI_HOSTFILE, "mode": 0o444},
                   {"key": V1_MPI_DISCOVER_HOSTS, "path": V1_MPI_DISCOVER_HOSTS, "mode": 0o555}]}})
    return PodAdditions(V1_MPI_BY, volumes=volumes, mounts=(kubectl_mount, config_mount), env=tuple(env),
                        init_containers=(init,))


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

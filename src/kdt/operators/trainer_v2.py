"""Kubeflow Trainer v2: TrainJob, TrainingRuntime, ClusterTrainingRuntime (`trainer.kubeflow.org/v1alpha1`).

Facts read from kubeflow/trainer (v2.1.0 and v2.3.0; the official CRDs of both
releases are the reference for version-specific fields). Paths are relative to
that repository.
"""
from __future__ import annotations

GROUP = "trainer.kubeflow.org"
API_VERSION = "trainer.kubeflow.org/v1alpha1"
TRAINJOB = "TrainJob"
TRAINING_RUNTIME = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
RUNTIME_KINDS = (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)
# pkg/apis/trainer/v1alpha1/trainjob_types.go RuntimeRef: kind defaults to ClusterTrainingRuntime.
DEFAULT_RUNTIME_KIND = CLUSTER_TRAINING_RUNTIME

# pkg/constants/constants.go LabelTrainJobAncestor and its values.
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
ANCESTORS = (ANCESTOR_TRAINER, DATASET_INITIALIZER, MODEL_INITIALIZER)
# pkg/constants/constants.go Node: "the name of the Job and container for the trainer node".
NODE = "node"
# pkg/webhooks/trainingruntime_webhook.go expectedContainerNames: the container each
# ancestor-labelled replicated job must have; and rJobReplicasErrorMsg "always must be 1".
ANCESTOR_CONTAINERS = {ANCESTOR_TRAINER: NODE, MODEL_INITIALIZER: MODEL_INITIALIZER,
                       DATASET_INITIALIZER: DATASET_INITIALIZER}
ANCESTOR_JOB_REPLICAS = 1
# Containers whose env a TrainJob override/patch may not set: `node` gets its env
# from spec.trainer.env, the initializers from spec.initializer (the 2.3.0 example
# examples/02-runtime-patches.yaml: "RuntimePatches container env is forbidden for
# the node, dataset-initializer, and model-initializer containers";
# pkg/webhooks/trainjob_webhook.go).
ENV_FORBIDDEN_CONTAINERS = (NODE, DATASET_INITIALIZER, MODEL_INITIALIZER)

# pkg/constants/constants.go ContainerTrainerPort: the rendezvous port of node 0.
TRAINER_PORT = 29500

# pkg/constants/constants.go TorchRunReservedEnvNames; rejected in spec.trainer.env by
# pkg/runtime/framework/plugins/torch/torch.go Validate ("must not have reserved envs"),
# except when the command is the torchtune entrypoint (TorchTuneEntrypoint = tune run).
RESERVED_ENV = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
TORCHTUNE_ENTRYPOINT = ["tune", "run"]

# pkg/runtime/framework/plugins/torch/torch.go Validate: string values of numProcPerNode
# allowed by 2.1 ("must have an int value or [auto cpu gpu]"). The 2.3.0 CRD
# (trainer.kubeflow.org_trainjobs.yaml) makes numProcPerNode an int32.
NUM_PROC_PER_NODE_WORDS_21 = ("auto", "cpu", "gpu")

# Label the SDK and the runtime list use to name the framework (every upstream
# runtime in manifests/base/runtimes carries it).
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"

# pkg/apis/trainer/v1alpha1/trainingruntime_types.go MLPolicy: numNodes plus exactly
# one policy source ("only one of torch, mpi ... can be set", CEL rule on MLPolicy).
ML_POLICY_SOURCES = ("torch", "mpi", "jax", "xgboost", "flux")

# Fields of TrainJob.spec per release (crds/trainer.kubeflow.org_trainjobs.yaml at
# v2.1.0 and v2.3.0): 2.2 replaced podTemplateOverrides with runtimePatches.
TRAINJOB_SPEC_FIELDS = {
    "2.1": ("annotations", "initializer", "labels", "managedBy", "podTemplateOverrides",
            "runtimeRef", "suspend", "trainer"),
    "2.3": ("activeDeadlineSeconds", "initializer", "managedBy", "runtimePatches",
            "runtimeRef", "suspend", "trainer"),
}

# ClusterTrainingRuntime names shipped by upstream (manifests/base/runtimes at v2.1.0 and v2.3.0).
UPSTREAM_RUNTIMES = frozenset({
    "torch-distributed", "torch-distributed-with-cache", "deepspeed-distributed",
    "mlx-distributed", "jax-distributed", "xgboost-distributed",
    "torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b",
})


def version_key(version: str) -> tuple[int, ...]:
    """'2.1' -> (2, 1); '2.3.0' -> (2, 3, 0)."""
    out = []
    for part in str(version).lstrip("v").split("."):
        try:
            out.append(int(part))
        except ValueError:
            break
    return tuple(out)


def has_runtime_patches(version: str) -> bool:
    """True for Trainer 2.2 and later (runtimePatches, integer numProcPerNode)."""
    return version_key(version) >= (2, 2)


def spec_fields(version: str) -> tuple[str, ...]:
    return TRAINJOB_SPEC_FIELDS["2.3" if has_runtime_patches(version) else "2.1"]


def master_address(trainjob: str) -> str:
    """PET_MASTER_ADDR: `<trainjob>-node-0-0.<trainjob>` (plugins/torch/torch.go EnforceMLPolicy)."""
    return f"{trainjob}-{NODE}-0-0.{trainjob}"


def reserved_env_applies(command) -> bool:
    """The reserved-env check is skipped for the torchtune entrypoint (plugins/torch/torch.go)."""
    return list(command or []) != TORCHTUNE_ENTRYPOINT


def find_runtime(job, docs):
    """The runtime document a TrainJob's `runtimeRef` names among `docs`, or None.

    kind defaults to ClusterTrainingRuntime (cluster-scoped: matched by name);
    a TrainingRuntime must be in the TrainJob's namespace, and a TrainJob with no
    namespace (kubectl puts both in the current one) matches any namespace.
    (trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go RuntimeRef defaults.)
    `job` and `docs` are kdt.documents.Document objects.
    """
    spec = job.data.get("spec") if isinstance(job.data.get("spec"), dict) else {}
    ref = spec.get("runtimeRef") if isinstance(spec.get("runtimeRef"), dict) else {}
    kind = ref.get("kind") or DEFAULT_RUNTIME_KIND
    name = str(ref.get("name", ""))
    candidates = [d for d in docs if d.kind == kind and d.group == GROUP and d.name == name]
    if kind == TRAINING_RUNTIME:
        same_ns = [d for d in candidates if (d.namespace or "") == (job.namespace or "")]
        candidates = same_ns or (candidates if not job.namespace else [])
    return candidates[0] if candidates else None

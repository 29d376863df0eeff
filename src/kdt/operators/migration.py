"""The table of equivalences between a PyTorchJob (Training Operator v1) and a TrainJob (Trainer v2), and
between the TrainJob's two shapes (Trainer 2.1 and 2.2+).

Each row is one fact pairing the two operators: what the Training Operator does with a field (its
source at v1.8.1 and v1.9.4; the repository is kubeflow/training-operator, since renamed kubeflow/trainer)
and what Trainer does in its place (kubeflow/trainer at v2.1.0 and v2.3.0; JobSet as Trainer ships it,
kdt.versions.JOBSET). `kdt migrate` (kdt.migrate) writes each row's `becomes`, the pod-by-pod proof
names the row that explains every difference it finds, and docs/migration.md is this table
(scripts/gen_migration_doc.py; a test keeps it current). A row whose `how` is NONE has no equivalent:
the migration reports it as a located finding saying what changes for the job.
"""
from __future__ import annotations

from dataclasses import dataclass

from .jobset import facts as JS
from . import injection as INJ

SAME = "same"          # carried as it is, to the field of the same meaning
MAPPED = "mapped"      # carried, to another field or shape, with the same effect
REPLACED = "replaced"  # the other operator does it its own way; the effect the job sees is the same
NONE = "none"          # no equivalent: a finding says what changes

TO = "Training Operator"
TRAINER = "Trainer"


@dataclass(frozen=True)
class Row:
    id: str
    topic: str            # "job", "pod", "env", "rendezvous", "policy", "shape" (2.1 <-> 2.2+), "chart"
    before: str           # the field or behaviour on the first side (PyTorchJob; for "shape" rows, Trainer 2.1)
    becomes: str          # what it becomes (TrainJob / runtime; Trainer 2.2+ for "shape" rows)
    how: str              # SAME, MAPPED, REPLACED, NONE
    before_source: str    # where the first side does it (repository files and functions at the tags above)
    after_source: str


ROWS: tuple[Row, ...] = (
    # ------------------------------------------------------------------ the job
    Row("job-kind", "job",
        "PyTorchJob `kubeflow.org/v1`: name, namespace, labels and annotations",
        "TrainJob `trainer.kubeflow.org/v1alpha1` of the same name, namespace, labels and annotations, with "
        "`spec.runtimeRef` to the runtime it runs on (a fitting runtime given to the migration, else one "
        "generated for the job)", MAPPED,
        "pkg/apis/kubeflow.org/v1/pytorch_types.go PyTorchJob",
        "pkg/apis/trainer/v1alpha1/trainjob_types.go TrainJob, RuntimeRef"),
    Row("node-count", "job",
        "`pytorchReplicaSpecs` replicas: Master 1 + Worker n (PET_NNODES = their sum)",
        "`trainer.numNodes` (the trainer job's parallelism = completions, PET_NNODES)", MAPPED,
        "pkg/controller.v1/pytorch/envvar.go setPodEnv",
        "pkg/runtime/framework/plugins/torch/torch.go EnforceMLPolicy; plugins/jobset/builder.go Trainer"),
    Row("nproc", "job",
        "`nprocPerNode` (default `auto`; `elasticPolicy.nProcPerNode` deprecated), PET_NPROC_PER_NODE",
        "`trainer.numProcPerNode`: 2.1 the same value (int, `auto`, `cpu`, `gpu`); 2.2+ an int, `auto` left out "
        "(Trainer's default: PET_NPROC_PER_NODE=auto when resourcesPerNode has a GPU)", MAPPED,
        "pkg/apis/kubeflow.org/v1/pytorch_defaults.go setDefaultNprocPerNode; envvar.go setPodEnv",
        "plugins/torch/torch.go EnforceMLPolicy (2.1: numProcPerNode int-or-string; 2.3: int32, default auto)"),
    Row("nproc-cpu", "job",
        "`nprocPerNode: auto` (or `cpu`) on a node without GPU: torchrun starts one process per CPU of the node",
        "none: Trainer replaces `auto` without a GPU in resourcesPerNode (and 2.1's `cpu`) by the CPU count of "
        "resourcesPerNode (requests, else limits; at least 1): another process count unless that is the "
        "node's", NONE,
        "envvar.go setPodEnv (PET_NPROC_PER_NODE=auto); torch/distributed/run.py determine_local_world_size",
        "plugins/torch/torch.go EnforceMLPolicy, getNumCPUPerNode"),
    # ------------------------------------------------------------------ the pod
    Row("replica-templates", "pod",
        "a Master and a Worker pod template (node 0 and the others)",
        "one pod template for every node: the Master's (node 0); a field the Worker template sets otherwise "
        "has no equivalent", NONE,
        "pkg/controller.v1/common/pod.go ReconcilePods (one template per replica type)",
        "plugins/jobset/builder.go Trainer (one `node` job, parallelism = numNodes)"),
    Row("trainer-container", "pod",
        "container `pytorch`: image, command, args, env, resources",
        "`trainer.image`, `command`, `args`, `env`, `resourcesPerNode`, set on the runtime's container `node`",
        SAME,
        "pkg/apis/kubeflow.org/v1/pytorch_types.go PytorchJobDefaultContainerName",
        "plugins/jobset/builder.go Trainer; pkg/constants/constants.go Node"),
    Row("pod-patch", "pod",
        "the pod template's metadata, nodeSelector, affinity, tolerations, volumes, serviceAccountName, "
        "imagePullSecrets, schedulingGates, `pytorch`'s volumeMounts (2.2+ also terminationGracePeriodSeconds)",
        "2.1 `podTemplateOverrides` (targetJobs `node`); 2.2+ `runtimePatches` (replicatedJobs `node`)", MAPPED,
        "pkg/controller.v1/common/pod.go createNewPod (the template as written)",
        "trainjob_types.go PodTemplateOverride (v2.1.0), RuntimePatch (v2.3.0); "
        "pkg/runtime/core/trainingruntime.go (strategic merge)"),
    Row("pod-runtime", "pod",
        "every other field of the pod template (automountServiceAccountToken, priorityClassName, "
        "topologySpreadConstraints, other containers and init containers, ports, probes, imagePullPolicy, "
        "envFrom, ...), and the pod's and containers' securityContext",
        "the runtime's `node` job pod template: generated with them, or a given runtime that holds the same. The "
        "securityContexts stay in the runtime although 2.2+ could patch them: a runtime's pods must meet Pod "
        "Security by themselves (lint rule pod-security reads a runtime's template alone)",
        MAPPED,
        "pkg/controller.v1/common/pod.go createNewPod",
        "pkg/runtime/core/trainingruntime.go newRuntimeInfo (the runtime's template is the pod)"),
    Row("restart-policy", "pod",
        "replica `restartPolicy` OnFailure, Never (default OnFailure), set on the pod",
        "the runtime pod template's restartPolicy (the JobSet webhook defaults OnFailure)", MAPPED,
        "pkg/core/pod.go SetRestartPolicy; pytorch_defaults.go",
        "jobset pkg/webhooks/jobset_webhook.go Default"),
    Row("restart-always", "pod",
        "replica `restartPolicy: Always`",
        "none: a Job's pods cannot restart Always; OnFailure (restarts the failed container, counted by the "
        "Job's backoffLimit)", NONE,
        "pkg/core/pod.go SetRestartPolicy",
        "kubernetes pkg/apis/batch/validation (Job restartPolicy OnFailure or Never)"),
    Row("exit-code", "pod",
        "replica `restartPolicy: ExitCode`: a pod that exits 128 or more is recreated, another code fails the job",
        "none: the pod restartPolicy Never; every failure counts toward the Job's backoffLimit (a Job "
        "podFailurePolicy with onExitCodes can fail it on codes 1-127)", NONE,
        "pkg/controller.v1/common/pod.go ReconcilePods; pkg/util/train/train_util.go IsRetryableExitCode",
        "kubernetes batch/v1 Job podFailurePolicy"),
    Row("pod-identity", "pod",
        "pods `<job>-master-0`, `<job>-worker-<i>`, each with a headless Service of its name; labels "
        "`training.kubeflow.org/*`",
        "pods of the Indexed Job `<job>-node-0`, hostname `<job>-node-0-<i>` in the JobSet's headless Service; "
        "labels `jobset.sigs.k8s.io/*`, `batch.kubernetes.io/*`, `job-name`, `controller-uid`, env "
        "JOB_COMPLETION_INDEX", REPLACED,
        "pkg/controller.v1/common/pod.go createNewPod; common/service.go CreateNewService",
        "jobset pkg/controllers/jobset_controller.go constructJob; kubernetes pkg/controller/job "
        "indexed_job_utils.go, pkg/registry/batch/job/strategy.go"),
    Row("selectors", "pod",
        "label selectors of the pod (affinity, topology spread) on `" + INJ.V1_LABEL_JOB_NAME + "`, `"
        + INJ.V1_LABEL_REPLICA_TYPE + "`, `" + INJ.V1_LABEL_JOB_ROLE + "=master`",
        "the same selection by JobSet's labels: `" + JS.LABEL_JOBSET_NAME + "`, `" + JS.LABEL_REPLICATED_JOB
        + "` (value `node`), `" + JS.COMPLETION_INDEX_KEY + "=0`", MAPPED,
        "pkg/controller.v1/common/job_controller.go GenLabels; common/pod.go createNewPod",
        "jobset api/jobset/v1alpha2/jobset_types.go JobSetNameKey, ReplicatedJobNameKey; kubernetes "
        "indexed_job_utils.go"),
    Row("init-container", "pod",
        "the init container the operator gives each Worker pod (it waits until the master's name resolves)",
        "none needed: torchrun's static rendezvous waits for node 0's store itself", REPLACED,
        "pkg/controller.v1/pytorch/initcontainer.go",
        "torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py (TCPStore client retries until its "
        "timeout)"),
    # ------------------------------------------------------------------ the env
    Row("rank", "env",
        "RANK, PET_NODE_RANK: the replica index (+1 on Workers beside a Master)",
        "PET_NODE_RANK: the Job completion index (node 0 is the Master's place)", REPLACED,
        "pkg/controller.v1/pytorch/envvar.go setPodEnv",
        "plugins/torch/torch.go EnforceMLPolicy (JobCompletionIndexFieldPath)"),
    Row("master-addr", "env",
        "MASTER_ADDR, PET_MASTER_ADDR `<job>-master-0`",
        "PET_MASTER_ADDR `<job>-node-0-0.<job>`: node 0 again", REPLACED,
        "pkg/controller.v1/pytorch/master.go MasterEnvVarGenerator",
        "plugins/torch/torch.go EnforceMLPolicy"),
    Row("rdzv-port", "env",
        "MASTER_PORT, PET_MASTER_PORT: the `pytorchjob-port` container port (default 23456)",
        "PET_MASTER_PORT 29500 and the container port 29500; the `pytorchjob-port` port is not carried "
        "(nothing reads it)", REPLACED,
        "pkg/apis/kubeflow.org/v1/pytorch_types.go PytorchJobDefaultPort; envvar.go getPortFromPyTorchJob",
        "pkg/constants/constants.go ContainerTrainerPort; plugins/torch/torch.go EnforceMLPolicy"),
    Row("world-size", "env",
        "WORLD_SIZE: replicas x nprocPerNode when an int, else replicas",
        "torchrun's world size, nnodes x processes per node, from PET_NNODES and PET_NPROC_PER_NODE", REPLACED,
        "pkg/controller.v1/pytorch/envvar.go setPodEnv (getTotalReplicas, getNprocPerNodeInt)",
        "plugins/torch/torch.go EnforceMLPolicy; torch/distributed/run.py"),
    Row("process-env", "env",
        "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK in the container's env",
        "none: Trainer sets PET_* only. torchrun sets these four for each worker it starts; a program that "
        "does not run under torchrun loses them", NONE,
        "pkg/controller.v1/pytorch/master.go MasterEnvVarGenerator; envvar.go setPodEnv",
        "plugins/torch/torch.go EnforceMLPolicy; torch/distributed/elastic/agent/server/local_elastic_agent.py"),
    Row("python-unbuffered", "env",
        "PYTHONUNBUFFERED=0 on every container (a non-empty value: Python's output unbuffered)",
        "`trainer.env` PYTHONUNBUFFERED=0, written by the migration (Trainer sets none)", MAPPED,
        "pkg/controller.v1/pytorch/envvar.go setPodEnv",
        "plugins/torch/torch.go EnforceMLPolicy (no such env)"),
    Row("reserved-env", "env",
        "the container's own PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT "
        "(the operator's, appended after them, win)",
        "left out: Trainer refuses them in `trainer.env` and sets them itself", REPLACED,
        "pkg/controller.v1/pytorch/envvar.go setPodEnv (appended after the container's)",
        "plugins/torch/torch.go Validate; pkg/constants/constants.go TorchRunReservedEnvNames"),
    Row("pod-index", "env",
        "a per-pod index the container reads through the downward API: `fieldRef` to the label `"
        + INJ.V1_LABEL_REPLICA_INDEX + "`, the pod's index among its replica type (each type counts from 0; "
        "in a job of one replica type, the node index: a torchft job's REPLICA_GROUP_ID)",
        "`fieldRef` to the annotation `" + JS.COMPLETION_INDEX_KEY + "` of the trainer Job's pods: Trainer's "
        "`node` job is one Indexed Job of numNodes pods, node i at index i (as components/torchft/trainjob "
        "reads it). Beside a Master a Worker's index is not its node's: a finding, left as written", MAPPED,
        "pkg/controller.v1/common/pod.go createNewPod (the replica-index label, per replica type)",
        "plugins/jobset/builder.go Trainer (replicas 1), plugins/jobset/jobset.go (parallelism = completions "
        "= numNodes); jobset pkg/webhooks/jobset_webhook.go Default (completionMode Indexed); kubernetes "
        "pkg/controller/job/indexed_job_utils.go (the completion index annotation)"),
    # ------------------------------------------------------------------ the rendezvous
    Row("torchrun-rendezvous", "rendezvous",
        "torchrun's c10d (or etcd) rendezvous at the operator's address: `--rdzv-*` flags naming "
        "$(PET_MASTER_ADDR)/$(PET_MASTER_PORT), or elasticPolicy's PET_RDZV_ENDPOINT",
        "torchrun's static rendezvous from Trainer's PET_MASTER_ADDR, PET_MASTER_PORT and PET_NODE_RANK "
        "(node 0 hosts the store); the flags, and env read by them alone (an `is_host` per replica), removed",
        REPLACED,
        "envvar.go setPodEnv, elastic.go ElasticEnvVarGenerator",
        "plugins/torch/torch.go EnforceMLPolicy; torch/distributed/run.py get_rdzv_endpoint"),
    Row("group-restarts", "rendezvous",
        "torchrun `--max-restarts` or elasticPolicy.maxRestarts: the worker group restarted in place",
        "the runtime's JobSet `failurePolicy.maxRestarts`: every Job of the group recreated (in-place restarts "
        "under a static rendezvous can hang: lint rule torchrun-static-restart)", REPLACED,
        "elastic.go ElasticEnvVarGenerator (PET_MAX_RESTARTS)",
        "jobset api/jobset/v1alpha2/jobset_types.go FailurePolicy; pkg/controllers/failure_policy.go"),
    Row("elastic", "rendezvous",
        "elasticPolicy: minReplicas..maxReplicas nodes, its rendezvous settings and metrics (an HPA)",
        "none: the TrainJob runs exactly numNodes (the Worker replicas); a lost node restarts the group", NONE,
        "elastic.go ElasticEnvVarGenerator; hpa.go",
        "plugins/torch/torch.go (elastic is a TODO; 2.2 removed the runtime's torch.elasticPolicy)"),
    Row("launcher-script", "rendezvous",
        "torchrun's rendezvous flags inside a shell script (`sh -c`)",
        "none: not rewritten; the script still names the operator's rendezvous", NONE,
        "envvar.go setPodEnv", "plugins/torch/torch.go EnforceMLPolicy"),
    # ------------------------------------------------------------------ run policy
    Row("backoff-limit", "policy",
        "runPolicy.backoffLimit: restarts counted over the job's pods (unset: no limit)",
        "the runtime's trainer Job `backoffLimit` (counts its pods' failures, OnFailure restarts included; "
        "Kubernetes' default 6 when unset)", MAPPED,
        "pkg/controller.v1/common/job.go ReconcileJobs; pkg/core/job.go PastBackoffLimit",
        "kubernetes batch/v1 JobSpec.backoffLimit"),
    Row("replica-group-restarts", "policy",
        "torchft replica groups (`TRAINKIT_FAULT_TOLERANCE=torchft`: each pod one group, its own one-pod "
        "torchrun): a failed pod restarts alone (the replica's restartPolicy OnFailure) while the others train, "
        "counted by runPolicy.backoffLimit; the operator restarts no group",
        "the runtime's `node` Job: restartPolicy OnFailure and that backoffLimit (a pod restarts alone), and "
        "`failurePolicy.maxRestarts: 0`: JobSet restarts no group (the groups are the pods of one Indexed Job: "
        "a JobSet restart would recreate every one); past the backoffLimit the TrainJob fails, as the "
        "PyTorchJob did. torchrun's `--max-restarts` stays: in place, inside the pod (`--standalone`)", MAPPED,
        "pkg/core/pod.go SetRestartPolicy; pkg/core/job.go PastBackoffLimit",
        "jobset pkg/webhooks/jobset_webhook.go Default (restartPolicy OnFailure); pkg/controllers/"
        "failure_policy.go failurePolicyRecreateAll (restarts >= maxRestarts: the JobSet fails); kubernetes "
        "batch/v1 JobSpec.backoffLimit"),
    Row("active-deadline", "policy",
        "runPolicy.activeDeadlineSeconds",
        "2.2+ TrainJob `spec.activeDeadlineSeconds`; 2.1 the runtime's trainer Job `activeDeadlineSeconds`",
        MAPPED,
        "pkg/core/job.go PastActiveDeadline",
        "v2.3.0 pkg/controller/trainjob_controller.go reconcileDeadline; kubernetes batch/v1 JobSpec"),
    Row("ttl", "policy",
        "runPolicy.ttlSecondsAfterFinished: the finished job deleted",
        "none: a TrainJob has no TTL, and a JobSet TTL makes Trainer create the JobSet again (lint rule "
        "runtime-ttl-failure-policy); delete the TrainJob", NONE,
        "pkg/controller.v1/common/job.go CleanupJob",
        "pkg/controller/trainjob_controller.go Reconcile (recreates a missing JobSet)"),
    Row("clean-pod-policy", "policy",
        "runPolicy.cleanPodPolicy (Running, All, None): pods deleted when the job ends",
        "none: pods stay with their Jobs until the TrainJob is deleted", NONE,
        "pkg/controller.v1/common/job.go DeletePodsAndServices",
        "trainjob_types.go (no such field)"),
    Row("suspend", "policy",
        "runPolicy.suspend", "TrainJob `spec.suspend` (the JobSet's suspend)", MAPPED,
        "pkg/controller.v1/common/job.go ReconcileJobs (IsJobSuspended)",
        "plugins/jobset/builder.go Suspend"),
    Row("gang", "policy",
        "runPolicy.schedulingPolicy with the operator's gang scheduler: scheduleTimeoutSeconds, minAvailable "
        "(default: every replica), priorityClass, queue",
        "the runtime's `podGroupPolicy.coscheduling.scheduleTimeoutSeconds` (a PodGroup of every pod); "
        "priorityClass to the pods' priorityClassName; minAvailable below every pod, and a Volcano queue, have "
        "no equivalent", MAPPED,
        "pkg/controller.v1/common/job.go ReconcileJobs (PodGroup from SchedulingPolicy)",
        "plugins/coscheduling/coscheduling.go Build (minMember = every pod)"),
    Row("kueue", "policy",
        "the label `kueue.x-k8s.io/queue-name` on the PyTorchJob",
        "the same label on the TrainJob (Kueue's TrainJob integration reads it)", SAME,
        "kueue v0.19.2 pkg/controller/jobs/kubeflow/jobs/pytorchjob/pytorchjob_controller.go",
        "kueue v0.19.2 pkg/controller/jobs/trainjob/trainjob_controller.go"),
    Row("managed-by", "policy",
        "runPolicy.managedBy", "`spec.managedBy` when `kueue.x-k8s.io/multikueue`; the operator's own value "
        "left out (Trainer's is the default)", MAPPED,
        "pkg/controller.v1/common/job.go ManagedByExternalController",
        "trainjob_types.go ManagedBy"),
    # ------------------------------------------------------------------ the TrainJob's two shapes
    Row("shape-overrides", "shape",
        "2.1 `podTemplateOverrides[]`: targetJobs, metadata, spec",
        "2.2+ one `runtimePatches[]` entry (a manager): replicatedJobs[name].template.spec.template "
        "{metadata, spec}, the overrides of one job merged in order", MAPPED,
        "v2.1.0 trainjob_types.go PodTemplateOverride; pkg/runtime/core/trainingruntime.go",
        "v2.3.0 trainjob_types.go RuntimePatch; pkg/runtime/core/trainingruntime.go"),
    Row("shape-labels", "shape",
        "2.1 `spec.labels`, `spec.annotations` (the JobSet and its Jobs)",
        "2.2+ runtimePatches `template.metadata` (the JobSet's) ", MAPPED,
        "v2.1.0 trainjob_types.go TrainJobSpec.Labels", "v2.3.0 trainjob_types.go RuntimePatch"),
    Row("shape-nproc", "shape",
        "2.1 `numProcPerNode` int or `auto`/`cpu`/`gpu`",
        "2.2+ an int; `auto` (and `gpu` beside a GPU) left out: the default; `cpu` the CPU count 2.1 computed",
        MAPPED,
        "v2.1.0 plugins/torch/torch.go EnforceMLPolicy", "v2.3.0 plugins/torch/torch.go EnforceMLPolicy"),
    Row("shape-deadline", "shape",
        "2.2+ `spec.activeDeadlineSeconds`", "none in 2.1", NONE,
        "v2.3.0 pkg/controller/trainjob_controller.go reconcileDeadline", "v2.1.0 trainjob_types.go"),
    Row("shape-patch-fields", "shape",
        "2.2+ patch fields the 2.1 override lacks: the pod's securityContext and terminationGracePeriodSeconds, "
        "a container's securityContext; a Job template's metadata",
        "none in 2.1's podTemplateOverrides", NONE,
        "v2.3.0 trainjob_types.go RuntimePatch", "v2.1.0 trainjob_types.go PodTemplateOverride"),
    Row("shape-runtime-torch", "shape",
        "2.1 runtime `mlPolicy.torch.numProcPerNode`, `elasticPolicy`; 2.3 `envInjection`",
        "2.2 removed numProcPerNode (the TrainJob's, default auto) and elasticPolicy (never implemented); "
        "envInjection has no 2.1 equivalent", MAPPED,
        "v2.1.0 pkg/apis/trainer/v1alpha1/trainingruntime_types.go TorchMLPolicySource",
        "v2.3.0 trainingruntime_types.go TorchMLPolicySource"),
    # ------------------------------------------------------------------ this project's chart
    Row("chart-mode", "chart",
        "values `mode: pytorchjob` or `elastic` (charts/trainer/templates/pytorchjob.yaml)",
        "`mode: trainjob` with `trainJob.trainerVersion` (templates/trainjob.yaml renders the same job as a "
        "TrainJob and its runtime)", MAPPED,
        "charts/trainer/templates/pytorchjob.yaml", "charts/trainer/templates/trainjob.yaml"),
)

BY_ID = {r.id: r for r in ROWS}
if len(BY_ID) != len(ROWS):
    raise RuntimeError("a row id of the table of equivalences is used twice")


def row(row_id: str) -> Row:
    return BY_ID[row_id]


# The Training Operator's pod labels and the JobSet/Job labels that select the same pods (row "selectors"):
# job-name -> jobset-name (the JobSet is named after the job); replica-type (master, worker) ->
# replicatedjob-name `node`; job-role=master -> the completion index 0 (node 0).
LABEL_JOB = (INJ.V1_LABEL_JOB_NAME, JS.LABEL_JOBSET_NAME)
LABEL_ROLE = (INJ.V1_LABEL_REPLICA_TYPE, JS.LABEL_REPLICATED_JOB)
LABEL_MASTER = (INJ.V1_LABEL_JOB_ROLE, "master", JS.COMPLETION_INDEX_KEY, "0")

# Label domains the operators own on the pods they create (common/pod.go; jobset_types.go; the Job
# controller's batch.kubernetes.io): a label of these on a pod is the operator's, compared by the rows above.
OPERATOR_LABEL_DOMAINS = ("training.kubeflow.org", JS.LABEL_JOBSET_NAME.split("/")[0],
                          JS.COMPLETION_INDEX_KEY.split("/")[0])
# and the Job's legacy name and uid labels, which its pods carry (kubernetes pkg/registry/batch/job/strategy.go)
OPERATOR_LABEL_KEYS = (JS.LEGACY_LABEL_JOB_NAME, *JS.LABELS_CONTROLLER_UID)

# Row "pod-index": the downward-API field of a pod's own index on each side. The Training Operator's label is
# per pod in a job of one replica type, the completion index per pod of a replicated job that makes one Job
# (Trainer's `node` job): the facts lint rule torchft-group-id holds a REPLICA_GROUP_ID to.
POD_INDEX_FIELD = (f"metadata.labels['{INJ.V1_LABEL_REPLICA_INDEX}']",
                   f"metadata.annotations['{JS.COMPLETION_INDEX_KEY}']")

# Training Operator env that only a program started without torchrun reads (row "process-env").
PROCESS_ENV = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")

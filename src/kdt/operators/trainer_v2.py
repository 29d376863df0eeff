"""Kubeflow Trainer v2: TrainJob, TrainingRuntime, ClusterTrainingRuntime (`trainer.kubeflow.org/v1alpha1`).

Facts read from kubeflow/trainer (v2.1.0 and v2.3.0; the official CRDs of both
releases are the reference for version-specific fields). Paths are relative to
that repository.
"""
from __future__ import annotations

import re

from ..fields import as_int, quantity_value
from . import scheduling as SCHED
from .admission import Rejection

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


# ---------------------------------------------------------------- what the webhooks refuse (v2.1.0, v2.3.0)
# pkg/apis/trainer/v1alpha1/trainjob_types.go ManagedBy: the TrainJob controller reconciles a TrainJob with
# this value (or none); one for MultiKueue is left to Kueue (pkg/util/trainjob IsManagedByExternalController).
TRAINJOB_CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
# pkg/runtime/framework/plugins/jobset/constants VolumeNameInitializer (v2.3.0): the volume an initializer
# container must mount (jobset.go Validate).
INITIALIZER_VOLUME = "initializer"
# pkg/constants/constants.go LabelSupport, SupportDeprecated, RuntimeDeprecationPolicyURL (v2.1.0, v2.3.0): a
# ClusterTrainingRuntime labelled deprecated is admitted with a warning (clustertrainingruntime_webhook.go),
# and so is a TrainJob that uses it (pkg/runtime/core/clustertrainingruntime.go ValidateObjects).
SUPPORT_LABEL = "trainer.kubeflow.org/support"
SUPPORT_DEPRECATED = "deprecated"
DEPRECATION_POLICY_URL = ("https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
                          "#runtime-deprecation-policy")
# Lint rules that report what the webhooks refuse; `trainjob-webhook` covers the plugins' other checks.
RULE_RESERVED_ENV = "trainjob-reserved-env"
RULE_OVERRIDE_ENV = "trainjob-override-env"
RULE_OVERRIDE_TARGETS = "trainjob-override-targets"
RULE_WEBHOOK = "trainjob-webhook"
RULE_RUNTIME = "runtime-trainer-job"


def _d(v):
    return v if isinstance(v, dict) else {}


def _l(v):
    return v if isinstance(v, list) else []


def replicated_jobs(runtime: dict) -> list[dict]:
    """The replicated jobs of a runtime's JobSet template (plain mapping)."""
    js_spec = _d(_d(_d(_d(runtime).get("spec")).get("template")).get("spec"))
    return [r for r in _l(js_spec.get("replicatedJobs")) if isinstance(r, dict)]


def _containers(rjob: dict, keys=("initContainers", "containers")) -> list[dict]:
    ps = _d(_d(_d(_d(rjob.get("template")).get("spec")).get("template")).get("spec"))
    return [c for k in keys for c in _l(ps.get(k)) if isinstance(c, dict)]


def runtime_rejections(runtime) -> list:
    """pkg/webhooks/trainingruntime_webhook.go validateReplicatedJobs: an ancestor-labelled replicated job
    must have replicas 1 ("always must be 1") and its container (node, dataset-initializer,
    model-initializer). Rejection each (kdt.operators.admission). A deprecated ClusterTrainingRuntime is
    admitted with a warning (clustertrainingruntime_webhook.go ValidateCreate)."""
    out = []
    if _deprecated(runtime):
        out.append(Rejection(RULE_RUNTIME, ("metadata", "labels", SUPPORT_LABEL),
                             f"ClusterTrainingRuntime {_d(_d(runtime).get('metadata')).get('name')!r} is deprecated and "
                             "will be removed in a future release of Kubeflow Trainer (runtime deprecation policy: "
                             f"{DEPRECATION_POLICY_URL})", True))
    base = ("spec", "template", "spec", "replicatedJobs")
    for i, rj in enumerate(replicated_jobs(runtime)):
        anc = _d(_d(_d(rj.get("template")).get("metadata")).get("labels")).get(ANCESTOR_LABEL)
        if anc not in ANCESTORS:
            continue
        if as_int(rj.get("replicas", ANCESTOR_JOB_REPLICAS)) != ANCESTOR_JOB_REPLICAS:
            out.append(Rejection(RULE_RUNTIME, base + (i, "replicas"),
                                 f"replicated job {rj.get('name')!r} ({anc}) must have replicas 1"))
        want = ANCESTOR_CONTAINERS[anc]
        if not any(c.get("name") == want for c in _containers(rj, ("containers",))):
            out.append(Rejection(RULE_RUNTIME, base + (i, "template", "spec", "template", "spec", "containers"),
                                 f"replicated job {rj.get('name')!r} ({anc}) has no container named {want!r}"))
    return out


def _deprecated(runtime) -> bool:
    return (_d(runtime).get("kind") == CLUSTER_TRAINING_RUNTIME
            and _d(_d(_d(runtime).get("metadata")).get("labels")).get(SUPPORT_LABEL) == SUPPORT_DEPRECATED)


def overrides(job: dict):
    """(pod spec path, pod spec patch, [(path of a job name, job name)]) for each 2.1 podTemplateOverride and
    each replicated job of a 2.2+ runtimePatch."""
    spec = _d(_d(job).get("spec"))
    for i, o in enumerate(_l(spec.get("podTemplateOverrides"))):
        names = [(("spec", "podTemplateOverrides", i, "targetJobs", j, "name"), _d(t).get("name"))
                 for j, t in enumerate(_l(_d(o).get("targetJobs")))]
        yield ("spec", "podTemplateOverrides", i, "spec"), _d(_d(o).get("spec")), names
    for i, p in enumerate(_l(spec.get("runtimePatches"))):
        base = ("spec", "runtimePatches", i, "trainingRuntimeSpec", "template", "spec", "replicatedJobs")
        for j, rj in enumerate(_l(_d(_d(_d(_d(p).get("trainingRuntimeSpec")).get("template")).get("spec")).get("replicatedJobs"))):
            ps = _d(_d(_d(_d(_d(rj).get("template")).get("spec")).get("template")).get("spec"))
            yield base + (j, "template", "spec", "template", "spec"), ps, [(base + (j, "name"), _d(rj).get("name"))]


def _domain_prefixed_path(value: str) -> list[str]:
    """k8s.io/apimachinery pkg/util/validation/validation.go IsDomainPrefixedPath: an RFC 1123 subdomain, `/`,
    then HTTP path characters (httpPathFmt)."""
    if not value:
        return ["Required value"]
    host, sep, path = value.partition("/")
    if not sep or not host or not path:
        return ['must be a domain-prefixed path (such as "acme.io/foo")']
    out = []
    if len(host) > 253 or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", host):
        out.append(f"{host!r} must be a lowercase RFC 1123 subdomain")
    if not re.fullmatch(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+", path):
        out.append(f"{path!r}: Invalid path")
    return out


# pkg/runtime/runtime.go GetNumGPUPerNode and torch.go getNumCPUPerNode (v2.1.0, v2.3.0): what torch's
# numProcPerNode rule and torchtune's recipe choice count per node.
GPU_MARKER = "gpu"


def gpus_per_node(res) -> int:
    """runtime.GetNumGPUPerNode: the first resource whose name contains "gpu", requests before limits."""
    res = res if isinstance(res, dict) else {}

    def num(rl):
        for k, v in (rl or {}).items() if isinstance(rl, dict) else ():
            if GPU_MARKER in str(k).lower():
                return quantity_value(v)
        return 0
    g = num(res.get("requests"))
    return g if g else num(res.get("limits"))


def cpus_per_node(res) -> int:
    """torch.go getNumCPUPerNode: the CPU request (rounded up) unless absent or zero, else the CPU limit."""
    res = res if isinstance(res, dict) else {}
    req = (res.get("requests") or {}).get("cpu") if isinstance(res.get("requests"), dict) else None
    if req is None or quantity_value(req) == 0:
        lim = (res.get("limits") or {}).get("cpu") if isinstance(res.get("limits"), dict) else None
        return quantity_value(lim)
    return quantity_value(req)


def runtime_node_resources(runtime) -> dict | None:
    """runtime.ExtractResourcePerNodeFromRuntime: the resources of the `node` container of the first
    replicated job named `node` or labelled as the trainer."""
    for rj in replicated_jobs(runtime):
        anc = _d(_d(_d(rj.get("template")).get("metadata")).get("labels")).get(ANCESTOR_LABEL)
        if rj.get("name") == NODE or anc == ANCESTOR_TRAINER:
            for c in _containers(rj, ("containers",)):
                if c.get("name") == NODE and isinstance(c.get("resources"), dict):
                    return c["resources"]
    return None


def webhook_rejections(job, runtime, version: str) -> list:
    """What the TrainJob webhook refuses (runtime.ValidateObjects -> the plugins' Validate) of `job` against
    `runtime` (plain mappings) for Trainer `version` ("2.1" or "2.3"): torch.go Validate (reserved env,
    2.1's numProcPerNode words, 2.3's envInjection targets, torchtune), jobset.go Validate (initializer jobs,
    containers and 2.3's volume mount; override/patch targets, containers and env; 2.3's patch manager),
    volcano.go Validate (an empty queue annotation). Not here: what needs the cluster (a PriorityClass),
    the MPI, JAX, XGBoost and Flux plugins."""
    from . import torchtune as TT
    out: list = []
    v21 = not has_runtime_patches(version)
    spec = _d(_d(job).get("spec"))
    trainer = _d(spec.get("trainer"))
    rt_spec = _d(_d(runtime).get("spec"))
    rjobs = {str(r.get("name")): r for r in replicated_jobs(runtime)}
    names = {n: {str(c.get("name")) for c in _containers(r)} for n, r in rjobs.items()}
    if _deprecated(runtime):
        out.append(Rejection(RULE_WEBHOOK, ("spec", "runtimeRef", "name"),
                             f"referenced ClusterTrainingRuntime {_d(_d(runtime).get('metadata')).get('name')!r} is "
                             "deprecated and will be removed in a future release of Kubeflow Trainer (runtime "
                             f"deprecation policy: {DEPRECATION_POLICY_URL})", True))
    torch = _d(rt_spec.get("mlPolicy")).get("torch")
    if isinstance(torch, dict) and not (v21 and trainer.get("numProcPerNode") is None):
        # torch.go Validate (2.1 returns at once without trainer.numProcPerNode)
        if not v21:
            patched = {n: set(cs) for n, cs in names.items()}
            for _, ps, jobnames in overrides(job):
                for _, jn in jobnames:
                    if jn in patched:
                        patched[jn] |= {str(_d(c).get("name")) for k in ("containers", "initContainers")
                                        for c in _l(ps.get(k))}
            for t in _l(_d(torch.get("envInjection")).get("targets")):
                for cn in _l(_d(t).get("containerNames")):
                    if cn not in patched.get(str(_d(t).get("jobName")), set()):
                        out.append(Rejection(RULE_WEBHOOK, ("spec", "runtimeRef"),
                                             f"envInjection target podSet {_d(t).get('jobName')!r} container {cn!r} "
                                             "not found in runtime template"))
        npp = trainer.get("numProcPerNode")
        if v21 and isinstance(npp, str) and as_int(npp) is None and npp not in NUM_PROC_PER_NODE_WORDS_21:
            out.append(Rejection(RULE_WEBHOOK, ("spec", "trainer", "numProcPerNode"),
                                 f"numProcPerNode {npp!r}: must have an int value or {list(NUM_PROC_PER_NODE_WORDS_21)}"))
        for i, e in enumerate(_l(trainer.get("env"))):
            if _d(e).get("name") in RESERVED_ENV:
                out.append(Rejection(RULE_RESERVED_ENV, ("spec", "trainer", "env", i, "name"),
                                     f"{_d(e)['name']} is reserved: Trainer sets it for torchrun (the webhook: "
                                     "must not have reserved envs)"))
        if TT.is_torchtune(trainer.get("command")):
            res = trainer.get("resourcesPerNode")
            gpus = gpus_per_node(res if isinstance(res, dict) else runtime_node_resources(runtime))
            nodes = as_int(trainer.get("numNodes"), 1)
            nproc = as_int(npp) if as_int(npp) is not None else str(npp if npp is not None else "auto")
            name = str(_d(spec.get("runtimeRef")).get("name", ""))
            for path, msg in TT.rejections(name, nodes, nproc, gpus, [str(a) for a in _l(trainer.get("args"))],
                                           "2.1" if v21 else "2.3"):
                out.append(Rejection(RULE_WEBHOOK, path, msg))
    init = _d(spec.get("initializer"))
    for field, job_name in (("dataset", DATASET_INITIALIZER), ("model", MODEL_INITIALIZER)):
        if not isinstance(init.get(field), dict):
            continue
        if job_name not in rjobs:
            out.append(Rejection(RULE_WEBHOOK, ("spec", "runtimeRef"),
                                 f"runtime has no {job_name} job, which spec.initializer.{field} needs "
                                 f"(the webhook: must have {job_name} job when trainJob is configured with input "
                                 f"{field}Config)"))
        elif job_name not in names[job_name]:
            out.append(Rejection(RULE_WEBHOOK, ("spec", "runtimeRef"),
                                 f"the runtime's {job_name} job has no container named {job_name} "
                                 f"(the webhook: must have container with name - {job_name} in the {job_name} job)"))
        elif not v21 and not any(_d(m).get("name") == INITIALIZER_VOLUME
                                 for c in _containers(rjobs[job_name], ("containers",)) if c.get("name") == job_name
                                 for m in _l(c.get("volumeMounts"))):
            out.append(Rejection(RULE_WEBHOOK, ("spec", "runtimeRef"),
                                 f"container {job_name} of the runtime's {job_name} job mounts no volume named "
                                 f"{INITIALIZER_VOLUME!r} (the webhook: must have volumeMount with name - "
                                 f"{INITIALIZER_VOLUME} in container {job_name} of the {job_name} job)"))
    for i, p in enumerate(_l(spec.get("runtimePatches")) if not v21 else []):
        for msg in _domain_prefixed_path(str(_d(p).get("manager") or "")):
            out.append(Rejection(RULE_WEBHOOK, ("spec", "runtimePatches", i, "manager"),
                                 f"runtimePatches manager {_d(p).get('manager')!r}: {msg}"))
    for ps_path, ps, jobnames in overrides(job):
        for path, jn in jobnames:
            if jn not in rjobs:
                out.append(Rejection(RULE_OVERRIDE_TARGETS, path,
                                     f"replicated job {jn!r} is not in runtime {_d(_d(runtime).get('metadata')).get('name')!r} "
                                     f"(it has {', '.join(rjobs) or 'none'})"))
                continue
            for key in ("containers", "initContainers"):
                for k, c in enumerate(_l(ps.get(key))):
                    cname = _d(c).get("name")
                    if cname not in names[jn]:
                        out.append(Rejection(RULE_OVERRIDE_TARGETS, ps_path + (key, k, "name"),
                                             f"{key[:-1]} {cname!r} is not in job {jn!r} of the runtime (the patch "
                                             "would add a container without an image)"))
                    elif key == "containers" and cname in ENV_FORBIDDEN_CONTAINERS and _d(c).get("env"):
                        where = "spec.trainer.env" if cname == NODE else "spec.initializer"
                        out.append(Rejection(RULE_OVERRIDE_ENV, ps_path + (key, k, "env"),
                                             f"env for container {cname!r} may not be set here: use {where}"))
    volcano = _d(_d(rt_spec.get("podGroupPolicy")).get("volcano")) if "volcano" in _d(rt_spec.get("podGroupPolicy")) else None
    if volcano is not None:
        annotations = dict(_d(_d(_d(rt_spec.get("template")).get("metadata")).get("annotations")))
        for p in _l(spec.get("runtimePatches")):
            annotations.update(_d(_d(_d(_d(_d(p).get("trainingRuntimeSpec")).get("template")).get("metadata")).get("annotations")))
        if v21:
            annotations.update(_d(spec.get("annotations")))
        if annotations.get(SCHED.VOLCANO_QUEUE_ANNOTATION) == "":
            out.append(Rejection(RULE_WEBHOOK, ("spec", "annotations", SCHED.VOLCANO_QUEUE_ANNOTATION),
                                 "Volcano queue name must not be empty (the annotation "
                                 f"{SCHED.VOLCANO_QUEUE_ANNOTATION} on the runtime's template or a patch)"))
    return out

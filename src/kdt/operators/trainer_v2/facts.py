"""Kubeflow Trainer v2: TrainJob, TrainingRuntime, ClusterTrainingRuntime (`trainer.kubeflow.org/v1alpha1`).

Facts read from kubeflow/trainer (v2.1.0 and v2.3.0; the official CRDs of both
releases are the reference for version-specific fields). Paths are relative to
that repository.
"""
from __future__ import annotations

import re

from ...fields import as_int, quantity_value
from ..admission import Rejection
from . import shapes as SH

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

# The words numProcPerNode takes besides an integer, per shape: kdt.operators.trainer_v2.shapes (proc_words).

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


# The Helm chart each release publishes (charts/kubeflow-trainer at v2.1.0 and later; installed as
# oci://ghcr.io/kubeflow/charts/kubeflow-trainer, charts/kubeflow-trainer/README.md at v2.3.0).
HELM_CHART = "kubeflow-trainer"


checked_as = SH.checked_as   # the release another release is checked as (kdt.operators.trainer_v2.shapes)


def crd_releases(crd: dict) -> list[str]:
    """The releases whose TrainJob spec fields a TrainJob CustomResourceDefinition has (by
    TRAINJOB_SPEC_FIELDS; [] for any other CRD): a Trainer CRD in a repository pins its release."""
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    if spec.get("group") != GROUP or names.get("kind") != TRAINJOB:
        return []
    out = []
    for v in spec.get("versions") or []:
        try:
            fields = set(v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"])
        except (KeyError, TypeError):
            continue
        out += [release for release, known in TRAINJOB_SPEC_FIELDS.items() if fields == set(known)]
    return out


def spec_fields(version: str) -> tuple[str, ...]:
    return TRAINJOB_SPEC_FIELDS[SH.checked_as(version)]


def master_address(trainjob: str) -> str:
    """PET_MASTER_ADDR: `<trainjob>-node-0-0.<trainjob>` (plugins/torch/torch.go EnforceMLPolicy)."""
    return f"{trainjob}-{NODE}-0-0.{trainjob}"


def reserved_env_applies(command) -> bool:
    """The reserved-env check is skipped for the torchtune entrypoint (plugins/torch/torch.go)."""
    return list(command or []) != TORCHTUNE_ENTRYPOINT


# pkg/runtime/core/clustertrainingruntime.go and trainingruntime.go (v2.1.0, v2.3.0): the TrainJob webhook's
# refusal when the runtime its runtimeRef names does not exist ("specified clusterTrainingRuntime must be created
# before the TrainJob is created").
MISSING_RUNTIME_MESSAGE = "must be created before the TrainJob"


def missing_runtime(kind: str, name: str, cluster_file: str = "") -> str:
    """One line for a TrainJob whose runtime is defined neither in the files checked nor in the cluster file's
    `objects`: the runtime, and how to provide it (offline: lint trainjob-runtime-ref; live: beside the
    webhook's refusal)."""
    where = f"`objects` of {cluster_file}" if cluster_file else "`objects` of the cluster file (.kdt-cluster.yaml)"
    upstream = " (a runtime upstream ships: installed with Trainer's runtimes)" if name in UPSTREAM_RUNTIMES else ""
    return (f"{kind} {name!r}{upstream} is defined neither in the files checked nor in the cluster file: name its "
            f"file with this one (`kdt validate job.yaml runtime.yaml`, as `kubectl apply -f job.yaml -f runtime.yaml`"
            f" applies them together), or list what your cluster has installed under {where}")


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
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
# the CEL rule on TrainJobSpec.managedBy (trainjob_types.go, v2.1.0 and v2.3.0): these two values only
MANAGED_BY = (TRAINJOB_CONTROLLER, MULTIKUEUE)
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


def webhook_reencodes(job: dict) -> bool:
    """Whether Trainer's TrainJob defaulting webhook gives the whole TrainJob back re-encoded (every Quantity a
    string, so `cpu: 0.5` passes the CRD's int-or-string): v2.3.0 pkg/webhooks/trainjob_webhook.go
    TrainJobDefaulter.Default sets, on create, the `time` of each runtimePatch without one, and
    controller-runtime v0.24.1 pkg/webhook/admission/defaulter_custom.go Handle answers with a patch of the
    re-encoded object only when Default changed something (no patch otherwise: measured on Kubernetes v1.36.3,
    a TrainJob with `resourcesPerNode.requests.cpu: 1.5` and no runtimePatches is refused). Trainer v2.1.0 has
    no mutating webhook (and no runtimePatches)."""
    return any(isinstance(p, dict) and p.get("time") is None for p in _l(_d(_d(job).get("spec")).get("runtimePatches")))


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


# What a TrainJob can change in its runtime's pod template, per shape (the official CRDs,
# trainer.kubeflow.org_trainjobs.yaml: v2.1.0 podTemplateOverrides[].spec, v2.3.0
# runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec;
# pkg/apis/trainer/v1alpha1/trainjob_types.go PodTemplateOverride / PodSpecPatch). Both also take the pod
# template's metadata (labels, annotations). Every other pod field lives in the runtime only.
PATCH_POD_FIELDS = {
    "2.1": ("affinity", "containers", "imagePullSecrets", "initContainers", "nodeSelector", "schedulingGates",
            "serviceAccountName", "tolerations", "volumes"),
    "2.3": ("affinity", "containers", "imagePullSecrets", "initContainers", "nodeSelector", "schedulingGates",
            "securityContext", "serviceAccountName", "terminationGracePeriodSeconds", "tolerations", "volumes"),
}
# ... and in each container or init container it names (by `name`; env is refused for `node`, ENV_FORBIDDEN_CONTAINERS).
PATCH_CONTAINER_FIELDS = {
    "2.1": ("env", "name", "volumeMounts"),
    "2.3": ("env", "name", "securityContext", "volumeMounts"),
}
# The fields of spec.trainer (both releases' CRDs): what a TrainJob sets on the `node` container itself.
TRAINER_FIELDS = ("args", "command", "env", "image", "numNodes", "numProcPerNode", "resourcesPerNode")


def patch_fields(version: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(pod fields, container fields) a TrainJob of this Trainer release can patch."""
    key = SH.checked_as(version)
    return PATCH_POD_FIELDS[key], PATCH_CONTAINER_FIELDS[key]


# ---------------------------------------------------------------- the runtime snapshot (v2.3.0)
# pkg/runtime/core/snapshot.go (v2.3.0; v2.1.0 has none): the first reconcile of a TrainJob writes the runtime
# it reads to a ConfigMap `<trainjob>-runtime-snapshot` in the TrainJob's namespace (createRuntimeSnapshot,
# called by trainingruntime.go / clustertrainingruntime.go NewObjects), owned by the TrainJob (controller,
# blockOwnerDeletion), data key `runtime`, the runtime as sigs.k8s.io/yaml.Marshal writes it; later
# reconciles read the runtime from it (getRuntimeSnapshot), so a changed runtime does not change the JobSet.
RUNTIME_SNAPSHOT_SUFFIX = "-runtime-snapshot"
RUNTIME_SNAPSHOT_KEY = "runtime"
# The metadata the API server assigns, which the stored runtime (and so the snapshot) also carries.
SERVER_METADATA = ("creationTimestamp", "generation", "managedFields", "resourceVersion", "uid")


def has_runtime_snapshot(version: str) -> bool:
    return SH.version_key(version) >= (2, 3)     # snapshot.go is new in v2.3.0 (2.2 has none)


def snapshot_yaml(runtime: dict) -> str:
    """The runtime as snapshot.go writes it: sigs.k8s.io/yaml v1.6.0 Marshal (encoding/json, then go-yaml v2:
    keys sorted, lists at their key's indent, multi-line strings literal), resource quantities in
    resource.Quantity's canonical form (the typed object is marshalled again)."""
    import yaml

    from ...fields import exact_quantity, format_quantity

    def canon(x, parent=None):
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                if parent == "resources" and k in ("limits", "requests") and isinstance(v, dict):
                    out[k] = {rk: (format_quantity(*exact_quantity(rv)) if exact_quantity(rv) else rv)
                              for rk, rv in v.items()}
                else:
                    out[k] = canon(v, k)
            return out
        if isinstance(x, list):
            return [canon(v, parent) for v in x]
        return x

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper, s):
        # go-yaml v2 encode.go stringv: a string that would read as another type, or cannot be plain, is
        # double-quoted; one with a newline is a literal block
        if "\n" in s:
            style = "|"
        elif (not s or dumper.resolve(yaml.ScalarNode, s, (True, False)) != "tag:yaml.org,2002:str"
              or not dumper.analyze_scalar(s).allow_block_plain):
            style = '"'
        else:
            style = None
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style=style)
    _Dumper.add_representer(str, _str)
    return yaml.dump(canon(runtime), Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True)


def runtime_snapshot(trainjob: dict, runtime: dict) -> dict:
    """The ConfigMap snapshot.go createRuntimeSnapshot applies for `trainjob` (its uid, assigned by the API
    server, is left out of the owner reference)."""
    meta = _d(_d(trainjob).get("metadata"))
    cm_meta = {"name": f"{meta.get('name')}{RUNTIME_SNAPSHOT_SUFFIX}"}
    if meta.get("namespace"):
        cm_meta["namespace"] = meta["namespace"]
    cm_meta["ownerReferences"] = [{"apiVersion": API_VERSION, "kind": TRAINJOB, "name": meta.get("name"),
                                   "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": cm_meta,
            "data": {RUNTIME_SNAPSHOT_KEY: snapshot_yaml(runtime)}}

# the status conditions (type, status True) that end a job: (succeeded, failed) (trainer v2.3.0 pkg/apis/trainer/v1alpha1 trainjob_types.go TrainJobComplete, TrainJobFailed)
TRAINJOB_ENDS = ("Complete", "Failed")

"""TrainJob + (Cluster)TrainingRuntime (Trainer v2.1.0 / v2.3.0) -> the JobSet, the PodGroup, and on through
JobSet (kdt.operators.jobset.expand) the headless Service, the Jobs and their pods.

The controller's order (kubeflow/trainer; each step names the release where they differ):
0. The webhooks: the runtime's (pkg/webhooks/trainingruntime_webhook.go) and the TrainJob's (the plugins'
   Validate, kdt.operators.trainer_v2.webhook.webhook_rejections, the same the lint rules report): what they
   refuse is the preview's finding, and nothing is created. A TrainJob another controller manages
   (spec.managedBy) is held; a runtime whose ML policy is a plugin the preview does not model (MPI, JAX,
   XGBoost, Flux) is said to be so, not guessed.
1. pkg/runtime/core/trainingruntime.go newRuntimeInfo: the runtime's JobSet template with 2.1's
   podTemplateOverrides (a strategic merge on each target job's pod template; spec.labels/annotations
   onto the JobSet) or 2.3's runtimePatches (a strategic merge on the JobSet spec, replicated jobs by
   name; the patches' labels/annotations onto the JobSet); 2.3 merges trainer.resourcesPerNode into the
   `node` container's resources key by key (MergeResourceRequirements). One pod set per replicated job:
   its count (parallelism, or the trainer's mlPolicy.numNodes) and one pod's requests (PodRequests).
2. The ML policy plugins: torch (plugins/torch/torch.go EnforceMLPolicy: node count, numProcPerNode, the
   trainer env then PET_* upserted, port 29500, the torchtune command, 2.3's envInjection) or PlainML
   (plainml.go: node count and trainer env); the pod group plugins (coscheduling.go, volcano.go: a pod
   label or annotation, and the PodGroup with minMember and minResources).
3. pkg/runtime/framework/plugins/jobset (jobset.go Build, builder.go): parallelism = completions = the pod
   set's count on every replicated job; the initializers' replicas 1, STORAGE_URI, env and secretRef; the
   trainer job's replicas 1, image, command, args (2.1: resources replaced by resourcesPerNode) and env;
   the scheduler's pod labels and annotations; the TrainJob's suspend.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ... import versions
from ...documents import Document
from ...fields import as_int, exact_quantity, format_quantity
from ...findings import WARNING, Finding
from .. import injection as INJ
from ..jobset import facts as JS
from .. import scheduling as SCHED
from .. import tensorflow as TF
from . import torchtune as TT
from . import facts as TV2
from . import shapes as SH
from . import webhook as TVW
from ..jobset import expand as XJ
from ...expand.merge import Trace, clone, ensure_dict, ensure_list, find, merge_list, put, strategic_merge, upsert
from ...expand.model import Expanded, Held, Limit, LoadFn

RULE = "expand"
TORCH = "Trainer torch plugin (plugins/torch/torch.go)"
BUILDER = "Trainer JobSet builder (plugins/jobset/builder.go, jobset.go Build)"
CORE = "Trainer runtime (pkg/runtime/core/trainingruntime.go newRuntimeInfo)"
GANG = "Trainer pod group plugin"
NOT_MODELLED = ("mpi", "jax", "xgboost", "flux")


def infer_version(trainjob: dict) -> str:
    """The Trainer release a TrainJob is written for, from the fields it uses."""
    shape = SH.of_trainjob(trainjob.get("spec") or {})
    return shape.key if shape is not None else versions.TRAINER_DEFAULT


find_runtime = TV2.find_runtime   # one resolution rule for lint and preview


gpus_per_node, cpus_per_node = TV2.gpus_per_node, TV2.cpus_per_node


def num_proc_per_node(value, resources, version: str = versions.TRAINER_DEFAULT) -> tuple[str, str]:
    """(PET_NPROC_PER_NODE, why): torch.go EnforceMLPolicy. "auto" without a GPU (2.1: also "cpu") is the
    CPU count per node (requests first, at least 1); an integer, "gpu", or "auto" with GPUs stays."""
    v = str(value if value is not None else INJ.V2_DEFAULT_NUM_PROC_PER_NODE)
    res = resources if isinstance(resources, dict) else {}
    cpu_words = SH.of(version).cpu_words
    if v in cpu_words and (v == "cpu" or gpus_per_node(res) == 0):
        n = max(INJ.V2_CPU_FALLBACK, cpus_per_node(res))
        where = ("no resources per node" if not res else
                 "its CPU request" if cpus_per_node({"requests": res.get("requests")}) else
                 "its CPU limit" if cpus_per_node({"limits": res.get("limits")}) else "no CPU quantity")
        return str(n), (f"numProcPerNode {v}" + (" (default)" if value is None else "") +
                        f": no GPU per node, so the CPUs per node ({where}; at least 1)")
    return v, f"numProcPerNode {v}" + (" (default)" if value is None else "") + (
        ": a GPU per node, torchrun counts them" if v == "auto" else "")


def _ancestor(rjob: dict) -> str | None:
    labels = (((rjob.get("template") or {}).get("metadata") or {}).get("labels") or {})
    return labels.get(TV2.ANCESTOR_LABEL) if isinstance(labels, dict) else None


def _pod_spec(rjob: dict) -> dict:
    return ensure_dict(ensure_dict(ensure_dict(ensure_dict(rjob, "template"), "spec"), "template"), "spec")


def _pod_requests(pod: dict) -> dict:
    """k8s.io/component-helpers resource PodRequests: the containers' requests summed, at least the largest
    init container's (regular init containers run one at a time); name -> (Fraction, binary)."""
    def add(into, rl):
        for k, v in (rl or {}).items() if isinstance(rl, dict) else ():
            q = exact_quantity(v)
            if q is not None:
                cur = into.get(k, (0, q[1]))
                into[k] = (cur[0] + q[0], cur[1])
    total: dict = {}
    for c in pod.get("containers") or []:
        if isinstance(c, dict):
            add(total, (c.get("resources") or {}).get("requests") if isinstance(c.get("resources"), dict) else None)
    for c in pod.get("initContainers") or []:
        if isinstance(c, dict) and isinstance(c.get("resources"), dict):
            one: dict = {}
            add(one, c["resources"].get("requests"))
            for k, (v, b) in one.items():
                if v > total.get(k, (0, b))[0]:
                    total[k] = (v, b)
    return total


@dataclass
class PodSet:
    """runtime.PodSet: one replicated job as the plugins see it."""
    index: int
    name: str
    ancestor: str | None
    count: int
    count_why: str
    requests: dict = field(default_factory=dict)


@dataclass
class _Build:
    """What the controller's steps share while it builds one TrainJob's objects."""
    job: Document
    spec: dict                       # the TrainJob's spec (a fresh copy)
    trainer: dict                    # its spec.trainer ({} when absent)
    has_trainer: bool
    version: str
    rt_doc: Document
    runtime: dict                    # the runtime (a fresh copy)
    rt_spec: dict
    template: dict                   # runtime spec.template (the JobSet template)
    js_spec: dict
    rjobs: list
    ml: dict | None
    trace: Trace = field(default_factory=Trace)
    findings: list = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    js_labels: dict = field(default_factory=dict)
    js_annotations: dict = field(default_factory=dict)
    label_origin: dict = field(default_factory=dict)
    pod_labels: dict = field(default_factory=dict)        # info.Scheduler.PodLabels
    pod_annotations: dict = field(default_factory=dict)   # info.Scheduler.PodAnnotations
    podsets: list = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [str(r.get("name")) for r in self.rjobs if isinstance(r, dict)]

    @property
    def shape(self) -> SH.Shape:
        return SH.of(self.version)

    def trainer_set(self) -> PodSet | None:
        return next((ps for ps in self.podsets if ps.ancestor == TV2.ANCESTOR_TRAINER), None)


SPEC = ("spec",)   # paths below are in the JobSet object: its spec is the runtime's spec.template.spec


def _check_release_fields(job: Document, spec: dict, version: str) -> list[Finding]:
    """Fields the TrainJob of this Trainer release does not have, and 2.2+'s integer numProcPerNode."""
    out = []
    allowed = TV2.spec_fields(version)
    for key in spec:
        if key not in allowed:
            other = [v for v in TV2.TRAINJOB_SPEC_FIELDS if key in TV2.TRAINJOB_SPEC_FIELDS[v]]
            instead = [s for s in SH.SHAPES if s.pod_changes != key] if key in {s.pod_changes for s in SH.SHAPES} else []
            hint = f" (a Trainer {'/'.join(other)} field" + "".join(
                f"; {s.label} has {s.pod_changes} instead" for s in instead) + ")" if other else ""
            out.append(job.finding(RULE, f"spec.{key} is not a field of TrainJob in Trainer {version}{hint}",
                                   ("spec", key)))
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else {}
    npp = trainer.get("numProcPerNode")
    if not SH.of(version).proc_words and npp is not None and as_int(npp) is None:
        out.append(job.finding(RULE, f"numProcPerNode {npp!r}: Trainer {version} takes an integer only "
                               "(2.1 also took auto/cpu/gpu)", ("spec", "trainer", "numProcPerNode")))
    return out


# ---------------------------------------------------------------- 1. newRuntimeInfo
def _apply_overrides(b: _Build) -> None:
    """2.1 mergePodTemplateOverrides: a strategic merge on each target job's pod template; spec.labels and
    spec.annotations onto the JobSet (they override the template's)."""
    for i, ov in enumerate(b.spec.get("podTemplateOverrides") or []):
        if not isinstance(ov, dict):
            continue
        targets = [t.get("name") for t in (ov.get("targetJobs") or []) if isinstance(t, dict)]
        for k, rj in enumerate(b.rjobs):
            if rj.get("name") not in targets:
                continue
            pod_tmpl = ensure_dict(ensure_dict(ensure_dict(rj, "template"), "spec"), "template")
            patch: dict = {}
            meta = ov.get("metadata") or {}
            pmeta = {x: meta[x] for x in ("labels", "annotations") if meta.get(x) is not None}
            if pmeta:
                patch["metadata"] = pmeta
            if isinstance(ov.get("spec"), dict):
                patch["spec"] = ov["spec"]
            strategic_merge(pod_tmpl, patch, SPEC + ("replicatedJobs", k, "template", "spec", "template"), b.trace,
                            f"TrainJob spec.podTemplateOverrides[{i}] (strategic merge, trainingruntime.go "
                            "mergePodTemplateOverrides)")
    for key, into in (("labels", b.js_labels), ("annotations", b.js_annotations)):
        for k, v in (b.spec.get(key) or {}).items():
            into[k] = v
            b.label_origin[("metadata", key, k)] = f"TrainJob spec.{key}"


def _apply_patches(b: _Build) -> None:
    """2.3 mergeRuntimePatches: each patch a strategic merge on the JobSet spec (replicated jobs merge by
    name, jobset v0.12.0 JobSetSpec), the runtime's order kept; the patches' labels and annotations onto
    the JobSet."""
    for i, rp in enumerate(b.spec.get("runtimePatches") or []):
        tmpl = ((rp.get("trainingRuntimeSpec") or {}).get("template") or {}) if isinstance(rp, dict) else {}
        origin = (f"TrainJob spec.runtimePatches[{i}] (manager {rp.get('manager', '')}; strategic merge, "
                  "trainingruntime.go mergeRuntimePatches)")
        tmeta = tmpl.get("metadata") or {}
        for key, into in (("labels", b.js_labels), ("annotations", b.js_annotations)):
            for k, v in (tmeta.get(key) or {}).items():
                into[k] = v
                b.label_origin[("metadata", key, k)] = origin
        patch_jobs = [pj for pj in ((tmpl.get("spec") or {}).get("replicatedJobs") or []) if isinstance(pj, dict)]
        # strategicpatch.StrategicMergePatch on the JobSetSpec (replicatedJobs merge by name, jobset v0.12.0
        # jobset_types.go), the lists inside in the order it gives (kdt.expand.merge.merge_list); then
        # mergeRuntimePatches sorts replicatedJobs back into the runtime's order.
        merge_list(b.rjobs, patch_jobs, "name", SPEC + ("replicatedJobs",), b.trace, origin, keep_order=True)


def _defaults(b: _Build) -> None:
    """What the runtime's CRD defaults on each replicated job (jobset_types.go: replicas 1)."""
    for k, rj in enumerate(b.rjobs):
        if rj.get("replicas") is None:
            put(rj, "replicas", JS.DEFAULT_REPLICAS, SPEC + ("replicatedJobs", k), b.trace,
                "the runtime CRD's default (jobset_types.go ReplicatedJob.replicas)")


def _merge_resources(b: _Build) -> None:
    """2.3: resourcesPerNode merged key by key into the trainer job's `node` container (with an ML policy)."""
    res = b.trainer.get("resourcesPerNode")
    if not b.shape.merges_resources or not isinstance(res, dict) or b.ml is None:
        return
    for k, rj in enumerate(b.rjobs):
        if _ancestor(rj) != TV2.ANCESTOR_TRAINER:
            continue
        ps = _pod_spec(rj)
        ci = find(ps.get("containers"), "name", TV2.NODE)
        if ci < 0:
            continue
        c = ps["containers"][ci]
        base = ensure_dict(c, "resources")
        strategic_merge(base, clone({key: res[key] for key in ("limits", "requests", "claims") if res.get(key)}),
                        SPEC + ("replicatedJobs", k, "template", "spec", "template", "spec", "containers", ci, "resources"),
                        b.trace, "TrainJob spec.trainer.resourcesPerNode (merged key by key, 2.3 "
                                 "trainingruntime.go MergeResourceRequirements)")
        return


def _podsets(b: _Build) -> None:
    """One pod set per replicated job (runtime.WithPodSet): count = parallelism (default 1), the trainer's =
    mlPolicy.numNodes (default 1) when the runtime has an ML policy; at least 1; one pod's requests."""
    for k, rj in enumerate(b.rjobs):
        jspec = ((rj.get("template") or {}).get("spec") or {})
        count, why = as_int(jspec.get("parallelism"), 1), "its parallelism (default 1)"
        anc = _ancestor(rj)
        if anc == TV2.ANCESTOR_TRAINER and b.ml is not None:
            count = as_int(b.ml.get("numNodes"), 1)
            why = "runtime spec.mlPolicy.numNodes" if b.ml.get("numNodes") is not None else "default 1"
        b.podsets.append(PodSet(k, str(rj.get("name")), anc, max(count, 1), why, _pod_requests(_pod_spec(rj))))


# ---------------------------------------------------------------- 2. the plugins
def _node_container(b: _Build) -> tuple[int, dict, tuple] | None:
    """FindContainerByPodSetAncestorContainerName(trainer, node): (job index, container, path)."""
    ps = b.trainer_set()
    if ps is None:
        return None
    pod = _pod_spec(b.rjobs[ps.index])
    ci = find(pod.get("containers"), "name", TV2.NODE)
    if ci < 0:
        return None
    return ps.index, pod["containers"][ci], SPEC + ("replicatedJobs", ps.index, "template", "spec", "template",
                                                     "spec", "containers", ci)


def _trainer_count(b: _Build, plugin: str) -> None:
    ps = b.trainer_set()
    if ps is not None and b.has_trainer and b.trainer.get("numNodes") is not None:
        ps.count, ps.count_why = as_int(b.trainer["numNodes"], ps.count), f"TrainJob spec.trainer.numNodes ({plugin})"


def _upsert_trainer_env(b: _Build, c: dict, cp: tuple, plugin: str) -> None:
    for e in b.trainer.get("env") or []:
        if isinstance(e, dict):
            upsert(ensure_list(c, "env"), "name", clone(e), cp + ("env",), b.trace,
                   f"{plugin}: TrainJob spec.trainer.env (upsert by name)")


def _upsert_port(ports: list, port: dict, path: tuple, trace: Trace, origin: str) -> None:
    """apply.UpsertPort: an existing port with the same containerPort, or the same name (two unnamed ports
    match), is replaced."""
    for i, p in enumerate(ports):
        if isinstance(p, dict) and (p.get("containerPort") == port.get("containerPort") or p.get("name") == port.get("name")):
            ports[i] = port
            trace.note(path + (i,), origin)
            return
    ports.append(port)
    trace.note(path + (len(ports) - 1,), origin)


def _runtime_resources(b: _Build) -> dict | None:
    """ExtractResourcePerNodeFromRuntime on the runtime as patched (kdt.operators.trainer_v2.facts)."""
    return TV2.runtime_node_resources({"spec": {"template": {"spec": {"replicatedJobs": b.rjobs}}}})


def _torch(b: _Build) -> None:
    """torch.go EnforceMLPolicy."""
    torch = b.ml.get("torch") if isinstance(b.ml, dict) else {}
    _trainer_count(b, "torch.go")
    ps = b.trainer_set()
    nodes = ps.count if ps is not None else 1
    npp = b.trainer.get("numProcPerNode") if b.has_trainer else None
    if npp is None and b.shape.runtime_nproc:
        npp = (torch or {}).get("numProcPerNode")        # 2.1: the runtime's, then the TrainJob's
    res = b.trainer.get("resourcesPerNode") if b.has_trainer and b.trainer.get("resourcesPerNode") is not None else None
    if res is None:
        res = _runtime_resources(b)
    gpus = gpus_per_node(res)
    nproc, nproc_why = num_proc_per_node(npp, res, b.version)
    b.facts["nproc_per_node"] = nproc
    b.facts["nodes"] = nodes
    nc = _node_container(b) if b.has_trainer else None
    pet = [({"name": INJ.V2_ENV_NNODES, "value": str(nodes)}, f"node count, from {ps.count_why if ps else 'default 1'}"),
           ({"name": INJ.V2_ENV_NPROC, "value": nproc}, nproc_why),
           ({"name": INJ.V2_ENV_NODE_RANK, "valueFrom": {"fieldRef": {"fieldPath": INJ.V2_COMPLETION_INDEX_FIELD}}},
            "the Job completion index")]
    master = [({"name": INJ.V2_ENV_MASTER_ADDR, "value": TV2.master_address(b.job.name)}, "<trainjob>-node-0-0.<trainjob>"),
              ({"name": INJ.V2_ENV_MASTER_PORT, "value": str(TV2.TRAINER_PORT)}, "ContainerTrainerPort")]
    if nc is not None:
        k, c, cp = nc
        _upsert_trainer_env(b, c, cp, TORCH)
        tune = TT.is_torchtune(b.trainer.get("command"))
        for entry, why in pet + ([] if tune else master):
            upsert(ensure_list(c, "env"), "name", entry, cp + ("env",), b.trace, f"{TORCH}: {why}")
        if tune:
            rt_cmd = [str(x) for x in (c.get("command") or [])]
            tnproc = as_int(nproc) if as_int(nproc) is not None else nproc
            b.trainer["command"] = list(b.trainer["command"]) + TT.command(
                b.job.name, nodes, tnproc, gpus, [str(a) for a in b.trainer.get("args") or []], b.rt_doc.name, rt_cmd,
                b.shape)
            b.facts["torchtune"] = True
        _upsert_port(ensure_list(c, "ports"), {"containerPort": TV2.TRAINER_PORT}, cp + ("ports",), b.trace,
                     f"{TORCH}: port for the JobSet's headless service")
        b.facts["master"] = f"{TV2.master_address(b.job.name)}:{TV2.TRAINER_PORT}"
    if b.shape.env_injection:
        for t in ((torch or {}).get("envInjection") or {}).get("targets") or []:
            _env_injection(b, t, pet + master)
    if as_int(nproc) is not None:
        b.facts["world_size"] = nodes * int(nproc)
    elif nproc == "auto" and gpus:
        b.facts["nproc_effective"] = gpus     # torchrun's own "auto": one process per visible GPU
        b.facts["world_size"] = nodes * gpus


def _env_injection(b: _Build, target: dict, envs: list) -> None:
    """2.3 envInjection: the PET_* env (master address and port too) upserted into each named container or
    init container of the named replicated job."""
    if not isinstance(target, dict):
        return
    for k, rj in enumerate(b.rjobs):
        if rj.get("name") != target.get("jobName"):
            continue
        pod = _pod_spec(rj)
        for cn in target.get("containerNames") or []:
            for key in ("containers", "initContainers"):
                ci = find(pod.get(key), "name", cn)
                if ci >= 0:
                    cp = SPEC + ("replicatedJobs", k, "template", "spec", "template", "spec", key, ci, "env")
                    for entry, why in envs:
                        upsert(ensure_list(pod[key][ci], "env"), "name", clone(entry), cp, b.trace,
                               f"{TORCH}: envInjection target {target.get('jobName')}/{cn}: {why}")
                    break


def _plain_ml(b: _Build) -> None:
    """plainml.go: the node count and trainer.env; a TensorFlow runtime of this project's convention gets
    each pod's TF_CONFIG as its entrypoint builds it (kdt.operators.tensorflow)."""
    _trainer_count(b, "plainml.go")
    nc = _node_container(b) if b.has_trainer else None
    if nc is None:
        return
    k, c, cp = nc
    _upsert_trainer_env(b, c, cp, "Trainer PlainML plugin (plainml.go)")
    nodes = b.trainer_set().count
    b.facts["nodes"] = nodes
    env_map = {e.get("name"): (None if "valueFrom" in e else e.get("value"))   # valueFrom entries map to None
               for e in c.get("env") or [] if isinstance(e, dict)}
    cfgs = TF.pod_tf_configs(env_map, b.job.name, str(b.rjobs[k].get("name")), 0,
                             b.facts.get("limit", Limit()).shown(nodes), JS.subdomain(b.js_spec, b.job.name))
    if cfgs is not None:
        b.facts["tf_config"] = cfgs
        b.facts["world_size"] = nodes


def _pod_group_policy(b: _Build) -> None:
    """coscheduling.go / volcano.go EnforcePodGroupPolicy: the pod label or annotation naming the group."""
    pgp = b.rt_spec.get("podGroupPolicy") if isinstance(b.rt_spec.get("podGroupPolicy"), dict) else {}
    if isinstance(pgp.get("coscheduling"), dict):
        b.pod_labels[SCHED.COSCHEDULING_POD_LABEL] = b.job.name
    if isinstance(pgp.get("volcano"), dict):
        b.pod_annotations[SCHED.VOLCANO_GROUP_ANNOTATION] = b.job.name


def _pod_group(b: _Build) -> Expanded | None:
    """The PodGroup (coscheduling.go / volcano.go Build): minMember = the pod sets' counts, minResources =
    each set's one-pod requests times its count; coscheduling's scheduleTimeoutSeconds, Volcano's queue
    (the JobSet's queue-name annotation), priority class and network topology."""
    pgp = b.rt_spec.get("podGroupPolicy") if isinstance(b.rt_spec.get("podGroupPolicy"), dict) else {}
    cos, vol = pgp.get("coscheduling"), pgp.get("volcano")
    if not isinstance(cos, dict) and not isinstance(vol, dict):
        return None
    members = sum(ps.count for ps in b.podsets)
    total: dict = {}
    for ps in b.podsets:
        for k, (v, binary) in ps.requests.items():
            cur = total.get(k, (0, binary))
            total[k] = (cur[0] + v * ps.count, cur[1])
    resources = {k: format_quantity(v, binary) for k, (v, binary) in total.items()}
    meta = {"name": b.job.name}
    if b.job.namespace:
        meta["namespace"] = b.job.namespace
    trace = Trace()
    if isinstance(cos, dict):
        spec = {"minMember": members, "minResources": resources}
        if cos.get("scheduleTimeoutSeconds") is not None:
            spec["scheduleTimeoutSeconds"] = cos["scheduleTimeoutSeconds"]
        api, origin = SCHED.COSCHEDULING_API, f"{GANG} (plugins/coscheduling/coscheduling.go Build)"
    else:
        spec = {"minMember": members, "minResources": resources}
        queue = b.js_annotations.get(SCHED.VOLCANO_QUEUE_ANNOTATION)
        if queue is not None:
            spec["queue"] = queue
        for rj in b.rjobs:
            pcn = _pod_spec(rj).get("priorityClassName")
            if pcn:
                spec["priorityClassName"] = pcn
        topo = vol.get("networkTopology") if isinstance(vol, dict) else None
        if isinstance(topo, dict):
            spec["networkTopology"] = {"mode": topo.get("mode"), "highestTierAllowed": topo.get("highestTierAllowed")}
        api, origin = SCHED.VOLCANO_API, f"{GANG} (plugins/volcano/volcano.go Build)"
    trace.note(("spec", "minMember"), f"{origin}: the pods of every replicated job")
    trace.note(("spec", "minResources"), f"{origin}: each replicated job's one-pod requests x its pods (PodRequests)")
    obj = {"apiVersion": api, "kind": "PodGroup", "metadata": meta, "spec": spec}
    return Expanded(obj=obj, source=b.job, base=None, base_doc=b.rt_doc, base_path=("spec", "podGroupPolicy"),
                    trace=trace, facts={"min_member": members})


# ---------------------------------------------------------------- 3. the JobSet builder
def _build(b: _Build) -> None:
    """jobset.go Build and builder.go: parallelism/completions, initializers, trainer, pod labels, suspend."""
    for ps in b.podsets:
        jp = SPEC + ("replicatedJobs", ps.index, "template", "spec")
        jspec = ensure_dict(ensure_dict(b.rjobs[ps.index], "template"), "spec")
        for key in ("parallelism", "completions"):
            put(jspec, key, ps.count, jp, b.trace, f"{BUILDER}: the pod set's count, from {ps.count_why}")
    _initializers(b)
    _trainer(b)
    for k, rj in enumerate(b.rjobs):
        mp = SPEC + ("replicatedJobs", k, "template", "spec", "template", "metadata")
        for key, values in (("labels", b.pod_labels), ("annotations", b.pod_annotations)):
            if values:
                pmeta = ensure_dict(ensure_dict(ensure_dict(ensure_dict(rj, "template"), "spec"), "template"), "metadata")
            for name, value in values.items():
                put(ensure_dict(pmeta, key), name, value, mp + (key,), b.trace,
                    f"{GANG}: the PodGroup's name (builder.go PodLabels/PodAnnotations)")
    # jobset.go Build: Suspend(trainJob.Spec.Suspend), copied as the API server stored it; the TrainJob CRD
    # defaults it to false (trainjob_types.go `+kubebuilder:default=false`, v2.1.0 and v2.3.0), so the JobSet
    # always has it (test/integration/controller/trainjob_controller_test.go compares Suspend on every JobSet).
    suspend = b.spec.get("suspend")
    put(b.js_spec, "suspend", suspend if suspend is not None else False, SPEC, b.trace,
        f"{BUILDER}: TrainJob spec.suspend" + ("" if suspend is not None else
                                              " (the TrainJob CRD's default false, trainjob_types.go)"))


def _initializers(b: _Build) -> None:
    """builder.go Initializer: initializer jobs get 1 replica, STORAGE_URI, their env and the secretRef."""
    init = b.spec.get("initializer") if isinstance(b.spec.get("initializer"), dict) else {}
    for k, rjob in enumerate(b.rjobs):
        anc = _ancestor(rjob)
        if anc not in (TV2.DATASET_INITIALIZER, TV2.MODEL_INITIALIZER):
            continue
        jp = SPEC + ("replicatedJobs", k)
        put(rjob, "replicas", 1, jp, b.trace, f"{BUILDER}: initializer jobs have 1 replica")
        field_name = "dataset" if anc == TV2.DATASET_INITIALIZER else "model"
        which = init.get(field_name)
        pspec = _pod_spec(rjob)
        ci = find(pspec.get("containers"), "name", anc)
        if ci < 0 or not isinstance(which, dict):
            continue
        cont = pspec["containers"][ci]
        cp = jp + ("template", "spec", "template", "spec", "containers", ci)
        if which.get("storageUri") is not None:
            upsert(ensure_list(cont, "env"), "name", {"name": INJ.V2_INITIALIZER_ENV_STORAGE_URI, "value": which["storageUri"]},
                   cp + ("env",), b.trace, f"{BUILDER}: TrainJob spec.initializer.{field_name}.storageUri")
        for e in which.get("env") or []:
            if isinstance(e, dict):
                upsert(ensure_list(cont, "env"), "name", clone(e), cp + ("env",), b.trace,
                       f"{BUILDER}: TrainJob spec.initializer.{field_name}.env")
        ref = which.get("secretRef")
        if isinstance(ref, dict):
            env_from = ensure_list(cont, "envFrom")
            env_from.append({"secretRef": {"name": ref.get("name")}})
            b.trace.note(cp + ("envFrom", len(env_from) - 1), f"{BUILDER}: TrainJob spec.initializer.{field_name}.secretRef")


def _trainer(b: _Build) -> None:
    """builder.go Trainer: the trainer job's replicas 1; on its `node` container the TrainJob's image,
    command and args, 2.1's resources (the block replaced by resourcesPerNode), and its env upserted."""
    for k, rj in enumerate(b.rjobs):
        if _ancestor(rj) != TV2.ANCESTOR_TRAINER:
            continue
        jp = SPEC + ("replicatedJobs", k)
        put(rj, "replicas", INJ.V2_TRAINER_JOB_REPLICAS, jp, b.trace, f"{BUILDER}: the trainer job always has 1 replica")
        b.facts["trainer_job"] = str(rj.get("name"))
        pod = _pod_spec(rj)
        ci = find(pod.get("containers"), "name", TV2.NODE)
        if ci < 0 or not b.has_trainer:
            continue
        c = pod["containers"][ci]
        cp = jp + ("template", "spec", "template", "spec", "containers", ci)
        src = "TrainJob spec.trainer"
        for key in ("image", "command", "args"):
            if b.trainer.get(key) is not None:
                put(c, key, clone(b.trainer[key]), cp, b.trace,
                    f"{BUILDER}: {src}.{key}" + (" with the torchtune recipe the torch plugin appended"
                                                 if key == "command" and b.facts.get("torchtune") else ""))
        res = b.trainer.get("resourcesPerNode")
        if not b.shape.merges_resources and isinstance(res, dict) and (res.get("limits") is not None or res.get("requests") is not None):
            block = {key: clone(res[key]) for key in ("limits", "requests") if res.get(key) is not None}
            put(c, "resources", block, cp, b.trace, f"{BUILDER}: {src}.resourcesPerNode (2.1: replaces the block)")
        _upsert_trainer_env(b, c, cp, BUILDER)


def _jobset_object(b: _Build) -> dict:
    """The JobSet: named after the TrainJob, in its namespace, the propagated labels and annotations, the
    built spec; the pod names for the summary."""
    obj = type(b.runtime)()
    obj["apiVersion"] = JS.API_VERSION
    obj["kind"] = JS.KIND
    meta = type(b.runtime)()
    meta["name"] = b.job.name
    b.trace.note(("metadata", "name"), "Trainer: the JobSet is named after the TrainJob")
    if b.job.namespace:
        meta["namespace"] = b.job.namespace
    if b.js_labels:
        meta["labels"] = b.js_labels
    if b.js_annotations:
        meta["annotations"] = b.js_annotations
    for p, o in b.label_origin.items():
        b.trace.note(p, o)
    obj["metadata"] = meta
    obj["spec"] = b.js_spec
    return obj


def _children(b: _Build, js: dict, limit: Limit) -> list[Expanded]:
    """The JobSet and Job controllers' objects (kdt.operators.jobset.expand), each traced to its template."""
    built = XJ.build(js, frozenset(b.facts.get("jobset_gates") or ()), limit)
    b.facts["jobset_defaults"] = built.defaults     # the JobSet webhook's (jobset_webhook.go Default)
    if built.why_none:
        b.facts["held"] = built.why_none
    b.facts["pods"] = [p.name for p in built.pods]
    b.facts["pods_total"] = built.pods_total
    b.facts["jobs_total"] = built.jobs_total
    b.facts["elided"] = built.elided
    return XJ.expanded(built, b.job, b.rt_doc, ("spec", "template"))


def _snapshot(b: _Build) -> Expanded | None:
    """2.3: the runtime snapshot ConfigMap NewObjects writes before it builds (pkg/runtime/core/snapshot.go
    createRuntimeSnapshot, v2.3.0): the runtime as written; the stored one also has the API server's metadata
    (uid, resourceVersion, ...) and the CRD's defaults, which a preview cannot know."""
    if not TV2.has_runtime_snapshot(b.version):
        return None
    obj = TV2.runtime_snapshot(b.job.data, b.rt_doc.data)
    from ruamel.yaml.scalarstring import LiteralScalarString     # shown as a block, as kubectl get -o yaml does
    data = obj["data"]
    data[TV2.RUNTIME_SNAPSHOT_KEY] = LiteralScalarString(data[TV2.RUNTIME_SNAPSHOT_KEY])
    trace = Trace()
    origin = "Trainer runtime snapshot (pkg/runtime/core/snapshot.go createRuntimeSnapshot)"
    trace.note(("metadata", "name"), f"{origin}: <trainjob>{TV2.RUNTIME_SNAPSHOT_SUFFIX}")
    trace.note(("metadata", "ownerReferences"), f"{origin}: the TrainJob (its uid, which the API server assigns)")
    trace.note(("data", TV2.RUNTIME_SNAPSHOT_KEY),
               f"{origin}: {b.rt_doc.kind}/{b.rt_doc.name} as sigs.k8s.io/yaml writes it; the stored runtime also "
               f"has {', '.join(TV2.SERVER_METADATA)} and the CRD's defaults")
    return Expanded(obj=obj, source=b.job, base=None, base_doc=b.rt_doc, base_path=(), trace=trace,
                    facts={"runtime_snapshot": True})


def expand(job: Document, docs: list[Document], load: LoadFn, version: str | None = None,
           options: dict | None = None) -> tuple[list, list[Finding]]:
    options = options or {}
    limit: Limit = options.get("limit") or Limit()
    tj = load(job)
    spec = tj.get("spec") if isinstance(tj.get("spec"), dict) else {}
    ver = SH.checked_as(version or infer_version(job.data))
    findings = _check_release_fields(job, spec, version or infer_version(job.data))
    rt_doc = find_runtime(job, docs)
    if rt_doc is None:
        ref = spec.get("runtimeRef") or {}
        kind = ref.get("kind") or TV2.DEFAULT_RUNTIME_KIND
        findings.append(job.finding(RULE, f"runtimeRef {kind} {ref.get('name')!r} is not among the rendered documents; "
                                    "add its YAML to the inputs to preview the JobSet", ("spec", "runtimeRef", "name")))
        return [], findings
    if findings:
        return [], findings
    said = [rt_doc.finding(r.rule, r.message, r.path, level=WARNING if r.warning else "error")
            for r in TV2.runtime_rejections(rt_doc.data)]
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else {}
    said += [job.finding(r.rule, r.message, r.path, level=WARNING if r.warning else "error")
             for r in TVW.webhook_rejections(job.data, rt_doc.data, ver)]
    findings += said
    if any(f.level != WARNING for f in said):
        return [], findings
    managed = spec.get("managedBy")
    if managed is not None and managed != TV2.TRAINJOB_CONTROLLER:
        return [Held(job, f"spec.managedBy is {managed!r}: the TrainJob controller leaves the job to that controller "
                          "and creates nothing (pkg/util/trainjob IsManagedByExternalController)",
                     ("spec", "managedBy"))], findings
    runtime = load(rt_doc)
    rt_spec = runtime.get("spec") if isinstance(runtime.get("spec"), dict) else {}
    ml = rt_spec.get("mlPolicy") if isinstance(rt_spec.get("mlPolicy"), dict) else None
    other = [s for s in NOT_MODELLED if isinstance(ml, dict) and ml.get(s) is not None]
    if other:
        return [Held(job, f"runtime {rt_doc.kind}/{rt_doc.name} has mlPolicy.{other[0]}: the preview does not model "
                          f"Trainer's {other[0].upper()} plugin (docs/merge-preview.md) and shows nothing rather than "
                          "a guess", ("spec", "runtimeRef", "name"), {"not_modelled": other[0]})], findings
    template = rt_spec.get("template") if isinstance(rt_spec.get("template"), dict) else {}
    js_spec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    if not isinstance(js_spec.get("replicatedJobs"), list):
        js_spec["replicatedJobs"] = []
    js_spec["replicatedJobs"] = [r for r in js_spec["replicatedJobs"] if isinstance(r, dict)]
    b = _Build(job, spec, trainer, isinstance(spec.get("trainer"), dict), ver, rt_doc, runtime, rt_spec, template,
               js_spec, js_spec["replicatedJobs"], ml,
               js_labels=dict((template.get("metadata") or {}).get("labels") or {}),
               js_annotations=dict((template.get("metadata") or {}).get("annotations") or {}))
    b.facts.update({"version": ver, "runtime": f"{rt_doc.kind}/{rt_doc.name}", "limit": limit,
                    "jobset_gates": options.get("jobset_feature_gates") or ()})
    base = clone(template)

    # 1. newRuntimeInfo
    {SH.OVERRIDES: _apply_overrides, SH.PATCHES: _apply_patches}[b.shape.pod_changes](b)
    _defaults(b)
    _merge_resources(b)
    _podsets(b)
    if b.trainer_set() is None:
        b.findings.append(rt_doc.finding(RULE, f"runtime has no replicated job labelled {TV2.ANCESTOR_LABEL}: "
                                               f"{TV2.ANCESTOR_TRAINER}: the TrainJob's trainer settings apply nowhere",
                                         ("spec", "template", "spec", "replicatedJobs"), level=WARNING))
    # 2. the plugins
    sources = [key for key in (ml or {}) if key != "numNodes"]
    b.facts["ml_policy"] = sources[0] if sources else "none"
    if isinstance(ml, dict) and isinstance(ml.get("torch"), dict):
        _torch(b)
    else:
        _plain_ml(b)
    _pod_group_policy(b)
    # 3. the builder, the PodGroup, the JobSet and what its controllers make of it
    _build(b)
    obj = _jobset_object(b)
    del b.facts["limit"]
    out: list = []
    pg = _pod_group(b)
    jobset = Expanded(obj=obj, source=job, base=base, base_doc=rt_doc, base_path=("spec", "template"),
                      trace=b.trace, facts=b.facts)
    out.append(jobset)
    if pg is not None:
        out.append(pg)
    out += _children(b, obj, limit)
    snap = _snapshot(b)
    if snap is not None:
        out.append(snap)
    if isinstance(b.spec.get("activeDeadlineSeconds"), int) and b.spec["activeDeadlineSeconds"] > 0:
        b.facts["active_deadline"] = b.spec["activeDeadlineSeconds"]
    if b.spec.get("suspend") is True:
        b.facts["held"] = ("spec.suspend is true: the JobSet is created suspended, its Jobs suspended, and no pod "
                           "runs until the TrainJob is resumed (builder.go Suspend; jobset_controller.go constructJob)")
    return out, findings + b.findings

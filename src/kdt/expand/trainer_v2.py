"""TrainJob + (Cluster)TrainingRuntime (Trainer v2) -> the JobSet the controller creates.

Order of the controller (kubeflow/trainer v2.1.0 / v2.3.0):
1. pkg/runtime/core/trainingruntime.go newRuntimeInfo: the runtime's JobSet
   template, with podTemplateOverrides (2.1, strategic merge on each target
   job's pod template) or runtimePatches (2.2+, strategic merge on each named
   replicated job's Job template; JobSet-level labels/annotations propagated);
   2.3 also writes resourcesPerNode into the `node` container there.
2. pkg/runtime/framework/plugins/torch/torch.go EnforceMLPolicy: node count,
   numProcPerNode (the GPU/CPU rule), trainer env upsert, PET_* env, port 29500.
   With no policy source, the PlainML plugin (plugins/plainml/plainml.go): node
   count and trainer env only; a TensorFlow runtime of this project's convention
   gets each pod's TF_CONFIG as its entrypoint builds it (kdt.operators.tensorflow).
3. pkg/runtime/framework/plugins/jobset/builder.go Trainer/Initializer:
   replicas 1, parallelism = completions = nodes; image, command, args,
   resources (the block replaced) and env (upsert by name) on `node`;
   initializer jobs get STORAGE_URI and their env.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import versions
from ..documents import Document
from ..findings import Finding
from ..operators import injection as INJ
from ..operators import jobset as JS
from ..operators import tensorflow as TF
from ..operators import trainer_v2 as TV2
from ..fields import as_int, quantity
from .merge import Trace, clone, ensure_dict, ensure_list, find, put, strategic_merge, upsert
from .model import Expanded, LoadFn

RULE = "expand"
TORCH = "Trainer torch plugin (plugins/torch/torch.go)"
BUILDER = "Trainer JobSet builder (plugins/jobset/builder.go)"



def infer_version(trainjob: dict) -> str:
    """The Trainer release a TrainJob is written for, from the fields it uses."""
    spec = trainjob.get("spec") or {}
    if "runtimePatches" in spec:
        return versions.TRAINER_RELEASES[-1]
    if "podTemplateOverrides" in spec or "labels" in spec or "annotations" in spec:
        return versions.TRAINER_RELEASES[0]
    return versions.TRAINER_DEFAULT


find_runtime = TV2.find_runtime   # one resolution rule for lint and preview


def num_proc_per_node(value, resources) -> tuple[str, str]:
    """(PET_NPROC_PER_NODE, why): torch.go EnforceMLPolicy + calculateNumProcPerNode."""
    v = str(value if value is not None else INJ.V2_DEFAULT_NUM_PROC_PER_NODE)
    if not isinstance(resources, dict):
        return v, "numProcPerNode" + (" (default auto)" if value is None else "")
    if v == "auto":
        def use_cpu(res):
            return not any(INJ.V2_GPU_MARKER in str(k).lower() for k in res)
        fallback = "auto"
    elif v == "cpu":
        def use_cpu(res):
            return "cpu" in res
        fallback = str(INJ.V2_CPU_FALLBACK)
    else:
        def use_cpu(res):
            return False
        fallback = v

    def calc(res):
        if not isinstance(res, dict):
            return str(INJ.V2_CPU_FALLBACK), False
        if use_cpu(res):
            return str(max(INJ.V2_CPU_FALLBACK, math.ceil(quantity(res.get("cpu"))))), True
        return fallback, False

    n, used = calc(resources.get("limits"))
    where = "limits"
    if not used:
        n, used = calc(resources.get("requests"))
        where = "requests"
    if used:
        return n, f"numProcPerNode {v}: no GPU in resourcesPerNode, so the CPU {where} (at least 1)"
    if n == fallback:
        return n, f"numProcPerNode {v}" + (": a GPU is requested, torchrun counts them" if v == "auto" else "")
    return n, f"numProcPerNode {v}: resourcesPerNode has no {where} to count (calculateNumProcPerNode returns 1)"


def _ancestor(rjob: dict) -> str | None:
    labels = (((rjob.get("template") or {}).get("metadata") or {}).get("labels") or {})
    return labels.get(TV2.ANCESTOR_LABEL)


def _pod_spec(rjob: dict) -> dict:
    tmpl = ensure_dict(rjob, "template")
    jspec = ensure_dict(tmpl, "spec")
    ptmpl = ensure_dict(jspec, "template")
    return ensure_dict(ptmpl, "spec")


def _check_containers(job: Document, pod_spec: dict, patch_spec: dict, path: tuple, target: str) -> list[Finding]:
    out = []
    for key in ("containers", "initContainers"):
        for i, c in enumerate(patch_spec.get(key) or []):
            if isinstance(c, dict) and find(pod_spec.get(key), "name", c.get("name")) < 0:
                have = ", ".join(str(x.get("name")) for x in pod_spec.get(key) or [] if isinstance(x, dict)) or "none"
                out.append(job.finding(RULE, f"{key[:-1]} {c.get('name')!r} does not exist in job {target!r} of the runtime "
                                       f"(it has: {have}); the patch would add a container without an image",
                                       path + (key, i, "name")))
    return out


@dataclass
class _Build:
    """What the controller's steps share while it builds one TrainJob's JobSet."""
    job: Document
    spec: dict                       # the TrainJob's spec (a fresh copy)
    trainer: dict                    # its spec.trainer
    version: str
    rt_doc: Document
    runtime: dict                    # the runtime (a fresh copy)
    rt_spec: dict
    template: dict                   # runtime spec.template (the JobSet template)
    js_spec: dict
    rjobs: list
    trace: Trace = field(default_factory=Trace)
    findings: list = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    js_labels: dict = field(default_factory=dict)
    js_annotations: dict = field(default_factory=dict)
    label_origin: dict = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [str(r.get("name")) for r in self.rjobs if isinstance(r, dict)]


SPEC = ("spec",)   # paths below are in the JobSet object: its spec is the runtime's spec.template.spec


def _check_release_fields(job: Document, spec: dict, version: str) -> list[Finding]:
    """Fields the TrainJob of this Trainer release does not have, and 2.2+'s integer numProcPerNode."""
    out = []
    allowed = TV2.spec_fields(version)
    for key in spec:
        if key not in allowed:
            other = [v for v in TV2.TRAINJOB_SPEC_FIELDS if key in TV2.TRAINJOB_SPEC_FIELDS[v]]
            hint = f" (a Trainer {'/'.join(other)} field" + (
                "; 2.2+ has runtimePatches instead)" if key == "podTemplateOverrides" else
                "; 2.1 has podTemplateOverrides instead)" if key == "runtimePatches" else ")") if other else ""
            out.append(job.finding(RULE, f"spec.{key} is not a field of TrainJob in Trainer {version}{hint}",
                                   ("spec", key)))
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else {}
    npp = trainer.get("numProcPerNode")
    if TV2.has_runtime_patches(version) and npp is not None and as_int(npp) is None:
        out.append(job.finding(RULE, f"numProcPerNode {npp!r}: Trainer {version} takes an integer only "
                               "(2.1 also took auto/cpu/gpu)", ("spec", "trainer", "numProcPerNode")))
    return out


def _apply_overrides(b: _Build) -> None:
    """2.1 podTemplateOverrides: a strategic merge on each target job's pod template (trainingruntime.go)."""
    for i, ov in enumerate(b.spec.get("podTemplateOverrides") or []):
        opath = ("spec", "podTemplateOverrides", i)
        targets = [t.get("name") for t in (ov.get("targetJobs") or []) if isinstance(t, dict)]
        for j, t in enumerate(targets):
            if t not in b.names:
                b.findings.append(b.job.finding(RULE, f"targetJobs {t!r} is not a replicated job of runtime "
                                                      f"{b.rt_doc.name!r} (it has: {', '.join(b.names) or 'none'})",
                                                opath + ("targetJobs", j, "name")))
        for k, rj in enumerate(b.rjobs):
            if rj.get("name") not in targets:
                continue
            pod_tmpl = ensure_dict(ensure_dict(ensure_dict(rj, "template"), "spec"), "template")
            ppath = SPEC + ("replicatedJobs", k, "template", "spec", "template")
            patch: dict = {}
            meta = ov.get("metadata") or {}
            pmeta = {x: meta[x] for x in ("labels", "annotations") if meta.get(x) is not None}
            if pmeta:
                patch["metadata"] = pmeta
            if isinstance(ov.get("spec"), dict):
                b.findings += _check_containers(b.job, ensure_dict(pod_tmpl, "spec"), ov["spec"], opath + ("spec",),
                                                rj.get("name"))
                patch["spec"] = ov["spec"]
            strategic_merge(pod_tmpl, patch, ppath, b.trace,
                            f"TrainJob spec.podTemplateOverrides[{i}] (strategic merge, trainingruntime.go)")


def _apply_patches(b: _Build) -> None:
    """2.2+ runtimePatches: a strategic merge on each named replicated job's Job template; the JobSet-level
    labels and annotations propagated (trainingruntime.go)."""
    for i, rp in enumerate(b.spec.get("runtimePatches") or []):
        tmpl = ((rp.get("trainingRuntimeSpec") or {}).get("template") or {}) if isinstance(rp, dict) else {}
        rpath = ("spec", "runtimePatches", i, "trainingRuntimeSpec", "template")
        manager = rp.get("manager", "") if isinstance(rp, dict) else ""
        origin = f"TrainJob spec.runtimePatches[{i}] (manager {manager}; strategic merge, trainingruntime.go)"
        tmeta = tmpl.get("metadata") or {}
        for k, v in (tmeta.get("labels") or {}).items():
            b.js_labels[k] = v
            b.label_origin[("metadata", "labels", k)] = origin
        for k, v in (tmeta.get("annotations") or {}).items():
            b.js_annotations[k] = v
            b.label_origin[("metadata", "annotations", k)] = origin
        for j, pj in enumerate(((tmpl.get("spec") or {}).get("replicatedJobs") or [])):
            if not isinstance(pj, dict):
                continue
            jpath = rpath + ("spec", "replicatedJobs", j)
            if pj.get("name") not in b.names:
                b.findings.append(b.job.finding(RULE, f"replicated job {pj.get('name')!r} is not in runtime "
                                                      f"{b.rt_doc.name!r} (it has: {', '.join(b.names) or 'none'})",
                                                jpath + ("name",)))
                continue
            k = b.names.index(pj.get("name"))
            if not isinstance(pj.get("template"), dict):
                continue
            ppod = (((pj["template"].get("spec") or {}).get("template") or {}).get("spec"))
            if isinstance(ppod, dict):
                b.findings += _check_containers(b.job, _pod_spec(b.rjobs[k]), ppod,
                                                jpath + ("template", "spec", "template", "spec"), pj.get("name"))
            strategic_merge(ensure_dict(b.rjobs[k], "template"), pj["template"],
                            SPEC + ("replicatedJobs", k, "template"), b.trace, origin)


def _trainer_job(b: _Build, nodes: int, nodes_why: str) -> tuple[int, dict, tuple] | None:
    """builder.go Trainer: the trainer job gets 1 replica, parallelism = completions = nodes, and the `node`
    container spec.trainer's image, command, args, resources (the block replaced) and env (upserted).
    Returns (job index, node container, its path), or None (with a finding) when there is none."""
    k = next((k for k, rj in enumerate(b.rjobs) if _ancestor(rj) == TV2.ANCESTOR_TRAINER), None)
    if k is None:
        k = next((k for k, rj in enumerate(b.rjobs) if rj.get("name") == TV2.NODE), None)
    if k is None:
        b.findings.append(b.rt_doc.finding(RULE, f"runtime has no replicated job labelled {TV2.ANCESTOR_LABEL}: "
                                                 f"{TV2.ANCESTOR_TRAINER}: the TrainJob's trainer settings apply nowhere",
                                           ("spec", "template", "spec", "replicatedJobs")))
        return None
    rj = b.rjobs[k]
    b.facts["trainer_job"] = str(rj.get("name"))
    jp = SPEC + ("replicatedJobs", k)
    put(rj, "replicas", INJ.V2_TRAINER_JOB_REPLICAS, jp, b.trace, f"{BUILDER}: the trainer job always has 1 replica")
    jspec = ensure_dict(ensure_dict(rj, "template"), "spec")
    for key in ("parallelism", "completions"):
        put(jspec, key, nodes, jp + ("template", "spec"), b.trace, f"{BUILDER}: node count, from {nodes_why}")
    pod_spec = _pod_spec(rj)
    ci = find(pod_spec.get("containers"), "name", TV2.NODE)
    if ci < 0:
        b.findings.append(b.rt_doc.finding(RULE, f"trainer job {rj.get('name')!r} has no container named {TV2.NODE!r}: "
                                                 "image, command, env and PET_* go into that container only",
                                           ("spec", "template", "spec", "replicatedJobs", k, "template", "spec",
                                            "template", "spec", "containers")))
        return None
    c = pod_spec["containers"][ci]
    cp = jp + ("template", "spec", "template", "spec", "containers", ci)
    src = "TrainJob spec.trainer"
    for key in ("image", "command", "args"):
        if b.trainer.get(key) is not None:
            put(c, key, clone(b.trainer[key]), cp, b.trace, f"{BUILDER}: {src}.{key}")
    res = b.trainer.get("resourcesPerNode")
    if isinstance(res, dict) and (res.get("limits") is not None or res.get("requests") is not None):
        block = {key: clone(res[key]) for key in ("limits", "requests") if res.get(key) is not None}
        put(c, "resources", block, cp, b.trace, f"{BUILDER}: {src}.resourcesPerNode (replaces the block)")
    for e in b.trainer.get("env") or []:
        if isinstance(e, dict):
            upsert(ensure_list(c, "env"), "name", clone(e), cp + ("env",), b.trace, f"{BUILDER}: {src}.env (upsert by name)")
    return k, c, cp


def _torch_policy(b: _Build, ml: dict, nodes: int, nodes_why: str, c: dict, cp: tuple) -> None:
    """torch.go EnforceMLPolicy: numProcPerNode, the PET_* env (upserted), the rendezvous port, and what the
    summary shows (master, world size)."""
    npp = b.trainer.get("numProcPerNode")
    res = b.trainer.get("resourcesPerNode")
    npp_value = npp if npp is not None else ml["torch"].get("numProcPerNode")
    nproc, nproc_why = num_proc_per_node(npp_value, res)
    b.facts["nproc_per_node"] = nproc
    env = ensure_list(c, "env")
    injected = [
        ({"name": INJ.V2_ENV_NNODES, "value": str(nodes)}, f"node count, from {nodes_why}"),
        ({"name": INJ.V2_ENV_NPROC, "value": nproc}, nproc_why),
        ({"name": INJ.V2_ENV_NODE_RANK, "valueFrom": {"fieldRef": {"fieldPath": INJ.V2_COMPLETION_INDEX_FIELD}}},
         "the Job completion index"),
        ({"name": INJ.V2_ENV_MASTER_ADDR, "value": TV2.master_address(b.job.name)}, "<trainjob>-node-0-0.<trainjob>"),
        ({"name": INJ.V2_ENV_MASTER_PORT, "value": str(TV2.TRAINER_PORT)}, "ContainerTrainerPort"),
    ]
    if list(b.trainer.get("command") or []) == TV2.TORCHTUNE_ENTRYPOINT:
        injected = injected[:3]  # torchtune: the rendezvous goes on the command line instead
    for entry, why in injected:
        upsert(env, "name", entry, cp + ("env",), b.trace, f"{TORCH}: {why}")
    ports = ensure_list(c, "ports")
    upsert(ports, "containerPort", {"containerPort": TV2.TRAINER_PORT}, cp + ("ports",), b.trace,
           f"{TORCH}: port for the JobSet's headless service")
    b.facts["master"] = f"{TV2.master_address(b.job.name)}:{TV2.TRAINER_PORT}"
    if as_int(nproc) is not None:
        b.facts["world_size"] = nodes * int(nproc)
    elif nproc == "auto" and isinstance(res, dict):
        # torchrun's own "auto": one process per visible GPU (the GPUs resourcesPerNode asks for).
        gpus = max((as_int(v, 0) for sec in ("limits", "requests") for k, v in (res.get(sec) or {}).items()
                    if INJ.V2_GPU_MARKER in str(k).lower()), default=0)
        if gpus:
            b.facts["nproc_effective"] = gpus
            b.facts["world_size"] = nodes * gpus


def _plain_ml(b: _Build, rj: dict, c: dict, nodes: int) -> None:
    """plainml.go: nothing injected beyond the node count and trainer.env; a TensorFlow runtime of this
    project's convention gets each pod's TF_CONFIG as its entrypoint builds it (kdt.operators.tensorflow)."""
    env_map = {e.get("name"): (None if "valueFrom" in e else e.get("value"))   # valueFrom entries map to None
               for e in c.get("env") or [] if isinstance(e, dict)}
    cfgs = TF.pod_tf_configs(env_map, b.job.name, str(rj.get("name")), 0, nodes, JS.subdomain(b.js_spec, b.job.name))
    if cfgs is not None:
        b.facts["tf_config"] = cfgs
        b.facts["world_size"] = nodes


def _initializers(b: _Build) -> None:
    """builder.go Initializer: initializer jobs get 1 replica, STORAGE_URI and their env from spec.initializer."""
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
        cp = jp + ("template", "spec", "template", "spec", "containers", ci, "env")
        if which.get("storageUri") is not None:
            upsert(ensure_list(cont, "env"), "name", {"name": INJ.V2_INITIALIZER_ENV_STORAGE_URI, "value": which["storageUri"]},
                   cp, b.trace, f"{BUILDER}: TrainJob spec.initializer.{field_name}.storageUri")
        for e in which.get("env") or []:
            if isinstance(e, dict):
                upsert(ensure_list(cont, "env"), "name", clone(e), cp, b.trace,
                       f"{BUILDER}: TrainJob spec.initializer.{field_name}.env")


def _jobset_object(b: _Build) -> dict:
    """The JobSet: named after the TrainJob, the runtime's (and 2.1 spec's) labels and annotations, the
    merged spec; and each pod's hostname for the summary."""
    obj = type(b.runtime)()
    obj["apiVersion"] = JS.API_VERSION
    obj["kind"] = JS.KIND
    meta = type(b.runtime)()
    meta["name"] = b.job.name
    b.trace.note(("metadata", "name"), "Trainer: the JobSet is named after the TrainJob")
    if b.job.namespace:
        meta["namespace"] = b.job.namespace
    for k, v in (b.spec.get("labels") or {}).items():   # 2.1 spec.labels override the runtime's
        b.js_labels[k] = v
        b.label_origin[("metadata", "labels", k)] = "TrainJob spec.labels"
    for k, v in (b.spec.get("annotations") or {}).items():
        b.js_annotations[k] = v
        b.label_origin[("metadata", "annotations", k)] = "TrainJob spec.annotations"
    if b.js_labels:
        meta["labels"] = b.js_labels
    if b.js_annotations:
        meta["annotations"] = b.js_annotations
    for p, o in b.label_origin.items():
        b.trace.note(p, o)
    obj["metadata"] = meta
    obj["spec"] = b.js_spec
    pods = []
    for rjob in b.rjobs:
        reps = as_int(rjob.get("replicas"), 1)
        par = as_int(((rjob.get("template") or {}).get("spec") or {}).get("parallelism"), 1)
        for ji in range(reps):
            for pi in range(par):
                pods.append(INJ.jobset_hostname(b.job.name, str(rjob.get("name")), ji, pi))
    b.facts["pods"] = pods
    return obj


def expand(job: Document, docs: list[Document], load: LoadFn, version: str | None = None
           ) -> tuple[list[Expanded], list[Finding]]:
    tj = load(job)
    spec = tj.get("spec") if isinstance(tj.get("spec"), dict) else {}
    ver = version or infer_version(job.data)
    findings = _check_release_fields(job, spec, ver)
    rt_doc = find_runtime(job, docs)
    if rt_doc is None:
        ref = spec.get("runtimeRef") or {}
        kind = ref.get("kind") or TV2.DEFAULT_RUNTIME_KIND
        findings.append(job.finding(RULE, f"runtimeRef {kind} {ref.get('name')!r} is not among the rendered documents; "
                                    "add its YAML to the inputs to preview the JobSet", ("spec", "runtimeRef", "name")))
        return [], findings
    if findings:
        return [], findings
    runtime = load(rt_doc)
    rt_spec = runtime.get("spec") or {}
    template = rt_spec.get("template") if isinstance(rt_spec.get("template"), dict) else {}
    js_spec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    b = _Build(job, spec, spec.get("trainer") if isinstance(spec.get("trainer"), dict) else {}, ver, rt_doc, runtime,
               rt_spec, template, js_spec, js_spec.get("replicatedJobs") if isinstance(js_spec.get("replicatedJobs"), list) else [],
               js_labels=dict((template.get("metadata") or {}).get("labels") or {}),
               js_annotations=dict((template.get("metadata") or {}).get("annotations") or {}))
    base = clone(template)

    # 1. the runtime's template with the TrainJob's overrides (2.1) or patches (2.2+)
    _apply_overrides(b)
    _apply_patches(b)
    if b.findings:
        return [], b.findings

    # 2. the trainer job (JobSet builder), then the ML policy's plugin
    ml = rt_spec.get("mlPolicy") if isinstance(rt_spec.get("mlPolicy"), dict) else {}
    nodes = as_int(b.trainer.get("numNodes"))
    nodes_why = "TrainJob spec.trainer.numNodes"
    if nodes is None:
        nodes = as_int(ml.get("numNodes"), 1)
        nodes_why = "runtime spec.mlPolicy.numNodes" if ml.get("numNodes") is not None else "default 1"
    b.facts.update({"nodes": nodes, "version": ver, "runtime": f"{rt_doc.kind}/{rt_doc.name}"})
    built = _trainer_job(b, nodes, nodes_why)
    if built is None:
        return [], b.findings
    k, c, cp = built
    if isinstance(ml.get("torch"), dict):
        _torch_policy(b, ml, nodes, nodes_why, c, cp)
    sources = [key for key in ml if key != "numNodes"]
    b.facts["ml_policy"] = sources[0] if sources else "none"
    if not sources:
        _plain_ml(b, b.rjobs[k], c, nodes)

    # 3. the initializers, and the JobSet itself
    _initializers(b)
    obj = _jobset_object(b)
    return [Expanded(obj=obj, source=job, base=base, base_doc=rt_doc, base_path=("spec", "template"),
                     trace=b.trace, facts=b.facts)], b.findings

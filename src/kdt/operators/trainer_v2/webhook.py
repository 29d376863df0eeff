"""What the TrainJob webhook refuses (Trainer v2.1.0 / v2.3.0), as a list of Rejections the preview and
lint share. Facts of the TrainJob and runtimes: kdt.operators.trainer_v2.facts; of torchtune: kdt.operators.trainer_v2.torchtune."""
from __future__ import annotations

from .. import scheduling as SCHED
from . import torchtune as TT
from ...fields import as_int
from ..admission import Rejection
from . import shapes as SH
from .facts import (DATASET_INITIALIZER, DEPRECATION_POLICY_URL, ENV_FORBIDDEN_CONTAINERS, INITIALIZER_VOLUME, MODEL_INITIALIZER, NODE, RESERVED_ENV, RULE_OVERRIDE_ENV, RULE_OVERRIDE_TARGETS, RULE_RESERVED_ENV, RULE_WEBHOOK, _containers, _d, _deprecated, _domain_prefixed_path, _l, gpus_per_node, overrides, replicated_jobs, runtime_node_resources)


def webhook_rejections(job, runtime, version: str) -> list:
    """What the TrainJob webhook refuses (runtime.ValidateObjects -> the plugins' Validate) of `job` against
    `runtime` (plain mappings) for Trainer `version` (its shape, kdt.operators.trainer_v2.shapes): torch.go
    Validate (reserved env,
    2.1's numProcPerNode words, 2.3's envInjection targets, torchtune), jobset.go Validate (initializer jobs,
    containers and 2.3's volume mount; override/patch targets, containers and env; 2.3's patch manager),
    volcano.go Validate (an empty queue annotation). Not here: what needs the cluster (a PriorityClass),
    the MPI, JAX, XGBoost and Flux plugins."""
    out: list = []
    shape = SH.of(version)
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
    if isinstance(torch, dict) and not (shape.torch_validate_needs_nproc and trainer.get("numProcPerNode") is None):
        # torch.go Validate (2.1 returns at once without trainer.numProcPerNode)
        if shape.env_injection:
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
        if shape.proc_words and isinstance(npp, str) and as_int(npp) is None and npp not in shape.proc_words:
            out.append(Rejection(RULE_WEBHOOK, ("spec", "trainer", "numProcPerNode"),
                                 f"numProcPerNode {npp!r}: must have an int value or {list(shape.proc_words)}"))
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
                                           shape):
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
        elif shape.initializer_volume and not any(_d(m).get("name") == INITIALIZER_VOLUME
                                 for c in _containers(rjobs[job_name], ("containers",)) if c.get("name") == job_name
                                 for m in _l(c.get("volumeMounts"))):
            out.append(Rejection(RULE_WEBHOOK, ("spec", "runtimeRef"),
                                 f"container {job_name} of the runtime's {job_name} job mounts no volume named "
                                 f"{INITIALIZER_VOLUME!r} (the webhook: must have volumeMount with name - "
                                 f"{INITIALIZER_VOLUME} in container {job_name} of the {job_name} job)"))
    for i, p in enumerate(_l(spec.get(SH.PATCHES)) if shape.pod_changes == SH.PATCHES else []):
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
        if "annotations" in shape.own_fields:    # 2.1: spec.annotations onto the JobSet
            annotations.update(_d(spec.get("annotations")))
        if annotations.get(SCHED.VOLCANO_QUEUE_ANNOTATION) == "":
            out.append(Rejection(RULE_WEBHOOK, ("spec", "annotations", SCHED.VOLCANO_QUEUE_ANNOTATION),
                                 "Volcano queue name must not be empty (the annotation "
                                 f"{SCHED.VOLCANO_QUEUE_ANNOTATION} on the runtime's template or a patch)"))
    return out

"""A TrainJob, and a runtime, between Trainer 2.1's shape and 2.2+'s, both ways (rows shape-* of the table).

2.1 -> 2.2+: each `podTemplateOverrides[]` entry moves into one `runtimePatches[]` entry (a manager) under
the replicated job it targets (the overrides of one job merged in their order, strategic merge as Trainer
applies them); `spec.labels`/`annotations` move to the patch's JobSet metadata; `numProcPerNode` becomes
an int or is left out (`auto`). 2.2+ -> 2.1: the reverse, one override per patched job; what 2.1's override
cannot say (the pod's and containers' securityContext, terminationGracePeriodSeconds, a Job template's
metadata, activeDeadlineSeconds) is a finding. A runtime loses 2.1's torch.numProcPerNode/elasticPolicy (2.2
removed them) or 2.3's envInjection. The pods stay the same: the proof pairs them by their place.
"""
from __future__ import annotations

import copy
import math

from ...fields import as_dict, as_int, as_list, quantity
from . import facts as TV2
from . import shapes as SH
from ...resources import container_gpus
from ..framework.migrate import sides as SIDES
from ..framework.migrate.compare import NodePod, Side
from ..framework.migrate.patch import Op, cmap as _cm, plain
from ..jobset import facts as JS
from .. import scheduling as S
from ..framework.migrate.plan import Plan

NOTE = "kdt migrate"


def shape(spec: dict) -> str | None:
    """The shape a TrainJob is written in (the release it is checked as: "2.1", "2.3" for 2.2+), or None when it
    uses no shape's own fields (kdt.operators.trainer_v2.shapes)."""
    found = SH.of_trainjob(spec)
    if found is not None:
        return found.key
    npp = as_dict(spec.get("trainer")).get("numProcPerNode")
    if npp is not None and as_int(npp) is None:      # a word: only a shape that takes words
        return next(s.key for s in SH.SHAPES if s.proc_words)
    return None


def plan(doc, ctx) -> Plan | None:
    """The TrainJob `doc` in the shape of `ctx.version`; None when it is in that shape already."""
    to = SH.checked_as(ctx.version)
    spec = as_dict(doc.data.get("spec")) if isinstance(doc.data, dict) else {}
    npp = as_dict(spec.get("trainer")).get("numProcPerNode")
    current = shape(spec)
    needs_int = not SH.of(to).proc_words and npp is not None and not isinstance(npp, int)
    if (current is None or current == to) and not needs_int:
        return None
    p = Plan(doc, to, by="key", after_key=doc.key())
    ref = as_dict(spec.get("runtimeRef"))
    p.runtime = f"{ref.get('kind') or TV2.DEFAULT_RUNTIME_KIND}/{ref.get('name')}"
    if SH.of(to).pod_changes == SH.PATCHES:
        _to_patches(p, ctx, spec)
    else:
        _to_overrides(p, spec)
    return p


def _nproc_int(p: Plan, spec: dict) -> None:
    """Row shape-nproc (2.1 -> 2.2+)."""
    trainer = as_dict(spec.get("trainer"))
    npp = trainer.get("numProcPerNode")
    if npp is None or isinstance(npp, int):
        return
    path = ("spec", "trainer", "numProcPerNode")
    text = str(npp)
    res = as_dict(trainer.get("resourcesPerNode"))
    gpus = container_gpus({"resources": res})
    if as_int(text) is not None:
        p.ops.append(Op("replace", path, as_int(text), note="shape-nproc: an int"))
        p.note("shape-nproc", f"numProcPerNode {text!r} -> {as_int(text)}")
    elif text == "auto" or (text == "gpu" and gpus):
        p.ops.append(Op("remove", path, note=f"shape-nproc: {text} is 2.2+'s default"))
        p.note("shape-nproc", f"numProcPerNode {text} left out: 2.2+'s default auto")
    elif text == "cpu":
        req, lim = as_dict(res.get("requests")), as_dict(res.get("limits"))
        cpu = quantity(req.get("cpu")) or quantity(lim.get("cpu"))
        n = max(1, int(math.floor(cpu))) if cpu else 1
        p.ops.append(Op("replace", path, n, note="shape-nproc: the CPU count 2.1 computed for `cpu`"))
        p.note("shape-nproc", f"numProcPerNode cpu -> {n} (resourcesPerNode's CPU, as 2.1's torch plugin counted it)")
    else:
        p.finding("shape-nproc", f"numProcPerNode {text!r} has no 2.2+ equivalent without a GPU in resourcesPerNode: "
                  "left out (auto: the CPU count)", path, claims=[("facts", "processes per node"), ("facts", "world size")])
        p.ops.append(Op("remove", path))


def _to_patches(p: Plan, ctx, spec: dict) -> None:
    """2.1 -> 2.2+ (rows shape-overrides, shape-labels, shape-nproc)."""
    ovs = [o for o in as_list(spec.get("podTemplateOverrides")) if isinstance(o, dict)]
    jobs: dict[str, dict] = {}           # target job -> {"metadata": ..., "spec": ..., "from": [(i, target j)]}
    for i, ov in enumerate(ovs):
        for j, t in enumerate(as_list(ov.get("targetJobs"))):
            name = str(as_dict(t).get("name"))
            entry = jobs.setdefault(name, {"from": []})
            entry["from"].append((i, j, len(as_list(ov.get("targetJobs")))))
    meta = {k: spec[k] for k in ("labels", "annotations") if spec.get(k)}
    if not (jobs or meta):
        _nproc_int(p, spec)
        for k in ("labels", "annotations"):
            if k in spec:
                p.ops.append(Op("remove", ("spec", k)))
        return
    root = ("spec", "runtimePatches")
    rjobs = [_cm(("name", name), ("template", _cm(("spec", _cm(("template", _cm()))))))
             for name in jobs]
    tmpl = _cm()
    if meta:
        tmpl["metadata"] = _cm()
    if rjobs:
        tmpl["spec"] = _cm(("replicatedJobs", rjobs))
    p.ops.append(Op("add", root, [_cm(("manager", ctx.manager), ("trainingRuntimeSpec", _cm(("template", tmpl))))],
                    note=f"{NOTE}: TrainJob {p.doc.name} in Trainer 2.2+'s shape (docs/migration.md#shape-overrides)"))
    base = root + (0, "trainingRuntimeSpec", "template")
    for k in meta:
        p.ops.append(Op("move", base + ("metadata", k), src=("spec", k), note="shape-labels"))
        p.note("shape-labels", f"spec.{k} -> runtimePatches template.metadata.{k}")
    for k, (name, entry) in enumerate(jobs.items()):
        dest = base + ("spec", "replicatedJobs", k, "template", "spec", "template")
        sources = entry["from"]
        if len(sources) == 1 and sources[0][2] == 1:
            i = sources[0][0]
            for part in ("metadata", "spec"):
                if part in ovs[i]:
                    p.ops.append(Op("move", dest + (part,), src=("spec", "podTemplateOverrides", i, part)))
        else:
            from ...expand.merge import Trace, strategic_merge
            merged: dict = {}
            for i, _, _ in sources:
                one = {part: copy.deepcopy(plain(ovs[i][part])) for part in ("metadata", "spec") if part in ovs[i]}
                strategic_merge(merged, one, (), Trace(), "")
            for part in ("metadata", "spec"):
                if part in merged:
                    p.ops.append(Op("add", dest + (part,), merged[part],
                                    note=f"shape-overrides: the overrides {', '.join(str(i) for i, _, _ in sources)} of "
                                         f"job {name}, merged in order"))
        p.note("shape-overrides", f"podTemplateOverrides of job {name} -> runtimePatches[0] (manager {ctx.manager})")
    _nproc_int(p, spec)
    for k in ("podTemplateOverrides",):
        if k in spec:
            p.ops.append(Op("remove", ("spec", k)))


def _to_overrides(p: Plan, spec: dict) -> None:
    """2.2+ -> 2.1 (rows shape-overrides, shape-labels, shape-deadline, shape-patch-fields)."""
    pod_ok, c_ok = TV2.patch_fields(p.version)
    overrides = []            # (patch index, replicated job index, name)
    jobset_meta: list[tuple[int, str]] = []
    for i, rp in enumerate(as_list(spec.get("runtimePatches"))):
        tmpl = as_dict(as_dict(as_dict(rp).get("trainingRuntimeSpec")).get("template"))
        rpath = ("spec", "runtimePatches", i, "trainingRuntimeSpec", "template")
        for k in ("labels", "annotations"):
            if as_dict(tmpl.get("metadata")).get(k):
                jobset_meta.append((i, k))
        for j, rj in enumerate(as_list(as_dict(tmpl.get("spec")).get("replicatedJobs"))):
            rj = as_dict(rj)
            jpath = rpath + ("spec", "replicatedJobs", j)
            name = str(rj.get("name"))
            jt = as_dict(rj.get("template"))
            if as_dict(jt.get("metadata")):
                p.finding("shape-patch-fields", f"the Job template metadata of job {name} has no place in a 2.1 "
                          "override (2.1's spec.labels label every Job and the JobSet): left out",
                          jpath + ("template", "metadata"), claims=[("job", "JobSet")])
            ptmpl = as_dict(as_dict(jt.get("spec")).get("template"))
            pspec = as_dict(ptmpl.get("spec"))
            for f in pspec:
                if f not in pod_ok:
                    p.finding("shape-patch-fields", f"{f} of job {name}'s patch has no place in a 2.1 override: left out",
                              jpath + ("template", "spec", "template", "spec", f), claims=[("spec", f)])
            for key in ("containers", "initContainers"):
                for k, c in enumerate(as_list(pspec.get(key))):
                    for f in as_dict(c):
                        if f not in c_ok:
                            p.finding("shape-patch-fields", f"{f} of {key[:-1]} {as_dict(c).get('name')!r} in job "
                                      f"{name}'s patch has no place in a 2.1 override: left out",
                                      jpath + ("template", "spec", "template", "spec", key, k, f),
                                      claims=[("spec", key, as_dict(c).get("name"), f),
                                              ("spec", key, "<training container>", f)])
            overrides.append((i, j, name, ptmpl))
    ops = p.ops
    # What 2.1 cannot say goes first, from the patches themselves.
    for i, j, name, ptmpl in overrides:
        src = ("spec", "runtimePatches", i, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", j, "template",
               "spec", "template", "spec")
        pspec = as_dict(ptmpl.get("spec"))
        for key in ("containers", "initContainers"):
            for k, c in enumerate(as_list(pspec.get(key))):
                for f in [f for f in as_dict(c) if f not in c_ok]:
                    ops.append(Op("remove", src + (key, k, f)))
        for f in [f for f in pspec if f not in pod_ok]:
            ops.append(Op("remove", src + (f,)))
    if overrides:
        skeleton = [_cm(("targetJobs", [_cm(("name", name))])) for _, _, name, _ in overrides]
        ops.append(Op("add", ("spec", "podTemplateOverrides"), skeleton,
                      note=f"{NOTE}: TrainJob {p.doc.name} in Trainer 2.1's shape (docs/migration.md#shape-overrides)"))
        for k, (i, j, name, ptmpl) in enumerate(overrides):
            src = ("spec", "runtimePatches", i, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", j,
                   "template", "spec", "template")
            for part in ("metadata", "spec"):
                if part in ptmpl:
                    ops.append(Op("move", ("spec", "podTemplateOverrides", k, part), src=src + (part,)))
            p.note("shape-overrides", f"runtimePatches[{i}] job {name} -> podTemplateOverrides[{k}]")
    for i, k in jobset_meta:
        ops.append(Op("move", ("spec", k), src=("spec", "runtimePatches", i, "trainingRuntimeSpec", "template",
                                              "metadata", k), note="shape-labels"))
        p.note("shape-labels", f"runtimePatches[{i}] template.metadata.{k} -> spec.{k} (2.1 also puts them on the Jobs)")
    if spec.get("activeDeadlineSeconds") is not None:
        p.finding("shape-deadline", f"activeDeadlineSeconds {spec['activeDeadlineSeconds']}: Trainer 2.1 has no "
                  "deadline for a TrainJob: left out", ("spec", "activeDeadlineSeconds"),
                  claims=[("job", "active deadline")])
        ops.append(Op("remove", ("spec", "activeDeadlineSeconds")))
    if "runtimePatches" in spec:
        ops.append(Op("remove", ("spec", "runtimePatches")))


def plan_runtime(doc, ctx) -> Plan | None:
    """A (Cluster)TrainingRuntime in the shape of `ctx.version` (row shape-runtime-torch); None when it fits."""
    to = SH.checked_as(ctx.version)
    spec = as_dict(doc.data.get("spec")) if isinstance(doc.data, dict) else {}
    torch = as_dict(as_dict(spec.get("mlPolicy")).get("torch"))
    base = ("spec", "mlPolicy", "torch")
    p = Plan(doc, to, by="key", after_key=doc.key(), compare=False)
    if not SH.of(to).runtime_nproc:        # 2.2 removed the runtime's torch.numProcPerNode
        npp = torch.get("numProcPerNode")
        if npp is not None:
            if str(npp) != "auto":
                p.finding("shape-runtime-torch", f"mlPolicy.torch.numProcPerNode {npp!r}: 2.2 removed it from the "
                          "runtime; a TrainJob of this runtime without its own numProcPerNode gets auto",
                          base + ("numProcPerNode",), claims=[("facts", "processes per node"), ("facts", "world size")])
            else:
                p.note("shape-runtime-torch", "mlPolicy.torch.numProcPerNode auto left out: 2.2+'s default")
            p.ops.append(Op("remove", base + ("numProcPerNode",), note="shape-runtime-torch"))
        if "elasticPolicy" in torch:
            p.finding("shape-runtime-torch", "mlPolicy.torch.elasticPolicy: 2.2 removed it (Trainer never "
                      "implemented it): left out", base + ("elasticPolicy",))
            p.ops.append(Op("remove", base + ("elasticPolicy",)))
    else:
        if "envInjection" in torch:
            p.finding("shape-runtime-torch", "mlPolicy.torch.envInjection: Trainer 2.1 injects the PET_* env into "
                      "the node container only: left out", base + ("envInjection",), claims=[("spec", "containers")])
            p.ops.append(Op("remove", base + ("envInjection",)))
    return p if p.ops else None


# -- the proof's side (kdt.operators.framework.migrate.compare) ------------------------------------------
def side(doc, js, pod_items: list, runtime) -> Side:
    """The pods of the JobSet a TrainJob becomes (`js`: its merge preview object; `pod_items`: the preview's Pod
    objects of its Jobs) and its run policy; `runtime` is its runtime document (None when not among the inputs)."""
    pods: list[NodePod] = []
    job: dict = {}
    trainer_job = js.facts.get("trainer_job", TV2.NODE)
    spec = as_dict(js.obj.get("spec"))
    trainer = JS.job_name(js.name, trainer_job, 0)
    for e in pod_items:
        pspec = as_dict(e.obj.get("spec"))
        host = str(pspec.get("hostname") or e.name)
        ci = as_int(e.facts.get("completion_index"))
        node = ci if e.facts.get("job") == trainer else None
        key = f"node {node}" if node is not None else f"{e.facts.get('job')}/{ci}"
        pods.append(NodePod(key, e.obj, TV2.NODE if node is not None else "",
                            SIDES.names(host, pspec.get("subdomain"), doc.namespace), node))
    tj = as_dict(doc.data.get("spec"))
    rj = next((as_dict(r) for r in as_list(spec.get("replicatedJobs")) if as_dict(r).get("name") == trainer_job), {})
    jspec = as_dict(as_dict(rj.get("template")).get("spec"))
    deadline = tj.get("activeDeadlineSeconds") if tj.get("activeDeadlineSeconds") is not None else \
        jspec.get("activeDeadlineSeconds")
    job = {"backoff limit": jspec.get("backoffLimit") if jspec.get("backoffLimit") is not None
           else JS.JOB_DEFAULT_BACKOFF_LIMIT,
           "active deadline": deadline,
           "ttl after finished": spec.get("ttlSecondsAfterFinished"),
           "suspend": bool(tj.get("suspend")),
           "pods deleted at the end": SIDES.PODS_KEPT,   # JobSet deletes no pod of a finished Job
           "group restarts": as_int(as_dict(spec.get("failurePolicy")).get("maxRestarts"), 0),
           "managed by": tj.get("managedBy") if tj.get("managedBy") not in (None, TV2.TRAINJOB_CONTROLLER) else None}
    pgp = as_dict(as_dict(runtime.data.get("spec")).get("podGroupPolicy")) if runtime is not None else {}
    if pgp:
        source = next(iter(pgp))
        job["gang"] = {"timeout": as_dict(pgp[source]).get("scheduleTimeoutSeconds"), "needs": "every pod"}
    else:
        job["gang"] = None
    job["queue"] = as_dict(as_dict(doc.data.get("metadata")).get("labels")).get(S.QUEUE_LABEL)
    job.update(SIDES.meta(doc.data))
    js_meta = SIDES.meta(js.obj)
    if js_meta:
        job["JobSet"] = js_meta
    # torch.go EnforceMLPolicy upserts the container port ContainerTrainerPort for the rendezvous.
    return Side(pods, job, frozenset({TV2.TRAINER_PORT}))

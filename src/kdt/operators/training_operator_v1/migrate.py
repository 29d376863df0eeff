"""A PyTorchJob (Training Operator v1) becomes a TrainJob (Trainer v2) on the runtime it needs.

One JSON patch of the rendered PyTorchJob (kdt.operators.framework.migrate.patch) does it, each step a row of the table of
equivalences (kdt.operators.migration, docs/migration.md):
1. the Master's pod template (node 0; the Worker's where there is no Master) is the one template; a field
   the Worker template sets otherwise is a finding (row replica-templates);
2. torchrun's rendezvous: flags naming the operator's env (or elasticPolicy's PET_RDZV_ENDPOINT) are removed,
   so torchrun takes Trainer's static rendezvous from PET_*; env read only by them goes too; in-place restarts
   become the runtime's failurePolicy.maxRestarts (rows torchrun-rendezvous, group-restarts);
3. `pytorch`'s image, command, args, env, resources move to `spec.trainer` (row trainer-container); the pod
   fields a TrainJob can patch move to podTemplateOverrides (2.1) or runtimePatches (2.2+) (row pod-patch);
   runPolicy's suspend and (2.2+) activeDeadlineSeconds to their TrainJob fields; env read from the pod's
   index (the replica-index label) reads the trainer Job's completion index instead (row pod-index);
4. everything else of the pod and the run policy Trainer reads from the runtime goes into a runtime
   generated for the job, unless a runtime given to the migration holds exactly that (row pod-runtime); a
   torchft job's restarts stay scoped to the pod (row replica-group-restarts).
What has no equivalent is a located finding, and every difference the plan makes on purpose is a claim the
proof (kdt.operators.framework.migrate.compare) matches.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ...fields import as_dict, as_int, as_list
from .. import injection as INJ
from .. import migration as M
from .. import scheduling as S
from ..torchft import facts as TFT
from .. import torchrun as TR
from ..trainer_v2 import facts as TV2
from ..trainer_v2 import shapes as SH
from . import facts as TO1
from . import expand as XTO
from ..framework.migrate import launcher as L
from ..framework.migrate import sides as SIDES
from ..framework.migrate.compare import MAIN, NodePod, Side, pod_view
from ..framework.migrate.patch import Op, cmap as _cm, plain
from ..framework.migrate.plan import Plan

NOTE_HEADER = "kdt migrate"


def _replicas(p: Plan, spec: dict) -> dict | None:
    """Replica type (Master, Worker) -> (key as written, replica spec); None with an error when the job cannot move."""
    rs = spec.get(TO1.REPLICA_SPECS)
    if not isinstance(rs, dict) or not rs:
        p.findings.append(p.doc.finding("migrate", "no spec.pytorchReplicaSpecs: nothing to migrate",
                                        ("spec", TO1.REPLICA_SPECS)))
        return None
    out = {}
    for key, r in rs.items():
        canon = next((t for t in TO1.REPLICA_TYPES if t.lower() == str(key).lower()), None)
        path = ("spec", TO1.REPLICA_SPECS, key)
        if canon is None or not isinstance(r, dict):
            p.findings.append(p.doc.finding("migrate", f"replica type {key!r} is not Master or Worker: the Training "
                                                       "Operator refuses the job, and nothing migrates it", path))
            return None
        pod = as_dict(as_dict(r.get("template")).get("spec"))
        if not any(isinstance(c, dict) and c.get("name") == TO1.CONTAINER_NAME for c in as_list(pod.get("containers"))):
            p.findings.append(p.doc.finding("migrate", f"replica {key} has no container {TO1.CONTAINER_NAME!r}: the "
                                                       "Training Operator refuses the job, and nothing migrates it",
                                            path + ("template", "spec", "containers")))
            return None
        out[canon] = (key, r)
    if TO1.WORKER not in out and isinstance(spec.get("elasticPolicy"), dict):
        p.findings.append(p.doc.finding("migrate", "elasticPolicy without a Worker replica: the Training Operator "
                                                   "refuses the job", ("spec", "elasticPolicy")))
        return None
    return out


# ------------------------------------------------------------------------------------------- the rendezvous
OPERATOR_ENV = TO1.INJECTED_ENV


class Rendezvous:
    """What the migration does to torchrun's command line (row torchrun-rendezvous)."""

    def __init__(self):
        self.removed: list[L.Word] = []      # words of command/args to remove
        self.drop_env: set[str] = set()      # env the container sets itself that goes with them
        self.restarts: int | None = None     # in-place group restarts to carry to the runtime's failurePolicy
        self.rewritten = False
        self.reason = ""


def _rendezvous(p: Plan, c: dict, cpath: tuple, elastic: dict | None, own: dict) -> Rendezvous:
    r = Rendezvous()
    launch = L.find(c)
    if launch is None:
        script = L.in_shell(c)
        if script is not None:
            mentions = sorted(n for n in OPERATOR_ENV - set(TV2.RESERVED_ENV) if n in script.text)
            if mentions or "--rdzv" in script.text or elastic is not None:
                p.finding("launcher-script", f"torchrun starts inside a shell script ({script.part}[{script.index}]), "
                          "which the migration does not rewrite: under Trainer it gets PET_NNODES, "
                          "PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT only"
                          + (f"; it reads {', '.join(mentions)}" if mentions else ""),
                          cpath + (script.part, script.index), claims=[("facts",)])
        return r
    env = {k: v for k, v in own.items() if isinstance(v, str)}
    bflag, eflag = launch.flag("rdzv_backend"), launch.flag("rdzv_endpoint")
    backend = (bflag.value if bflag else None) or env.get("PET_RDZV_BACKEND") or (
        str(elastic.get("rdzvBackend") or INJ.V1_DEFAULT_RDZV_BACKEND) if elastic is not None else TR.STATIC)
    if launch.has_bool("--standalone") or backend == TR.STATIC:
        operator_rdzv = False
    elif eflag is not None:
        operator_rdzv = bool(L.references(eflag.value or "") & OPERATOR_ENV)
    else:
        operator_rdzv = "PET_RDZV_ENDPOINT" not in env and elastic is not None
    if operator_rdzv:
        r.rewritten = True
        r.reason = f"{backend} rendezvous at the Training Operator's " + (
            f"address ({eflag.value})" if eflag is not None else "PET_RDZV_ENDPOINT (elasticPolicy)")
        for name in TR.RENDEZVOUS:
            for f in launch.flags:
                if f.name == name:
                    r.removed.extend(f.words)
        mr = launch.flag("max_restarts")
        value = L.expand(mr.value, env) if mr is not None and mr.value is not None else (
            env.get("PET_MAX_RESTARTS") or (elastic or {}).get("maxRestarts"))
        r.restarts = as_int(value)
        r.drop_env |= {TR.VALUE_FLAGS[n][1] for n in TR.RENDEZVOUS} & set(own)
    # Flags that read the Training Operator's process-group env, which Trainer does not set: their PET_* default
    # is Trainer's (master address, port, node rank).
    for f in launch.flags:
        if f.name in ("master_addr", "master_port", "node_rank", "nnodes") and f.value is not None:
            refs = L.references(f.value)
            if refs and refs <= set(M.PROCESS_ENV):
                r.removed.extend(f.words)
    return r


# ------------------------------------------------------------------------------------------- selectors
def rewrite_selector(sel: Any) -> tuple[Any, list[str]]:
    """A label selector on the Training Operator's pod labels, on JobSet's instead (row selectors); what
    cannot be said with JobSet's labels is listed and left as written."""
    if not isinstance(sel, dict):
        return sel, []
    sel = copy.deepcopy(sel)
    left = []
    job_old, job_new = M.LABEL_JOB
    role_old, role_new = M.LABEL_ROLE
    master_key, master_value, index_key, index_value = M.LABEL_MASTER
    roles = {TO1.MASTER.lower(), TO1.WORKER.lower()}
    labels = sel.get("matchLabels")
    if isinstance(labels, dict):
        for k in list(labels):
            if k == job_old:
                labels[job_new] = labels.pop(k)
            elif k == master_key and str(labels[k]) == master_value:
                del labels[k]
                labels[index_key] = index_value
            elif str(k).startswith("training.kubeflow.org/"):
                left.append(f"{k}={labels[k]}")
    for e in as_list(sel.get("matchExpressions")):
        if not isinstance(e, dict):
            continue
        k, op, values = e.get("key"), e.get("operator"), [str(v) for v in as_list(e.get("values"))]
        if k == job_old:
            e["key"] = job_new
        elif k == role_old and (op in ("Exists", "DoesNotExist") or (op == "In" and set(values) >= roles)):
            e["key"] = role_new
            if op == "In":
                e["values"] = [TV2.NODE]
        elif str(k).startswith("training.kubeflow.org/"):
            left.append(f"{k} {op} {values}")
    return sel, left


def _rewrite_keys(keys: Any) -> tuple[Any, list[str]]:
    out, left = [], []
    for k in as_list(keys):
        if k == M.LABEL_JOB[0]:
            out.append(M.LABEL_JOB[1])
        elif k == M.LABEL_ROLE[0]:
            out.append(M.LABEL_ROLE[1])
        else:
            out.append(k)
            if str(k).startswith("training.kubeflow.org/"):
                left.append(str(k))
    return out, left


def selector_changes(pod_spec: dict) -> list[tuple[tuple, Any, list[str]]]:
    """(path in the pod spec, new value, what stays unmapped) of every selector naming the Training Operator's labels."""
    out = []
    for i, t in enumerate(as_list(pod_spec.get("topologySpreadConstraints"))):
        if not isinstance(t, dict):
            continue
        if "labelSelector" in t:
            new, left = rewrite_selector(t["labelSelector"])
            if plain(new) != plain(t["labelSelector"]) or left:
                out.append((("topologySpreadConstraints", i, "labelSelector"), new, left))
        if "matchLabelKeys" in t:
            new, left = _rewrite_keys(t["matchLabelKeys"])
            if new != list(t["matchLabelKeys"]) or left:
                out.append((("topologySpreadConstraints", i, "matchLabelKeys"), new, left))
    aff = as_dict(pod_spec.get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        a = as_dict(aff.get(kind))
        for sched in ("requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"):
            for i, t in enumerate(as_list(a.get(sched))):
                term, base = (as_dict(t).get("podAffinityTerm"), ("podAffinityTerm",)) if sched.startswith("preferred") \
                    else (t, ())
                if not isinstance(term, dict):
                    continue
                where = ("affinity", kind, sched, i) + base
                if "labelSelector" in term:
                    new, left = rewrite_selector(term["labelSelector"])
                    if plain(new) != plain(term["labelSelector"]) or left:
                        out.append((where + ("labelSelector",), new, left))
                for keys in ("matchLabelKeys", "mismatchLabelKeys"):
                    if keys in term:
                        new, left = _rewrite_keys(term[keys])
                        if new != list(term[keys]) or left:
                            out.append((where + (keys,), new, left))
    return out


def _set(obj: Any, path: tuple, value: Any) -> None:
    cur = obj
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value


# ------------------------------------------------------------------------------------------- the plan
@dataclass
class _Job:
    """What the plan reads of the PyTorchJob, once: the one pod template (the Master's, else the Worker's),
    its `pytorch` container, where they sit, and the job's sizes."""
    data: dict
    spec: dict
    reps: dict              # replica type -> (key as written, replica spec)
    src: Any                # the round-trip values (comments kept)
    master: Any
    worker: Any
    prs: dict               # the replica spec of the one template
    tmpl: dict
    pod: dict
    c: dict                 # container pytorch
    spath: tuple            # the pod spec's path
    cpath: tuple            # the container's path
    s_pod: Any
    s_c: Any
    elastic: dict | None
    run_policy: dict
    counts: dict            # replica type -> replicas
    nodes: int
    worker_nodes: range | None
    patch_pod: Any
    patch_c: Any
    own: dict               # the container's own env: name -> value (None: valueFrom)


def plan(doc, ctx) -> Plan:
    """The migration of PyTorchJob `doc` to the TrainJob shape of `ctx.version` (kdt.kinds.MigrateContext):
    the job read once, then the steps of the module's docstring, in the order their patch operations run."""
    version = SH.checked_as(ctx.version)
    p = Plan(doc, version, after_key=(TV2.GROUP, TV2.TRAINJOB, doc.namespace, doc.name))
    j = _read(p, doc, ctx, version)
    if j is None:
        return p
    # torchft replica groups: each pod one group, restarting alone (row replica-group-restarts)
    p.facts["replica_groups"] = TFT.runs_group(j.c)
    rdzv, drop_env = _rendezvous_step(p, j)                    # 2. torchrun's rendezvous
    if j.master and j.worker:                                  # 1. one template: what the Worker's sets otherwise
        _replica_differences(p, j.master, j.worker, j.reps, drop_env, j.worker_nodes)
    _findings(p, j.spec, j.run_policy, j.elastic, j.c, j.cpath, j.nodes, version)   # the job's own fields
    _trainjob_ops(p, doc, j, rdzv, drop_env, version)          # 3. the TrainJob
    _runtime_ref(p, ctx, doc, j, rdzv, version)                # 4. its runtime
    _trainer(p, j, rdzv, drop_env, version)
    _patches(p, ctx, j.tmpl, j.pod, j.c, j.spath, j.cpath, version, j.patch_pod, j.patch_c)
    _run_policy(p, j, version)
    p.extra = [c for d in ctx.docs if d is not doc and (c := _companion(d, doc, version)) is not None]
    return p


def _read(p: Plan, doc, ctx, version: str) -> _Job | None:
    """The job as the plan reads it; None (with the finding) when it cannot move."""
    data = doc.data if isinstance(doc.data, dict) else {}
    spec = as_dict(data.get("spec"))
    reps = _replicas(p, spec)
    if reps is None:
        return None
    src = ctx.load(doc) if ctx.load is not None else copy.deepcopy(data)   # round-trip values (comments kept)
    master, worker = reps.get(TO1.MASTER), reps.get(TO1.WORKER)
    pkey, prs = master or worker
    base = ("spec", TO1.REPLICA_SPECS, pkey, "template")
    tmpl = as_dict(prs.get("template"))
    pod = as_dict(tmpl.get("spec"))
    ci = next(i for i, c in enumerate(as_list(pod.get("containers")))
              if isinstance(c, dict) and c.get("name") == TO1.CONTAINER_NAME)
    c = pod["containers"][ci]
    spath = base + ("spec",)
    s_pod = _get(src, spath)
    counts = {canon: as_int(r.get("replicas"), INJ.V1_DEFAULT_REPLICAS) or 0 for canon, (_, r) in reps.items()}
    nodes = sum(counts.values())
    worker_nodes = range(counts.get(TO1.MASTER, 0), nodes) if master else None     # a range: 2**30 nodes cost nothing
    patch_pod, patch_c = TV2.patch_fields(version)
    own = {str(e.get("name")): e.get("value") if "valueFrom" not in e else None
           for e in as_list(c.get("env")) if isinstance(e, dict) and e.get("name") is not None}
    return _Job(data=data, spec=spec, reps=reps, src=src, master=master, worker=worker, prs=prs, tmpl=tmpl, pod=pod,
                c=c, spath=spath, cpath=spath + ("containers", ci), s_pod=s_pod, s_c=s_pod["containers"][ci],
                elastic=spec.get("elasticPolicy") if isinstance(spec.get("elasticPolicy"), dict) else None,
                run_policy=as_dict(spec.get("runPolicy")), counts=counts, nodes=nodes, worker_nodes=worker_nodes,
                patch_pod=patch_pod, patch_c=patch_c, own=own)


def _rendezvous_step(p: Plan, j: _Job) -> tuple[Rendezvous, set]:
    """Step 2 (rows torchrun-rendezvous, group-restarts, process-env, reserved-env): the words of torchrun's
    command line that go, and the env that goes with them or that Trainer reserves (its notes and claims)."""
    c, own = j.c, j.own
    rdzv = _rendezvous(p, c, j.cpath, j.elastic, own)
    removed_refs = set().union(*(L.references(w.text) for w in rdzv.removed)) if rdzv.removed else set()
    kept_words = [w for w in L.words(c) if w not in rdzv.removed]
    still = set().union(*(L.references(w.text) for w in kept_words)) if kept_words else set()
    for e in as_list(c.get("env")):
        if isinstance(e, dict) and isinstance(e.get("value"), str):
            still |= L.references(e["value"])
    only_flags = (removed_refs - still) & set(own)
    drop_env = set(rdzv.drop_env) | only_flags | (set(TV2.RESERVED_ENV) & set(own))
    if rdzv.rewritten:
        gone = ", ".join(w.text for w in rdzv.removed)
        p.note("torchrun-rendezvous", f"torchrun's {rdzv.reason} gives way to Trainer's static rendezvous: removed "
                                      f"{gone}" + (f" and env {', '.join(sorted(only_flags))} (read only by them)"
                                                   if only_flags else ""))
        argv = [w.text for w in kept_words]
        if rdzv.removed:
            p.claim("torchrun-rendezvous", ("spec", "containers", MAIN, "argv"), after=argv)
        p.claim("torchrun-rendezvous", ("facts", "rendezvous"), after=f"{TR.STATIC} at node 0")
        p.claim("torchrun-rendezvous", ("facts", "node rank"), ("facts", "hosts the store"))
        for n in sorted(only_flags | rdzv.drop_env):
            p.claim("torchrun-rendezvous", ("spec", "containers", MAIN, "env", n), after="(absent)")
        p.facts["group_restarts"] = rdzv.restarts
        if rdzv.restarts:
            p.note("group-restarts", f"torchrun's {rdzv.restarts} in-place group restarts become the runtime's "
                                     f"failurePolicy.maxRestarts: {rdzv.restarts}")
        p.claim("group-restarts", ("facts", "in-place restarts"), after=0)
        p.claim("group-restarts", ("job", "group restarts"), after=rdzv.restarts or 0)
    elif rdzv.removed:
        p.note("process-env", "removed " + ", ".join(w.text for w in rdzv.removed) + ": they read the Training "
                              "Operator's MASTER_ADDR/MASTER_PORT/RANK, which Trainer does not set; torchrun's default "
                              "is Trainer's PET_* equivalent")
        p.claim("process-env", ("spec", "containers", MAIN, "argv"), after=[w.text for w in kept_words])
    for n in sorted(set(TV2.RESERVED_ENV) & set(own)):
        p.note("reserved-env", f"env {n} left out: Trainer sets it (and refuses it in trainer.env)")
    if L.find(c) is None and L.in_shell(c) is None:
        p.finding("process-env", "the container does not start torchrun: the Training Operator gave it MASTER_ADDR, "
                  "MASTER_PORT, WORLD_SIZE and RANK, Trainer gives PET_* only; a program that reads them (torch's "
                  "env:// init) needs torchrun, or these four in trainer.env", j.cpath + ("name",),
                  claims=[("facts", "env " + n) for n in M.PROCESS_ENV])
    return rdzv, drop_env


def _trainjob_ops(p: Plan, doc, j: _Job, rdzv: Rendezvous, drop_env: set, version: str) -> None:
    """Step 3 begins: the container is the one the plan read (a test), env read from the pod's index, the
    removed words and env, and the object becomes a TrainJob (row job-kind)."""
    ops, c, cpath = p.ops, j.c, j.cpath
    note = (f"{NOTE_HEADER}: PyTorchJob {doc.name} -> TrainJob (Trainer {SH.of(version).label}); "
            "each step names its row of docs/migration.md")
    ops.append(Op("test", cpath + ("name",), TO1.CONTAINER_NAME, note=note))
    _pod_index(p, c, cpath, bool(j.master and j.worker), drop_env)
    for part in ("command", "args"):
        for w in sorted((w for w in rdzv.removed if w.part == part), key=lambda w: -w.index):
            ops.append(Op("test", cpath + (part, w.index), w.text))
            ops.append(Op("remove", cpath + (part, w.index), note=f"torchrun-rendezvous: {w.text}"))
    env = as_list(c.get("env"))
    for i in sorted((i for i, e in enumerate(env) if isinstance(e, dict) and e.get("name") in drop_env), reverse=True):
        ops.append(Op("test", cpath + ("env", i, "name"), env[i]["name"]))
        ops.append(Op("remove", cpath + ("env", i), note=f"env {env[i]['name']}: "
                      + ("reserved-env" if env[i]["name"] in TV2.RESERVED_ENV else "torchrun-rendezvous")))
    ops.append(Op("replace", ("apiVersion",), TV2.API_VERSION, note="job-kind"))
    ops.append(Op("replace", ("kind",), TV2.TRAINJOB))


def _runtime_ref(p: Plan, ctx, doc, j: _Job, rdzv: Rendezvous, version: str) -> None:
    """Step 4 (row pod-runtime): the runtime the TrainJob runs on, given or generated for it, and its runtimeRef."""
    runtime, rt_kind, rt_name, generated = _runtime(p, ctx, doc, j.spec, j.run_policy, j.prs, j.tmpl, j.s_pod, j.s_c,
                                                     j.c, j.pod, version, j.nodes, rdzv, j.patch_pod, j.patch_c,
                                                     j.elastic)
    p.ops.append(Op("add", ("spec", "runtimeRef"), _cm(("apiGroup", TV2.GROUP), ("kind", rt_kind), ("name", rt_name)),
                    note=f"job-kind: the runtime it runs on ({'generated for this job' if generated else 'given'})"))
    p.runtime = f"{rt_kind}/{rt_name} ({'generated' if generated else 'given'})"
    if generated:
        p.added.append(runtime)


def _trainer(p: Plan, j: _Job, rdzv: Rendezvous, drop_env: set, version: str) -> None:
    """Step 3 (rows node-count, trainer-container, python-unbuffered): spec.trainer, from the container."""
    ops, c, cpath, counts = p.ops, j.c, j.cpath, j.counts
    trainer = _cm(("numNodes", j.nodes))
    npp = _nproc(p, j.spec, j.elastic, c, version)
    if npp is not None:
        trainer["numProcPerNode"] = npp
    ops.append(Op("add", ("spec", "trainer"), trainer,
                  note=f"node-count: {' + '.join(f'{k} {n}' for k, n in counts.items())} replicas; nproc"))
    p.note("node-count", f"numNodes {j.nodes} ({' + '.join(f'{k} {n}' for k, n in counts.items())})")
    p.note("trainer-container", "container pytorch's " + ", ".join(k for k in ("image", "command", "args", "env", "resources")
                                                                      if k in c) + " -> spec.trainer")
    rewritten = {w.part for w in rdzv.removed}
    for key, dst in (("image", "image"), ("command", "command"), ("args", "args"), ("resources", "resourcesPerNode")):
        if key in c:
            # a comment on a command whose words were removed no longer holds
            ops.append(Op("move", ("spec", "trainer", dst), src=cpath + (key,), note=f"trainer-container: {key}"
                          if key == "image" else "", keep_comments=key not in rewritten))
    env = as_list(c.get("env"))
    left_env = [e for e in env if not (isinstance(e, dict) and e.get("name") in drop_env)]
    if "env" in c:
        if left_env:
            ops.append(Op("move", ("spec", "trainer", "env"), src=cpath + ("env",)))
        else:
            ops.append(Op("remove", cpath + ("env",)))
    if INJ.V1_PYTHONUNBUFFERED[0] not in j.own:
        entry = _cm(("name", INJ.V1_PYTHONUNBUFFERED[0]), ("value", INJ.V1_PYTHONUNBUFFERED[1]))
        if left_env:
            ops.append(Op("add", ("spec", "trainer", "env", "-"), entry,
                          note="python-unbuffered: the Training Operator set it on every container"))
        else:
            from ruamel.yaml.comments import CommentedSeq
            seq = CommentedSeq()
            seq.append(entry)
            ops.append(Op("add", ("spec", "trainer", "env"), seq,
                          note="python-unbuffered: the Training Operator set it on every container"))
        p.note("python-unbuffered", "PYTHONUNBUFFERED=0 written into trainer.env")


def _run_policy(p: Plan, j: _Job, version: str) -> None:
    """The run policy fields the TrainJob has (rows suspend, active-deadline, managed-by); the PyTorchJob's own
    spec fields go; the queue label stays (row kueue)."""
    ops, run_policy, spec = p.ops, j.run_policy, j.spec
    if run_policy.get("suspend") is not None:
        ops.append(Op("move", ("spec", "suspend"), src=("spec", "runPolicy", "suspend"), note="suspend"))
        p.note("suspend", "runPolicy.suspend -> spec.suspend")
    if run_policy.get("activeDeadlineSeconds") is not None and "activeDeadlineSeconds" in TV2.spec_fields(version):
        ops.append(Op("move", ("spec", "activeDeadlineSeconds"), src=("spec", "runPolicy", "activeDeadlineSeconds"),
                      note="active-deadline"))
        p.note("active-deadline", "runPolicy.activeDeadlineSeconds -> spec.activeDeadlineSeconds")
    if run_policy.get("managedBy") == TO1.MANAGED_BY_MULTIKUEUE:
        ops.append(Op("move", ("spec", "managedBy"), src=("spec", "runPolicy", "managedBy"), note="managed-by"))
        p.note("managed-by", "runPolicy.managedBy -> spec.managedBy")
    for key in (TO1.REPLICA_SPECS, "runPolicy", "nprocPerNode", "elasticPolicy"):
        if key in spec:
            ops.append(Op("remove", ("spec", key)))
    if S.QUEUE_LABEL in as_dict(as_dict(j.data.get("metadata")).get("labels")):
        p.note("kueue", f"the label {S.QUEUE_LABEL} stays on the TrainJob")


def _pod_index(p: Plan, c: dict, cpath: tuple, two_types: bool, drop_env: set) -> None:
    """Row pod-index: env read from the pod's replica-index label reads the trainer Job's completion index (the
    same number on every node of a job of one replica type); beside a Master, a finding."""
    old, new = M.POD_INDEX_FIELD
    for i, e in enumerate(as_list(c.get("env"))):
        ref = as_dict(as_dict(as_dict(e).get("valueFrom")).get("fieldRef"))
        name = as_dict(e).get("name")
        if str(ref.get("fieldPath", "")).strip() != old or name in drop_env:
            continue
        where = cpath + ("env", i, "valueFrom", "fieldRef", "fieldPath")
        if two_types:
            p.finding("pod-index", f"env {name} reads {old}: beside a Master, a Worker's index is not its node's "
                      "(each replica type counts from 0), and no label or annotation of the TrainJob's pods holds "
                      "it: left as written, it is unset there", where,
                      claims=[("spec", "containers", MAIN, "env", str(name))])
            continue
        p.ops.append(Op("test", where, ref["fieldPath"]))
        p.ops.append(Op("replace", where, new, note=f"pod-index: env {name} from the trainer Job's completion index"))
        p.note("pod-index", f"env {name}: {old} -> {new} (node i has index i on both sides)")


def _label_maps(node: Any, path: tuple = ()):
    """(path, mapping) of every label selector map in an object: matchLabels, and a Service's spec.selector."""
    if isinstance(node, dict):
        for k, v in node.items():
            here = path + (k,)
            if k == "matchLabels" and isinstance(v, dict):
                yield here, v, path
            elif k == "selector" and isinstance(v, dict) and v and all(isinstance(x, str) for x in v.values()) \
                    and not ({"matchLabels", "matchExpressions"} & set(v)):
                yield here, v, here
            else:
                yield from _label_maps(v, here)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _label_maps(v, path + (i,))


# The keys under which a selector picks pods (a NetworkPolicy's podSelector, a Service's or a
# PodDisruptionBudget's selector, a pod affinity term's labelSelector); a namespaceSelector picks namespaces.
POD_SELECTOR_KEYS = ("podSelector", "selector", "labelSelector")


def _companion(d, job, version: str) -> Plan | None:
    """Row selectors: another object (a NetworkPolicy, a Service, a PodDisruptionBudget) that selects this job's
    pods by the Training Operator's labels, moved to JobSet's so that it selects the TrainJob's pods; one that
    selects them by other labels (the torchft Lighthouse's NetworkPolicy: the groups' own label) is left as
    written, and the proof checks it still selects the same pods."""
    if not isinstance(d.data, dict):
        return None
    job_key, jobset_key = M.LABEL_JOB
    master_key, master_value, index_key, index_value = M.LABEL_MASTER
    c = Plan(d, version, by="key", after_key=d.key(), compare=False)
    for path, labels, selector in _label_maps(d.data):
        if str(labels.get(job_key)) != job.name:
            if selector and selector[-1] in POD_SELECTOR_KEYS:
                c.watch.append(selector)
            continue
        c.ops.append(Op("move", path + (jobset_key,), src=path + (job_key,),
                        note=f"selectors: {job_key} -> {jobset_key} (the JobSet is named after the TrainJob)"))
        if labels.get(master_key) == master_value:
            c.ops.append(Op("remove", path + (master_key,)))
            c.ops.append(Op("add", path + (index_key,), index_value))
        left = [f"{k}={v}" for k, v in labels.items() if str(k).startswith("training.kubeflow.org/")
                and k not in (job_key, master_key)]
        if left:
            c.finding("selectors", f"{'.'.join(map(str, path))} also selects by {', '.join(left)}, which no JobSet label "
                      "says: it selects none of the TrainJob's pods", path)
        c.selectors.append(selector)
        c.note("selectors", f"{'.'.join(map(str, path))}: {job_key}={job.name} -> {jobset_key}={job.name} (selects the "
                            "TrainJob's pods)")
    return c if c.ops or c.watch else None


def _get(obj: Any, path: tuple) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _replica_differences(p: Plan, master, worker, reps, drop_env, worker_nodes) -> None:
    """Row replica-templates: every field the Worker template sets otherwise than the Master's."""
    (mkey, mrs), (wkey, wrs) = master, worker
    views = []
    for rs in (mrs, wrs):
        t = as_dict(rs.get("template"))
        np = NodePod("template", {"metadata": as_dict(t.get("metadata")), "spec": as_dict(t.get("spec"))},
                     main=TO1.CONTAINER_NAME)
        views.append(pod_view(np, set()))
    diffs = []
    _walk_diff(views[0], views[1], (), diffs)
    wbase = ("spec", TO1.REPLICA_SPECS, wkey, "template")
    for path, m, w in diffs:
        if len(path) >= 5 and path[:4] == ("spec", "containers", MAIN, "env") and path[4] in drop_env:
            continue
        where = wbase + _doc_path(as_dict(wrs.get("template")), path)
        p.finding("replica-templates", f"the Worker template's {'.'.join(map(str, path))} is {_short(w)}, the Master's "
                  f"{_short(m)}: a TrainJob's nodes share one template, so the Worker nodes get the Master's",
                  where, claims=[path], nodes=worker_nodes)
    mr = mrs.get("restartPolicy") or TO1.DEFAULT_RESTART_POLICY
    wr = wrs.get("restartPolicy") or TO1.DEFAULT_RESTART_POLICY
    if mr != wr:
        p.finding("replica-templates", f"the Worker's restartPolicy is {wr}, the Master's {mr}: every node gets the "
                  "Master's", ("spec", TO1.REPLICA_SPECS, wkey, "restartPolicy"), claims=[("spec", "restartPolicy")],
                  nodes=worker_nodes)


def _walk_diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            _walk_diff(a.get(k, "(absent)"), b.get(k, "(absent)"), path + (k,), out)
    elif a != b:
        out.append((path, a, b))


def _doc_path(template: dict, view_path: tuple) -> tuple:
    """The document path (below a pod template) of a pod-view path, as far as it can be followed."""
    out: tuple = ()
    cur: Any = template
    for i, part in enumerate(view_path):
        if isinstance(cur, dict) and part in cur:
            out += (part,)
            cur = cur[part]
            continue
        if isinstance(cur, list):
            key = "name" if view_path[i - 1] in ("containers", "initContainers", "volumes", "env") else \
                "mountPath" if view_path[i - 1] == "volumeMounts" else None
            name = TO1.CONTAINER_NAME if part == MAIN else part
            j = next((j for j, x in enumerate(cur) if isinstance(x, dict) and key and str(x.get(key)) == str(name)), None)
            if j is not None:
                out += (j,)
                cur = cur[j]
                continue
        break
    return out


def _short(v) -> str:
    import json
    text = json.dumps(v, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _nproc(p: Plan, spec: dict, elastic, c: dict, version: str):
    """Row nproc: the TrainJob's numProcPerNode (None: left out, Trainer's default)."""
    value = spec.get("nprocPerNode")
    where = ("spec", "nprocPerNode")
    if value is None and elastic is not None and elastic.get("nProcPerNode") is not None:
        value, where = elastic.get("nProcPerNode"), ("spec", "elasticPolicy", "nProcPerNode")
    text = str(value if value is not None else INJ.V1_DEFAULT_NPROC_PER_NODE)
    gpus = _gpus(c)
    n = as_int(text)
    launched = L.find(c) is not None or L.in_shell(c) is not None
    if launched and text in ("auto", "cpu", "gpu") and (text == "cpu" or not gpus):
        p.finding("nproc-cpu", f"nprocPerNode {text} without a GPU: torchrun started one process per CPU of the node; "
                  "Trainer starts the CPU count of resourcesPerNode (requests, else limits; at least 1)",
                  where if value is not None else ("spec",),
                  claims=[("facts", "processes per node"), ("facts", "world size")])
    if n is not None:
        p.note("nproc", f"numProcPerNode {n}")
        return n
    if SH.of(version).proc_words:
        p.note("nproc", f"numProcPerNode {text}")
        return text
    p.note("nproc", f"nprocPerNode {text} left out: Trainer's default auto" + (" (one process per GPU)" if gpus else ""))
    return None


def _gpus(c: dict) -> int:
    from ...resources import container_gpus
    return container_gpus(c)


def _findings(p: Plan, spec, run_policy, elastic, c, cpath, nodes, version) -> None:
    if elastic is not None:
        lo, hi = elastic.get("minReplicas"), elastic.get("maxReplicas")
        p.finding("elastic", f"elasticPolicy (minReplicas {lo}, maxReplicas {hi}): the TrainJob runs exactly {nodes} "
                  "node(s), the Worker replicas; a lost node restarts the whole group instead of the job going on "
                  "with fewer" + ("; the metrics (an HPA) have no equivalent" if elastic.get("metrics") else ""),
                  ("spec", "elasticPolicy"),
                  claims=[("facts", "nnodes"), ("facts", "rendezvous"), ("facts", "node rank"), ("facts", "world size"),
                          ("facts", "hosts the store")])
    for rtype, rs in as_dict(spec.get(TO1.REPLICA_SPECS)).items():
        rp = as_dict(rs).get("restartPolicy")
        path = ("spec", TO1.REPLICA_SPECS, rtype, "restartPolicy")
        if rp == "ExitCode":
            p.finding("exit-code", f"{rtype} restartPolicy ExitCode: the operator recreated a pod that exited 128 or "
                      "more and failed the job on another code; the runtime's pods restart Never and every failure "
                      "counts toward the Job's backoffLimit", path, claims=[("spec", "restartPolicy")])
        elif rp == "Always":
            p.finding("restart-always", f"{rtype} restartPolicy Always: a Job's pods restart OnFailure at most (a "
                      "container that exits 0 is not restarted)", path, claims=[("spec", "restartPolicy")])
    if run_policy.get("backoffLimit") is None:
        p.finding("backoff-limit", "runPolicy.backoffLimit unset: the Training Operator restarts pods without limit; "
                  "the trainer Job fails after Kubernetes' default of 6", ("spec", "runPolicy") if run_policy else ("spec",),
                  claims=[("job", "backoff limit")])
    if run_policy.get("ttlSecondsAfterFinished") is not None:
        p.finding("ttl", f"runPolicy.ttlSecondsAfterFinished {run_policy['ttlSecondsAfterFinished']}: a TrainJob has "
                  "no TTL (a JobSet TTL would make Trainer create the JobSet again); delete the TrainJob when done",
                  ("spec", "runPolicy", "ttlSecondsAfterFinished"), claims=[("job", "ttl after finished")])
    cpp = run_policy.get("cleanPodPolicy")
    if cpp is not None and cpp != TO1.DEFAULT_CLEAN_POD_POLICY:
        p.finding("clean-pod-policy", f"runPolicy.cleanPodPolicy {cpp}: Trainer deletes no pod when the job ends; "
                  "they go with the TrainJob", ("spec", "runPolicy", "cleanPodPolicy"),
                  claims=[("job", "pods deleted at the end")])
    if run_policy.get("activeDeadlineSeconds") is not None and "activeDeadlineSeconds" not in TV2.spec_fields(version):
        p.note("active-deadline", "runPolicy.activeDeadlineSeconds -> the runtime's trainer Job activeDeadlineSeconds")
    sp = run_policy.get("schedulingPolicy")
    if isinstance(sp, dict):
        base = ("spec", "runPolicy", "schedulingPolicy")
        ma = as_int(sp.get("minAvailable"))
        if ma is not None and ma < nodes:
            p.finding("gang", f"schedulingPolicy.minAvailable {ma} of {nodes} pods: Trainer's PodGroup needs every pod",
                      base + ("minAvailable",), claims=[("job", "gang")])
        if sp.get("queue"):
            p.finding("gang", f"schedulingPolicy.queue {sp['queue']!r} (a Volcano queue): no equivalent in the runtime's "
                      "podGroupPolicy", base + ("queue",), claims=[("job", "gang")])
        if sp.get("minResources"):
            p.finding("gang", "schedulingPolicy.minResources: Trainer's PodGroup computes its own",
                      base + ("minResources",), claims=[("job", "gang")])
    mb = run_policy.get("managedBy")
    if mb is not None and mb not in (TO1.MANAGED_BY_OPERATOR, TO1.MANAGED_BY_MULTIKUEUE):
        p.finding("managed-by", f"runPolicy.managedBy {mb!r}: a TrainJob takes Trainer's controller or MultiKueue only",
                  ("spec", "runPolicy", "managedBy"), claims=[("job", "managed by")])


def _patches(p: Plan, ctx, tmpl, pod, c, spath, cpath, version, patch_pod, patch_c) -> None:
    """Row pod-patch: the pod fields a TrainJob can patch, moved to podTemplateOverrides (2.1) or runtimePatches (2.2+)."""
    fields = [f for f in pod if f in patch_pod and f not in ("containers", "initContainers", "securityContext")]
    cfields = [f for f in c if f in patch_c and f not in ("name", "env", "securityContext")]
    meta = [k for k in ("labels", "annotations") if as_dict(tmpl.get("metadata")).get(k)]
    if not (fields or cfields or meta):
        return
    if SH.of(version).pod_changes == SH.PATCHES:
        root = ("spec", "runtimePatches")
        skeleton = [_cm(("manager", ctx.manager), ("trainingRuntimeSpec", _cm(("template", _cm(("spec", _cm(
            ("replicatedJobs", [_cm(("name", TV2.NODE), ("template", _cm(("spec", _cm(("template", _cm()))))))]))))))))]
        dest = root + (0, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template")
    else:
        root = ("spec", "podTemplateOverrides")
        skeleton = [_cm(("targetJobs", [_cm(("name", TV2.NODE))]))]
        dest = root + (0,)
    p.ops.append(Op("add", root, skeleton, note=f"pod-patch: {', '.join(meta + fields + cfields)}"))
    if meta:
        p.ops.append(Op("add", dest + ("metadata",), _cm()))
        for k in meta:
            p.ops.append(Op("move", dest + ("metadata", k), src=spath[:-1] + ("metadata", k)))
    if fields or cfields:
        p.ops.append(Op("add", dest + ("spec",), _cm()))
    for f in fields:
        p.ops.append(Op("move", dest + ("spec", f), src=spath + (f,)))
    if cfields:
        p.ops.append(Op("add", dest + ("spec", "containers"), [_cm(("name", TV2.NODE))]))
        for f in cfields:
            p.ops.append(Op("move", dest + ("spec", "containers", 0, f), src=cpath + (f,)))
    for sub, new, left in selector_changes({f: pod[f] for f in fields}):
        p.ops.append(Op("replace", dest + ("spec",) + sub, new, note="selectors: the Training Operator's labels -> JobSet's"))
        _selector_notes(p, sub, left, spath + sub)
    p.note("pod-patch", f"{', '.join(meta + fields + cfields)} -> "
                        f"{SH.of(version).pod_changes} (job {TV2.NODE})")


def _selector_notes(p: Plan, sub: tuple, left: list, where: tuple) -> None:
    view = ("spec",) + tuple(k for k in sub if not isinstance(k, int))[:2]
    if left:
        p.finding("selectors", f"the selector at {'.'.join(map(str, sub))} names {', '.join(left)}, which no JobSet "
                  "label says: left as written, it selects none of the TrainJob's pods", where, claims=[view])
    else:
        p.note("selectors", f"{'.'.join(map(str, sub))}: the Training Operator's labels -> JobSet's")


# ------------------------------------------------------------------------------------------- the runtime
def _runtime(p: Plan, ctx, doc, spec, run_policy, prs, tmpl, s_pod, s_c, c, pod, version, nodes, rdzv,
             patch_pod, patch_c, elastic):
    """Row pod-runtime: the runtime the TrainJob needs; a given one when it holds exactly that, else generated.
    Returns (runtime object, kind, name, generated)."""
    moved = {f for f in pod if f in patch_pod and f not in ("containers", "initContainers", "securityContext")}
    rpod = _cm()
    for k, v in s_pod.items():
        if k in moved or k in ("containers", "initContainers", "restartPolicy"):
            continue
        rpod[k] = copy.deepcopy(v)
    rc = _cm(("name", TV2.NODE))
    for k, v in s_c.items():
        if k in ("name", "image", "command", "args", "env", "resources") or (k in patch_c and k != "securityContext"):
            continue
        if k == "ports":
            v = [x for x in v if not (isinstance(x, dict) and x.get("name") == TO1.PORT_NAME)]
            if not v:
                p.note("rdzv-port", f"port {TO1.PORT_NAME} not carried: Trainer's rendezvous port is {TV2.TRAINER_PORT}")
                continue
        rc[k] = copy.deepcopy(v)
    containers = [rc] + [copy.deepcopy(x) for x in as_list(s_pod.get("containers")) if isinstance(x, dict)
                         and x.get("name") != TO1.CONTAINER_NAME]
    rpod["containers"] = containers
    if s_pod.get("initContainers"):
        rpod["initContainers"] = copy.deepcopy(s_pod["initContainers"])
    for sub, new, left in selector_changes(rpod):
        _set(rpod, sub, new)
        _selector_notes(p, sub, left, ("spec", TO1.REPLICA_SPECS) + tuple(p.ops[0].path[2:3]) + ("template", "spec") + sub)
    rp = prs.get("restartPolicy") or TO1.DEFAULT_RESTART_POLICY
    pod_rp = INJ.V1_POD_RESTART_POLICY.get(rp, rp)
    if pod_rp == "Always":
        pod_rp = "OnFailure"
    if pod_rp != "OnFailure":
        rpod["restartPolicy"] = pod_rp
        p.note("restart-policy", f"restartPolicy {pod_rp} in the runtime's pod template")
    elif p.facts.get("replica_groups"):
        rpod["restartPolicy"] = pod_rp      # written, not left to the JobSet webhook's default: what the job is for
    sp = run_policy.get("schedulingPolicy") if isinstance(run_policy.get("schedulingPolicy"), dict) else None
    if sp and sp.get("priorityClass") and "priorityClassName" not in rpod:
        rpod["priorityClassName"] = sp["priorityClass"]
        p.note("gang", f"schedulingPolicy.priorityClass -> the pods' priorityClassName {sp['priorityClass']}")
    job_spec = _cm()
    if run_policy.get("backoffLimit") is not None:
        job_spec["backoffLimit"] = run_policy["backoffLimit"]
        p.note("backoff-limit", f"runPolicy.backoffLimit {run_policy['backoffLimit']} -> the trainer Job's backoffLimit")
    if "activeDeadlineSeconds" not in TV2.spec_fields(version) and run_policy.get("activeDeadlineSeconds") is not None:
        job_spec["activeDeadlineSeconds"] = run_policy["activeDeadlineSeconds"]
    pt = _cm()
    pt["spec"] = rpod
    job_spec["template"] = pt
    rjob = _cm(("name", TV2.NODE),
               ("template", _cm(("metadata", _cm(("labels", _cm((TV2.ANCESTOR_LABEL, TV2.ANCESTOR_TRAINER))))),
                                ("spec", job_spec))))
    js_spec = _cm()
    if rdzv.restarts:
        js_spec["failurePolicy"] = _cm(("maxRestarts", rdzv.restarts))
    elif p.facts.get("replica_groups"):
        js_spec["failurePolicy"] = _cm(("maxRestarts", 0))
        js_spec.yaml_set_comment_before_after_key(
            "failurePolicy", before=f"{NOTE_HEADER}: torchft replica groups: a failed pod restarts alone (the node "
            "Job's restartPolicy, backoffLimit); JobSet restarts no group\n(docs/migration.md#replica-group-restarts)")
        limit = run_policy.get("backoffLimit")
        p.note("replica-group-restarts", f"torchft replica groups: each pod restarts alone (the node Job's "
               f"restartPolicy {pod_rp}, backoffLimit {limit if limit is not None else 'unset: 6'}); "
               "failurePolicy.maxRestarts 0: JobSet restarts no group, past the backoffLimit the TrainJob fails "
               "as the PyTorchJob did")
    js_spec["replicatedJobs"] = [rjob]
    rspec = _cm(("mlPolicy", _cm(("numNodes", 1), ("torch", _cm()))))
    if sp is not None:
        cos = _cm()
        if sp.get("scheduleTimeoutSeconds") is not None:
            cos["scheduleTimeoutSeconds"] = sp["scheduleTimeoutSeconds"]
        rspec["podGroupPolicy"] = _cm(("coscheduling", cos))
        # the Training Operator makes the PodGroup only when it runs with --gang-scheduler-name; Trainer always
        p.claim("gang", ("job", "gang"), after={"timeout": sp.get("scheduleTimeoutSeconds"), "needs": "every pod"})
        p.note("gang", "runPolicy.schedulingPolicy -> the runtime's podGroupPolicy.coscheduling"
                       + (f" (scheduleTimeoutSeconds {sp['scheduleTimeoutSeconds']})" if "scheduleTimeoutSeconds" in cos else ""))
    rspec["template"] = _cm(("spec", js_spec))
    # A runtime given to the migration that holds exactly this (its image aside: the trainer's wins).
    for cand in ctx.runtimes:
        if isinstance(cand.data, dict) and _normal(as_dict(cand.data.get("spec"))) == _normal(plain(rspec)):
            return None, cand.kind, cand.name, False
    name = doc.name
    if any(r.name == name for r in ctx.runtimes):
        name = f"{doc.name}-migrated"
    meta = _cm(("name", name), ("labels", _cm((TV2.FRAMEWORK_LABEL, "torch"))))
    obj = _cm(("apiVersion", TV2.API_VERSION), ("kind", TV2.CLUSTER_TRAINING_RUNTIME), ("metadata", meta), ("spec", rspec))
    obj.yaml_set_start_comment(f"{NOTE_HEADER}: the runtime of TrainJob {doc.name}: the pod fields a TrainJob cannot "
                               f"set (docs/migration.md#pod-runtime)")
    return obj, TV2.CLUSTER_TRAINING_RUNTIME, name, True


def _normal(spec: Any) -> Any:
    """A runtime's spec as the fit test reads it: the TrainJob decides numNodes and the node image."""
    s = copy.deepcopy(plain(spec))
    ml = as_dict(s.get("mlPolicy"))
    ml.pop("numNodes", None)
    torch = ml.get("torch")
    if isinstance(torch, dict) and str(torch.get("numProcPerNode", "auto")) == "auto":
        torch.pop("numProcPerNode", None)
    for rj in as_list(as_dict(as_dict(s.get("template")).get("spec")).get("replicatedJobs")):
        pod = as_dict(as_dict(as_dict(as_dict(rj).get("template")).get("spec")).get("template")).get("spec")
        for cont in as_list(as_dict(pod).get("containers")):
            if isinstance(cont, dict) and cont.get("name") == TV2.NODE:
                cont.pop("image", None)
    return s


# -- the proof's side (kdt.operators.framework.migrate.compare) ------------------------------------------
def side(doc, items: list, gang: str | None = None) -> Side:
    """The PyTorchJob's pods (`items`: the merge preview's Pod objects of `doc`) and its run policy; `gang`: the
    operator's --gang-scheduler-name when the preview ran with one (no PodGroup without it)."""
    pods = []
    for e in items:
        if "rank" not in e.facts:
            continue
        base_inits = {c.get("name") for c in as_list(as_dict(as_dict(e.base).get("spec")).get("initContainers"))
                      if isinstance(c, dict)}
        injected = frozenset(c.get("name") for c in as_list(as_dict(e.obj.get("spec")).get("initContainers"))
                             if isinstance(c, dict) and c.get("name") not in base_inits)
        rank = int(e.facts["rank"])
        # what the gang scheduler's decoration wrote (control/podgroup_control.go DecoratePodTemplateSpec)
        gang_paths = frozenset(p for p, origin in e.trace.entries if origin.startswith(XTO.GANG))
        pods.append(NodePod(f"node {rank}", e.obj, TO1.CONTAINER_NAME, SIDES.names(e.name, None, doc.namespace), rank,
                            injected, gang_paths))
    spec = as_dict(doc.data.get("spec"))
    rp = as_dict(spec.get("runPolicy"))
    nodes = len(pods)
    job = {"backoff limit": rp.get("backoffLimit") if rp.get("backoffLimit") is not None else SIDES.UNLIMITED,
           "active deadline": rp.get("activeDeadlineSeconds"),
           "ttl after finished": rp.get("ttlSecondsAfterFinished"),
           "suspend": bool(rp.get("suspend")),
           "pods deleted at the end": rp.get("cleanPodPolicy") or TO1.DEFAULT_CLEAN_POD_POLICY,
           "group restarts": 0,
           "managed by": rp.get("managedBy") if rp.get("managedBy") not in (None, TO1.MANAGED_BY_OPERATOR) else None}
    sp = rp.get("schedulingPolicy")
    if isinstance(sp, dict) and gang:      # the operator makes a PodGroup only with --gang-scheduler-name
        ma = as_int(sp.get("minAvailable"))
        job["gang"] = {"timeout": sp.get("scheduleTimeoutSeconds"),
                       "needs": "every pod" if ma is None or ma >= nodes else f"{ma} pods"}
    else:
        job["gang"] = None
    job["queue"] = as_dict(as_dict(doc.data.get("metadata")).get("labels")).get(S.QUEUE_LABEL)
    job.update(SIDES.meta(doc.data))
    # The `pytorchjob-port` port of the `pytorch` container is the operator's MASTER_PORT (envvar.go
    # getPortFromPyTorchJob).
    ports = frozenset(as_int(pt.get("containerPort")) for np in pods for c in as_list(as_dict(np.obj.get("spec")).get("containers"))
                      if isinstance(c, dict) and c.get("name") == TO1.CONTAINER_NAME
                      for pt in as_list(c.get("ports")) if isinstance(pt, dict) and pt.get("name") == TO1.PORT_NAME)
    return Side(pods, job, ports)

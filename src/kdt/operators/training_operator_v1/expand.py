"""PyTorchJob (Training Operator v1.9.4) -> its pods, their Services and the PodGroup, as the operator makes them.

1. The validating webhook (pytorchjob_webhook.go validatePyTorchJob) on the object as written: what it
   refuses is the preview's finding (kdt.operators.training_operator_v1.facts.webhook_rejections, the same
   the lint rules report) and nothing is created.
2. A job another controller manages (runPolicy.managedBy, common/job.go ManagedByExternalController) or
   a suspended one (runPolicy.suspend, ReconcileJobs) is held: nothing is created, and the preview says why.
3. The controller's defaults (pytorch_defaults.go SetDefaults_PyTorchJob: replicas, restartPolicy, the
   `pytorchjob-port` port, elastic bounds, nprocPerNode), then each pod (common/pod.go createNewPod; the
   env of pytorch/envvar.go, master.go, elastic.go; the init container of initcontainer.go), its headless
   Service (common/service.go CreateNewService) and, with a gang scheduler, the PodGroup (common/job.go
   ReconcileJobs, util.go CalcPGMinResources; control/podgroup_control.go decorates the pods).
Past `Limit` pods of a replica type, the first and last are built and the rest counted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...documents import Document
from ...fields import as_int, exact_quantity, format_quantity
from ...findings import WARNING, Finding
from .. import injection as INJ
from . import pytorch_init as PI
from .. import scheduling as SCHED
from . import facts as TO1
from ...expand.merge import Trace, append, clone, ensure_dict, ensure_list, find, put
from ...expand.model import Expanded, Held, Limit, LoadFn

RULE = "expand"
DEFAULTS = "Training Operator defaults (pytorch_defaults.go)"
ENVVAR = "Training Operator env (pytorch/envvar.go)"
MASTER = "Training Operator master env (pytorch/master.go)"
ELASTIC = "Training Operator elastic env (pytorch/elastic.go)"
POD = "Training Operator pod (common/pod.go createNewPod)"
SERVICE = "Training Operator Service (common/service.go CreateNewService)"
GANG = "Training Operator gang scheduling (common/job.go ReconcileJobs, control/podgroup_control.go)"


def admission(doc: Document) -> list[Finding]:
    """The webhook's rejections and warnings of a PyTorchJob, as findings (the lint rules' own)."""
    return [doc.finding(r.rule, r.message, r.path, level=WARNING if r.warning else "error")
            for r in TO1.webhook_rejections(doc.data)]


def held(doc: Document, spec: dict) -> Held | None:
    run = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), dict) else {}
    managed = run.get("managedBy")
    if managed is not None and managed != TO1.MANAGED_BY_OPERATOR:
        return Held(doc, f"runPolicy.managedBy is {managed!r}: the Training Operator leaves the job to that "
                         "controller and creates nothing (common/job.go ManagedByExternalController)",
                    ("spec", "runPolicy", "managedBy"))
    if run.get("suspend") is True:
        return Held(doc, "runPolicy.suspend is true: the Training Operator creates no pods and no Services "
                         "until it is false (common/job.go ReconcileJobs)", ("spec", "runPolicy", "suspend"))
    return None


def _port(spec: dict) -> int | None:
    """The `pytorchjob-port` of the `pytorch` container of a (defaulted) pod spec."""
    for c in spec.get("containers") or []:
        if isinstance(c, dict) and c.get("name") == TO1.CONTAINER_NAME:
            for p in c.get("ports") or []:
                if isinstance(p, dict) and p.get("name") == TO1.PORT_NAME:
                    return as_int(p.get("containerPort"))
    return None


def _default(spec: dict) -> dict[str, dict]:
    """SetDefaults_PyTorchJob on this copy: replica type -> {"key", "spec", what was defaulted}."""
    replicas: dict[str, dict] = {}
    for rtype, rspec in spec[TO1.REPLICA_SPECS].items():
        canon = next((t for t in TO1.REPLICA_TYPES if t.lower() == str(rtype).lower()), rtype)
        r = {"key": rtype, "spec": rspec}
        if rspec.get("replicas") is None:
            rspec["replicas"] = INJ.V1_DEFAULT_REPLICAS
            r["replicas_defaulted"] = True
        if rspec.get("restartPolicy") is None:
            rspec["restartPolicy"] = TO1.DEFAULT_RESTART_POLICY
            r["restart_defaulted"] = True
        containers = rspec["template"]["spec"]["containers"]
        c = containers[find(containers, "name", TO1.CONTAINER_NAME)]
        if _port(rspec["template"]["spec"]) is None:
            ensure_list(c, "ports").append({"name": TO1.PORT_NAME, "containerPort": TO1.DEFAULT_PORT})
            r["port_defaulted"] = True
        replicas[canon] = r
    elastic = spec.get("elasticPolicy")
    if isinstance(elastic, dict) and TO1.WORKER in replicas:     # setElasticPolicy
        lo, hi = elastic.get("minReplicas"), elastic.get("maxReplicas")
        wrep = replicas[TO1.WORKER]["spec"].get("replicas")
        elastic["minReplicas"] = lo if lo is not None else (hi if hi is not None else wrep)
        elastic["maxReplicas"] = hi if hi is not None else (lo if lo is not None else wrep)
    if spec.get("nprocPerNode") is None and (not isinstance(elastic, dict) or elastic.get("nProcPerNode") is None):
        spec["nprocPerNode"] = INJ.V1_DEFAULT_NPROC_PER_NODE    # setDefaultNprocPerNode
        spec["_nproc_defaulted"] = True
    return replicas


def _elastic_env(name: str, elastic: dict, worker: dict) -> list[tuple[str, str]]:
    """elastic.go ElasticEnvVarGenerator.Generate, in its order."""
    host = elastic.get("rdzvHost") or TO1.elastic_rdzv_host(name)
    port = elastic.get("rdzvPort")
    if port is None:
        port = _port(worker["spec"]["template"]["spec"])
    env = [("PET_RDZV_ENDPOINT", f"{host}:{port}"),
           ("PET_RDZV_BACKEND", str(elastic.get("rdzvBackend") or INJ.V1_DEFAULT_RDZV_BACKEND)),
           ("PET_NNODES", f"{elastic.get('minReplicas')}:{elastic.get('maxReplicas')}")]
    if elastic.get("maxRestarts") is not None:
        env.append(("PET_MAX_RESTARTS", str(elastic["maxRestarts"])))
    if elastic.get("nProcPerNode") is not None:     # the deprecated field; spec.nprocPerNode is envvar.go's
        env.append(("PET_NPROC_PER_NODE", str(elastic["nProcPerNode"])))
    if elastic.get("rdzvId") is not None:
        env.append(("PET_RDZV_ID", str(elastic["rdzvId"])))
    conf = elastic.get("rdzvConf")
    if isinstance(conf, list) and conf:
        env.append(("PET_RDZV_CONF", ",".join(f"{c.get('key')}={c.get('value')}" for c in conf if isinstance(c, dict))))
    if elastic.get("standalone") is True:
        env.append(("PET_STANDALONE", ""))
    return env


@dataclass
class _Job:
    """What every pod of one PyTorchJob shares."""
    doc: Document
    job: dict
    spec: dict
    replicas: dict
    total: int
    world: int
    master_port: int | None
    elastic_env: list | None      # None without elasticPolicy
    init: PI.InitTemplate = field(default_factory=PI.InitTemplate)   # the cluster's init container template
    init_containers: list = field(default_factory=list)   # what it gives each Worker pod (a job with a Master)
    gang: str | None = None        # the operator's --gang-scheduler-name
    facts: dict = field(default_factory=dict)

    @property
    def has_master(self) -> bool:
        return TO1.MASTER in self.replicas


def _labels(j: _Job, canon: str, index: int) -> list[tuple[str, str]]:
    """GenLabels (operator-name, job-name), replica-type, replica-index (common/pod.go, service.go)."""
    return [(INJ.V1_LABEL_OPERATOR, INJ.V1_OPERATOR_NAME), (INJ.V1_LABEL_JOB_NAME, j.doc.name.replace("/", "-")),
            (INJ.V1_LABEL_REPLICA_TYPE, canon.lower()), (INJ.V1_LABEL_REPLICA_INDEX, str(index))]


def _pod(j: _Job, canon: str, index: int, original: dict) -> Expanded:
    """One pod as createNewPod makes it: labels, name, env and init container (SetClusterSpec), restartPolicy,
    the gang scheduler's decoration."""
    r = j.replicas[canon]
    rspec = r["spec"]
    name = j.doc.name
    trace = Trace()
    template = clone(rspec.get("template") or {})
    meta = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    pod_name = TO1.pod_name(name, canon, index)
    pod = type(j.job)()
    pod["apiVersion"] = "v1"
    pod["kind"] = "Pod"
    pmeta = type(j.job)()
    pmeta["name"] = pod_name
    trace.note(("metadata", "name"), f"{POD}: <job>-<type>-<index> (GenGeneralName)")
    if j.doc.namespace:
        pmeta["namespace"] = j.doc.namespace
    for k, v in meta.items():
        if k not in ("name", "namespace"):
            pmeta[k] = v
    labels = ensure_dict(pmeta, "labels")
    for k, v in _labels(j, canon, index):
        put(labels, k, v, ("metadata", "labels"), trace, f"{POD}: GenLabels, replica type and index")
    # pytorchjob_controller.go IsMasterRole: the Master, or Worker 0 of a job without one.
    if canon == TO1.MASTER or (not j.has_master and canon == TO1.WORKER and index == 0):
        put(labels, INJ.V1_LABEL_JOB_ROLE, "master", ("metadata", "labels"), trace,
            f"{POD}: the master role (IsMasterRole: the Master, else Worker 0)")
    pod["metadata"] = pmeta
    pspec = template.get("spec")
    pod["spec"] = pspec
    sp = ("spec",)
    containers = pspec["containers"]
    ci = find(containers, "name", TO1.CONTAINER_NAME)
    if r.get("port_defaulted"):
        ports = containers[ci]["ports"]
        trace.note(sp + ("containers", ci, "ports", len(ports) - 1), f"{DEFAULTS}: port {TO1.PORT_NAME} {TO1.DEFAULT_PORT}")
    rank = index + (1 if canon == TO1.WORKER and j.has_master else 0)
    for i, c in enumerate(containers):
        if isinstance(c, dict):
            _inject_env(j, c, sp + ("containers", i, "env"), trace, canon, rank)
    if j.has_master and canon == TO1.WORKER and j.init_containers:
        inits = ensure_list(pspec, "initContainers")
        for c in j.init_containers:
            append(inits, clone(c), sp + ("initContainers",), trace,
                   f"Training Operator init container (pytorch/initcontainer.go), from {j.init.source}")
    # core/pod.go SetRestartPolicy: the replica's, ExitCode -> Never.
    rp = str(rspec.get("restartPolicy"))
    why = f"default {TO1.DEFAULT_RESTART_POLICY} ({DEFAULTS})" if r.get("restart_defaulted") else f"replica restartPolicy {rp}"
    put(pspec, "restartPolicy", INJ.V1_POD_RESTART_POLICY.get(rp, rp), sp, trace,
        f"Training Operator: {why}" + (" (ExitCode runs as Never, core/pod.go SetRestartPolicy)" if rp == "ExitCode" else ""))
    if j.gang:
        _decorate(j, canon, pspec, pmeta, trace)
    facts = {"rank": rank, "replica_type": canon, "world_size": j.world,
             "master": TO1.master_address(name) if j.has_master else None}
    if j.has_master and canon == TO1.WORKER:
        facts["init_template"] = j.init.source
    return Expanded(obj=pod, source=j.doc, base=clone(original), base_doc=j.doc,
                    base_path=("spec", TO1.REPLICA_SPECS, r["key"], "template"), trace=trace, facts=facts)


def _decorate(j: _Job, canon: str, pspec: dict, pmeta: dict, trace: Trace) -> None:
    """DecoratePodTemplateSpec: the scheduler name unless one is set; Volcano's group and task annotations,
    or the coscheduling pod-group label."""
    volcano = j.gang == TO1.GANG_VOLCANO
    if not pspec.get("schedulerName"):
        put(pspec, "schedulerName", SCHED.VOLCANO_SCHEDULER_NAME if volcano else j.gang, ("spec",), trace,
            f"{GANG}: --gang-scheduler-name {j.gang}")
    if volcano:
        ann = ensure_dict(pmeta, "annotations")
        put(ann, SCHED.VOLCANO_GROUP_ANNOTATION, j.doc.name, ("metadata", "annotations"), trace, GANG)
        put(ann, SCHED.VOLCANO_TASK_SPEC_ANNOTATION, canon.lower(), ("metadata", "annotations"), trace, GANG)
    else:
        put(ensure_dict(pmeta, "labels"), SCHED.COSCHEDULING_POD_LABEL, j.doc.name, ("metadata", "labels"), trace, GANG)


def _inject_env(j: _Job, c: dict, ep: tuple, trace: Trace, canon: str, rank: int) -> None:
    """envvar.go setPodEnv: appended to every container, in its order."""
    env = ensure_list(c, "env")
    append(env, {"name": INJ.V1_PYTHONUNBUFFERED[0], "value": INJ.V1_PYTHONUNBUFFERED[1]}, ep, trace, ENVVAR)
    if j.has_master:
        addr = TO1.master_address(j.doc.name)
        for env_name, value, why in (
                ("MASTER_PORT", str(j.master_port), f"{MASTER}: the Master's {TO1.PORT_NAME}"),
                ("PET_MASTER_PORT", str(j.master_port), f"{MASTER}: the Master's {TO1.PORT_NAME}"),
                ("MASTER_ADDR", addr, f"{MASTER}: <job>-master-0"),
                ("PET_MASTER_ADDR", addr, f"{MASTER}: <job>-master-0"),
                ("WORLD_SIZE", str(j.world), f"{ENVVAR}: {j.total} replicas x nprocPerNode {j.spec.get('nprocPerNode')} "
                                             "(1 unless an integer)"),
                ("RANK", str(rank), f"{ENVVAR}: replica index" + (" + 1 on workers" if canon == TO1.WORKER else "")),
                ("PET_NODE_RANK", str(rank), f"{ENVVAR}: same as RANK")):
            append(env, {"name": env_name, "value": value}, ep, trace, why)
    if j.spec.get("nprocPerNode") is not None:
        append(env, {"name": "PET_NPROC_PER_NODE", "value": str(j.spec["nprocPerNode"])}, ep, trace,
               f"{ENVVAR}: spec.nprocPerNode" + (" (default auto, setDefaultNprocPerNode)" if j.spec.get("_nproc_defaulted") else ""))
    if j.elastic_env is not None:
        for env_name, value in j.elastic_env:
            append(env, {"name": env_name, "value": value}, ep, trace, f"{ELASTIC}: {env_name}")
    else:
        append(env, {"name": "PET_NNODES", "value": str(j.total)}, ep, trace, f"{ENVVAR}: total replicas")


def _service(j: _Job, canon: str, index: int) -> Expanded:
    """CreateNewService: headless, named and labelled as the pod (no job-role), the `pytorch` ports."""
    r = j.replicas[canon]
    trace = Trace()
    labels = dict(_labels(j, canon, index))
    pod_spec = r["spec"]["template"]["spec"]
    c = pod_spec["containers"][find(pod_spec["containers"], "name", TO1.CONTAINER_NAME)]
    ports = sorted(((str(p.get("name") or ""), as_int(p.get("containerPort"))) for p in c.get("ports") or []
                    if isinstance(p, dict)), key=lambda x: x[0])
    meta = {"name": TO1.pod_name(j.doc.name, canon, index)}
    if j.doc.namespace:
        meta["namespace"] = j.doc.namespace
    meta["labels"] = labels
    obj = {"apiVersion": "v1", "kind": "Service", "metadata": meta,
           "spec": {"clusterIP": TO1.SERVICE_CLUSTER_IP, "selector": dict(labels),
                    "ports": [{"name": n, "port": p} for n, p in ports]}}
    for path in (("metadata",), ("spec",)):
        trace.note(path, SERVICE)
    return Expanded(obj=obj, source=j.doc, base=None, base_doc=j.doc,
                    base_path=("spec", TO1.REPLICA_SPECS, r["key"]), trace=trace, facts={"replica_type": canon})


def _pod_group(j: _Job) -> Expanded:
    """The PodGroup of ReconcileJobs: minMember, queue, priority class, minResources, timeout."""
    run = j.spec.get("runPolicy") if isinstance(j.spec.get("runPolicy"), dict) else {}
    sp = run.get("schedulingPolicy") if isinstance(run.get("schedulingPolicy"), dict) else {}
    min_member = as_int(sp.get("minAvailable"), j.total)
    min_resources = sp.get("minResources")
    why_res = "schedulingPolicy.minResources"
    if min_resources is None:
        min_resources = _min_resources(j, min_member)
        why_res = (f"the requests of the first {min_member} pods (CalcPGMinResources; replicas taken in type order: "
                   "their PriorityClass values are the cluster's)")
    meta = {"name": j.doc.name}
    if j.doc.namespace:
        meta["namespace"] = j.doc.namespace
    ann = (j.job.get("metadata") or {}).get("annotations")
    if ann:
        meta["annotations"] = dict(ann)
    if j.gang == TO1.GANG_VOLCANO:
        spec = {"minMember": min_member, "queue": sp.get("queue") or TO1.VOLCANO_DEFAULT_QUEUE,
                "priorityClassName": sp.get("priorityClass") or "", "minResources": min_resources}
        api = SCHED.VOLCANO_API
    else:
        spec = {"minMember": min_member, "minResources": min_resources}
        if sp.get("scheduleTimeoutSeconds") is not None:
            spec["scheduleTimeoutSeconds"] = sp["scheduleTimeoutSeconds"]
        api = SCHED.COSCHEDULING_API
    trace = Trace()
    trace.note(("spec", "minMember"), f"{GANG}: " + ("schedulingPolicy.minAvailable" if sp.get("minAvailable") is not None
                                                    else "the sum of the replicas"))
    trace.note(("spec", "minResources"), f"{GANG}: {why_res}")
    obj = {"apiVersion": api, "kind": "PodGroup", "metadata": meta, "spec": spec}
    return Expanded(obj=obj, source=j.doc, base=None, base_doc=j.doc, base_path=("spec", "runPolicy"),
                    trace=trace, facts={"gang": j.gang})


def _hpa(j: _Job) -> Expanded | None:
    """pytorch/hpa.go ReconcileHPA, desiredHPA: with elasticPolicy.metrics, a HorizontalPodAutoscaler named as the
    job, scaling it between the (defaulted) elastic bounds on those metrics."""
    elastic = j.spec.get("elasticPolicy") if isinstance(j.spec.get("elasticPolicy"), dict) else None
    if elastic is None or elastic.get("metrics") is None:
        return None
    meta = {"name": j.doc.name}
    if j.doc.namespace:
        meta["namespace"] = j.doc.namespace
    spec = {"scaleTargetRef": {"kind": TO1.KIND, "name": j.doc.name, "apiVersion": TO1.API_VERSION}}
    if elastic.get("minReplicas") is not None:
        spec["minReplicas"] = elastic["minReplicas"]
    spec["maxReplicas"] = elastic.get("maxReplicas")
    spec["metrics"] = clone(elastic["metrics"])
    trace = Trace()
    trace.note(("spec",), "Training Operator HPA (pytorch/hpa.go desiredHPA): elasticPolicy bounds and metrics")
    return Expanded(obj={"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta, "spec": spec},
                    source=j.doc, base=None, base_doc=j.doc, base_path=("spec", "elasticPolicy"), trace=trace)


def _min_resources(j: _Job, min_member: int) -> dict:
    """CalcPGMinResources: each container's requests (its limits when it has no requests), summed over the
    first `min_member` pods."""
    total: dict = {}
    binary: dict = {}
    count = 0
    for canon in TO1.REPLICA_TYPES:
        if canon not in j.replicas:
            continue
        rspec = j.replicas[canon]["spec"]
        n = as_int(rspec.get("replicas"), 0)
        take = max(0, min(n, min_member - count))
        count += take
        for c in (rspec["template"]["spec"].get("containers") or []):
            res = c.get("resources") if isinstance(c, dict) and isinstance(c.get("resources"), dict) else {}
            src = res.get("requests") if res.get("requests") is not None else res.get("limits")
            for k, v in (src or {}).items():
                q = exact_quantity(v)
                if q is not None:
                    total[k] = total.get(k, 0) + q[0] * take
                    binary.setdefault(k, q[1])
    return {k: format_quantity(v, binary[k]) for k, v in total.items()}


def expand(doc: Document, load: LoadFn, options: dict | None = None) -> tuple[list, list[Finding]]:
    """What the operator makes of PyTorchJob `doc`. `options`: the cluster's init container template
    (pytorch_init.OPTION; else the built-in one), its --gang-scheduler-name (GANG_OPTION), `limit`."""
    options = options or {}
    limit: Limit = options.get("limit") or Limit()
    findings = admission(doc)
    if any(f.level != WARNING for f in findings):
        return [], findings
    job = load(doc)
    spec = job.get("spec") if isinstance(job, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get(TO1.REPLICA_SPECS), dict):
        return [], findings
    h = held(doc, spec)
    if h is not None:
        return [h], findings
    originals = {str(k): clone((r or {}).get("template")) for k, r in spec[TO1.REPLICA_SPECS].items()}
    replicas = _default(spec)
    if not replicas:
        return [Held(doc, f"spec.{TO1.REPLICA_SPECS} is empty: the operator creates no pods", ("spec", TO1.REPLICA_SPECS))], findings
    elastic = spec.get("elasticPolicy") if isinstance(spec.get("elasticPolicy"), dict) else None
    total = sum(as_int(r["spec"].get("replicas"), 0) for r in replicas.values())
    master_port = _port(replicas[TO1.MASTER]["spec"]["template"]["spec"]) if TO1.MASTER in replicas else None
    elastic_env = _elastic_env(doc.name, elastic, replicas[TO1.WORKER]) if elastic is not None else None
    init: PI.InitTemplate = options.get(PI.OPTION) or PI.InitTemplate()
    init_containers: list = []
    if TO1.MASTER in replicas and TO1.WORKER in replicas:
        try:
            init_containers = init.containers(doc.name)
        except PI.TemplateError as exc:
            return [], findings + [doc.finding(RULE, f"the Training Operator creates no Worker pod: its init container "
                                                     f"{init.source} fails: {exc}",
                                               ("spec", TO1.REPLICA_SPECS, replicas[TO1.WORKER]["key"]))]
    j = _Job(doc, job, spec, replicas, total, TO1.world_size(total, spec.get("nprocPerNode")), master_port,
             elastic_env, init, init_containers, options.get(TO1.GANG_OPTION))
    out: list = []
    elided: list = []
    hpa = _hpa(j)
    if hpa is not None:
        out.append(hpa)
    if j.gang:
        out.append(_pod_group(j))
    for canon in TO1.REPLICA_TYPES:
        if canon not in replicas:
            continue
        n = as_int(replicas[canon]["spec"].get("replicas"), 0)
        shown = limit.indices(n, elided, f"{canon} pods and Services")
        out += [_pod(j, canon, i, originals[replicas[canon]["key"]]) for i in shown]
        out += [_service(j, canon, i) for i in shown]
    if elided:
        for e in out:
            e.facts["elided"] = elided
    return out, findings

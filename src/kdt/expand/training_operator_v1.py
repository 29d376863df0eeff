"""PyTorchJob (Training Operator v1) -> the pods the operator creates, one per replica.

The defaulting webhook runs first (pytorch_defaults.go: replicas, restartPolicy,
the `pytorchjob-port` port, nprocPerNode, elastic bounds), then the controller
builds each pod from its replica template (pkg/controller.v1/pytorch: envvar.go,
master.go, elastic.go, initcontainer.go; pkg/controller.v1/common/pod.go).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..documents import Document
from ..findings import Finding
from ..operators import injection as INJ
from ..operators import pytorch_init as PI
from ..operators import training_operator_v1 as TO1
from ..fields import as_int
from .merge import Trace, append, clone, ensure_dict, ensure_list, find, put
from .model import Expanded, LoadFn

RULE = "expand"
WEBHOOK = "Training Operator defaulting (pytorch_defaults.go)"
ENVVAR = "Training Operator env (pytorch/envvar.go)"
MASTER = "Training Operator master env (pytorch/master.go)"
ELASTIC = "Training Operator elastic env (pytorch/elastic.go)"



def _port(spec: dict) -> int | None:
    """The `pytorchjob-port` of the `pytorch` container of a (defaulted) pod spec."""
    for c in spec.get("containers") or []:
        if isinstance(c, dict) and c.get("name") == TO1.CONTAINER_NAME:
            for p in c.get("ports") or []:
                if isinstance(p, dict) and p.get("name") == TO1.PORT_NAME:
                    return as_int(p.get("containerPort"))
    return None


def _replicas(doc: Document, spec: dict) -> tuple[dict[str, dict], list[Finding]]:
    """Replica type -> {"key": as written, "spec": replica spec}; what the webhook rejects in them.

    pytorch_defaults.go setPytorchTypeNamesToCamelCase: "master" -> "Master"; pytorchjob_webhook.go: other
    types are rejected, and each replica needs a container named `pytorch`."""
    replicas: dict[str, dict] = {}
    findings: list[Finding] = []
    for rtype, rspec in spec[TO1.REPLICA_SPECS].items():
        canon = next((t for t in TO1.REPLICA_TYPES if t.lower() == str(rtype).lower()), None)
        path = ("spec", TO1.REPLICA_SPECS, rtype)
        if canon is None:
            findings.append(doc.finding(RULE, f"replica type {rtype!r} is not one of {', '.join(TO1.REPLICA_TYPES)}: "
                                        "the webhook rejects the job", path))
            continue
        if not isinstance(rspec, dict):
            continue
        pod_spec = ((rspec.get("template") or {}).get("spec"))
        if not isinstance(pod_spec, dict) or find(pod_spec.get("containers"), "name", TO1.CONTAINER_NAME) < 0:
            findings.append(doc.finding(RULE, f"replica {rtype} has no container named {TO1.CONTAINER_NAME!r}: "
                                        "the operator injects its env and port into that container only, "
                                        "and the webhook rejects the job", path + ("template", "spec", "containers")))
            continue
        replicas[canon] = {"key": rtype, "spec": rspec}
    return replicas, findings


def _default(replicas: dict[str, dict]) -> None:
    """pytorch_defaults.go SetDefaults_PyTorchJob on this copy: replicas 1, restartPolicy OnFailure, the
    `pytorchjob-port` port on the `pytorch` container (what was defaulted is remembered for the trace)."""
    for r in replicas.values():
        rspec = r["spec"]
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


def _elastic_env(name: str, elastic: dict, worker: dict, nproc) -> list[tuple[str, str]]:
    """elastic.go ElasticEnvVarGenerator: the PET_* env of an elastic job (the bounds as setElasticPolicy
    defaults them: a missing bound takes the other one, both missing take Worker replicas)."""
    wrep = as_int(worker["spec"].get("replicas"), 1)
    lo, hi = as_int(elastic.get("minReplicas")), as_int(elastic.get("maxReplicas"))
    lo, hi = (lo if lo is not None else hi), (hi if hi is not None else lo)
    lo, hi = (lo if lo is not None else wrep), (hi if hi is not None else wrep)
    host = elastic.get("rdzvHost") or TO1.elastic_rdzv_host(name)
    port = elastic.get("rdzvPort")
    if port is None:
        port = _port(worker["spec"]["template"]["spec"])
    env = [("PET_RDZV_ENDPOINT", f"{host}:{port}"),
           ("PET_RDZV_BACKEND", str(elastic.get("rdzvBackend") or INJ.V1_DEFAULT_RDZV_BACKEND)),
           ("PET_NNODES", f"{lo}:{hi}")]
    if elastic.get("maxRestarts") is not None:
        env.append(("PET_MAX_RESTARTS", str(elastic["maxRestarts"])))
    # elasticPolicy.nProcPerNode (deprecated) when set (elastic.go ElasticEnvVarGenerator); otherwise
    # spec.nprocPerNode (envvar.go setPodEnv, since kubeflow/training-operator#1948, v1.8). The webhook
    # forbids setting both, and the defaulter sets spec.nprocPerNode=auto only when neither is set.
    enp = elastic.get("nProcPerNode")
    env.append(("PET_NPROC_PER_NODE", str(enp if enp is not None else nproc)))
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
    nproc: object
    total: int
    world: int
    master_port: int | None
    elastic_env: list | None      # None without elasticPolicy
    init: PI.InitTemplate         # the cluster's init container template
    init_containers: list         # what it gives each Worker pod (a job with a Master)

    @property
    def has_master(self) -> bool:
        return TO1.MASTER in self.replicas


def _pod(j: _Job, canon: str, index: int, original: dict) -> Expanded:
    """One pod as the controller creates it (common/pod.go createNewPod; pytorch/envvar.go, master.go,
    elastic.go, initcontainer.go)."""
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
    trace.note(("metadata", "name"), f"Training Operator: pod name <job>-{canon.lower()}-<index> (envvar.go replicaName)")
    if j.doc.namespace:
        pmeta["namespace"] = j.doc.namespace
    for k, v in meta.items():
        if k not in ("name", "namespace"):
            pmeta[k] = v
    labels = ensure_dict(pmeta, "labels")
    for k, v in ((INJ.V1_LABEL_OPERATOR, INJ.V1_OPERATOR_NAME), (INJ.V1_LABEL_JOB_NAME, name),
                 (INJ.V1_LABEL_REPLICA_TYPE, canon.lower()), (INJ.V1_LABEL_REPLICA_INDEX, str(index))):
        put(labels, k, v, ("metadata", "labels"), trace, "Training Operator pod labels (common/pod.go)")
    if canon == TO1.MASTER:
        put(labels, INJ.V1_LABEL_JOB_ROLE, "master", ("metadata", "labels"), trace,
            "Training Operator: the Master's pods (common/pod.go createNewPod, IsMasterRole)")
    pod["metadata"] = pmeta
    pspec = template.get("spec")
    pod["spec"] = pspec
    sp = ("spec",)
    # restartPolicy (common/pod.go createNewPod -> core/pod.go SetRestartPolicy): the replica's, ExitCode -> Never.
    rp = str(rspec.get("restartPolicy"))
    why = "default OnFailure (pytorch_defaults.go)" if r.get("restart_defaulted") else f"replica restartPolicy {rp}"
    put(pspec, "restartPolicy", INJ.V1_POD_RESTART_POLICY.get(rp, rp), sp, trace,
        f"Training Operator: {why}" + (" (ExitCode runs as Never, common/pod.go)" if rp == "ExitCode" else ""))
    containers = pspec["containers"]
    ci = find(containers, "name", TO1.CONTAINER_NAME)
    if r.get("port_defaulted"):
        ports = containers[ci]["ports"]
        trace.note(sp + ("containers", ci, "ports", len(ports) - 1), f"{WEBHOOK}: port {TO1.PORT_NAME} {TO1.DEFAULT_PORT}")
    rank = index + (1 if canon == TO1.WORKER and j.has_master else 0)
    for i, c in enumerate(containers):
        if isinstance(c, dict):
            _inject_env(j, c, sp + ("containers", i, "env"), trace, canon, rank)
    if j.has_master and canon == TO1.WORKER and j.init_containers:
        inits = ensure_list(pspec, "initContainers")
        for c in j.init_containers:
            append(inits, clone(c), sp + ("initContainers",), trace,
                   f"Training Operator init container (pytorch/initcontainer.go), from {j.init.source}")
    facts = {"rank": rank, "replica_type": canon, "world_size": j.world,
             "master": TO1.master_address(name) if j.has_master else None}
    if j.has_master and canon == TO1.WORKER:
        facts["init_template"] = j.init.source
    return Expanded(obj=pod, source=j.doc, base=clone(original), base_doc=j.doc,
                    base_path=("spec", TO1.REPLICA_SPECS, r["key"], "template"), trace=trace, facts=facts)


def _inject_env(j: _Job, c: dict, ep: tuple, trace: Trace, canon: str, rank: int) -> None:
    """envvar.go setPodEnv: appended to every container, in this order."""
    env = ensure_list(c, "env")
    append(env, {"name": INJ.V1_PYTHONUNBUFFERED[0], "value": INJ.V1_PYTHONUNBUFFERED[1]}, ep, trace, ENVVAR)
    if j.has_master:
        addr = TO1.master_address(j.doc.name)
        values = {"MASTER_PORT": str(j.master_port), "PET_MASTER_PORT": str(j.master_port),
                  "MASTER_ADDR": addr, "PET_MASTER_ADDR": addr, "WORLD_SIZE": str(j.world), "RANK": str(rank),
                  "PET_NPROC_PER_NODE": str(j.nproc), "PET_NODE_RANK": str(rank)}
        for env_name in TO1.ENV_MASTER:
            why = {"MASTER_PORT": f"{MASTER}: the Master's {TO1.PORT_NAME}",
                   "PET_MASTER_PORT": f"{MASTER}: the Master's {TO1.PORT_NAME}",
                   "MASTER_ADDR": f"{MASTER}: <job>-master-0",
                   "PET_MASTER_ADDR": f"{MASTER}: <job>-master-0",
                   "WORLD_SIZE": f"{ENVVAR}: {j.total} replicas x nprocPerNode {j.nproc} (1 unless an integer)",
                   "RANK": f"{ENVVAR}: replica index" + (" + 1 on workers" if canon == TO1.WORKER else ""),
                   "PET_NPROC_PER_NODE": f"{ENVVAR}: spec.nprocPerNode" + (" (default auto)" if j.spec.get("nprocPerNode") is None else ""),
                   "PET_NODE_RANK": f"{ENVVAR}: same as RANK"}[env_name]
            append(env, {"name": env_name, "value": values[env_name]}, ep, trace, why)
    if j.elastic_env is not None:
        for env_name, value in j.elastic_env:
            append(env, {"name": env_name, "value": value}, ep, trace, f"{ELASTIC}: {env_name}")
    else:
        append(env, {"name": "PET_NNODES", "value": str(j.total)}, ep, trace, f"{ENVVAR}: total replicas")


def expand(doc: Document, load: LoadFn, init: PI.InitTemplate | None = None) -> tuple[list[Expanded], list[Finding]]:
    """The pods of PyTorchJob `doc`; `init`: the cluster's init container template (None: the built-in one)."""
    init = init or PI.InitTemplate()
    job = load(doc)
    spec = job.get("spec") if isinstance(job, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get(TO1.REPLICA_SPECS), dict):
        return [], [doc.finding(RULE, "PyTorchJob has no spec.pytorchReplicaSpecs: the operator creates nothing",
                                ("spec", TO1.REPLICA_SPECS))]
    replicas, findings = _replicas(doc, spec)
    if findings:
        return [], findings
    originals = {canon: clone(r["spec"].get("template")) for canon, r in replicas.items()}
    _default(replicas)
    elastic = spec.get("elasticPolicy") if isinstance(spec.get("elasticPolicy"), dict) else None
    nproc = spec.get("nprocPerNode")
    if nproc is None and (elastic is None or elastic.get("nProcPerNode") is None):
        nproc = INJ.V1_DEFAULT_NPROC_PER_NODE
    total = sum(as_int(r["spec"].get("replicas"), 0) for r in replicas.values())
    master_port = _port(replicas[TO1.MASTER]["spec"]["template"]["spec"]) if TO1.MASTER in replicas else None
    elastic_env = None
    if elastic is not None:
        worker = replicas.get(TO1.WORKER)
        if worker is None:
            return [], [doc.finding(RULE, "elasticPolicy needs a Worker replica spec (elastic.go: cannot find the worker spec)",
                                    ("spec", "elasticPolicy"))]
        elastic_env = _elastic_env(doc.name, elastic, worker, nproc)
    init_containers: list = []
    if TO1.MASTER in replicas and TO1.WORKER in replicas:
        try:
            init_containers = init.containers(doc.name)
        except PI.TemplateError as exc:
            return [], [doc.finding(RULE, f"the Training Operator creates no Worker pod: its init container "
                                          f"{init.source} fails: {exc}", ("spec", TO1.REPLICA_SPECS,
                                                                           replicas[TO1.WORKER]["key"]))]
    j = _Job(doc, job, spec, replicas, nproc, total, TO1.world_size(total, nproc), master_port, elastic_env,
             init, init_containers)
    out = [_pod(j, canon, index, originals[canon])
           for canon in TO1.REPLICA_TYPES if canon in replicas
           for index in range(as_int(replicas[canon]["spec"].get("replicas"), 0))]
    return out, findings

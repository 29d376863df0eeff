"""Each side of the proof in one vocabulary: the pods an operator creates from a job, and its run policy.

The kinds (kdt.kinds `migration_side`) call these with the merge preview's objects of one document:
- a PyTorchJob's pods, node i being rank i (the Master node 0), each resolving by its own name (the
  Training Operator gives every pod a headless Service of that name, common/service.go CreateNewService);
- a TrainJob's JobSet's pods (kdt.operators.jobset.expand.pods), node i being completion index i of the trainer job,
  each resolving by `<hostname>.<subdomain>` (kdt.operators.jobset.facts.subdomain).
The run policy (backoff limit, deadline, TTL, suspend, pods deleted at the end, gang, group restarts, Kueue
queue, managedBy, the job's labels) is read from the job (and for a TrainJob its runtime and JobSet) as
each operator reads it, with each side's defaults written out.
"""
from __future__ import annotations

from ..fields import as_dict, as_int, as_list
from ..operators.jobset import facts as JS
from ..operators import scheduling as S
from ..operators.trainer_v2 import facts as TV2
from ..operators.training_operator_v1 import facts as TO1
from ..operators.training_operator_v1 import expand as XTO
from .compare import NodePod, Side

UNLIMITED = "unlimited"


def _names(host: str, sub: str | None, namespace: str) -> tuple:
    base = f"{host}.{sub}" if sub else host
    ns = namespace or "default"
    return (host, base, f"{base}.{ns}", f"{base}.{ns}.svc", f"{base}.{ns}.svc.cluster.local")


def _meta(data: dict) -> dict:
    meta = as_dict(data.get("metadata"))
    out = {}
    for section in ("labels", "annotations"):
        if meta.get(section):
            out[section] = {str(k): v for k, v in as_dict(meta[section]).items()}
    return out


def pytorchjob(doc, items: list, gang: str | None = None) -> Side:
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
        pods.append(NodePod(f"node {rank}", e.obj, TO1.CONTAINER_NAME, _names(e.name, None, doc.namespace), rank,
                            injected, gang_paths))
    spec = as_dict(doc.data.get("spec"))
    rp = as_dict(spec.get("runPolicy"))
    nodes = len(pods)
    job = {"backoff limit": rp.get("backoffLimit") if rp.get("backoffLimit") is not None else UNLIMITED,
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
    job.update(_meta(doc.data))
    # The `pytorchjob-port` port of the `pytorch` container is the operator's MASTER_PORT (envvar.go
    # getPortFromPyTorchJob).
    ports = frozenset(as_int(pt.get("containerPort")) for np in pods for c in as_list(as_dict(np.obj.get("spec")).get("containers"))
                      if isinstance(c, dict) and c.get("name") == TO1.CONTAINER_NAME
                      for pt in as_list(c.get("ports")) if isinstance(pt, dict) and pt.get("name") == TO1.PORT_NAME)
    return Side(pods, job, ports)


def trainjob(doc, js, pod_items: list, runtime) -> Side:
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
                            _names(host, pspec.get("subdomain"), doc.namespace), node))
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
           "pods deleted at the end": TO1.DEFAULT_CLEAN_POD_POLICY,
           "group restarts": as_int(as_dict(spec.get("failurePolicy")).get("maxRestarts"), 0),
           "managed by": tj.get("managedBy") if tj.get("managedBy") not in (None, TV2.TRAINJOB_CONTROLLER) else None}
    pgp = as_dict(as_dict(runtime.data.get("spec")).get("podGroupPolicy")) if runtime is not None else {}
    if pgp:
        source = next(iter(pgp))
        job["gang"] = {"timeout": as_dict(pgp[source]).get("scheduleTimeoutSeconds"), "needs": "every pod"}
    else:
        job["gang"] = None
    job["queue"] = as_dict(as_dict(doc.data.get("metadata")).get("labels")).get(S.QUEUE_LABEL)
    job.update(_meta(doc.data))
    js_meta = _meta(js.obj)
    if js_meta:
        job["JobSet"] = js_meta
    # torch.go EnforceMLPolicy upserts the container port ContainerTrainerPort for the rendezvous.
    return Side(pods, job, frozenset({TV2.TRAINER_PORT}))

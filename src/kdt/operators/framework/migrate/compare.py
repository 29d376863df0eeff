"""The proof of a migration: the merge preview's pods before and after, compared pod by pod.

Each pod is reduced to what the program in it sees, the same way on both sides:
- the pod spec, its containers, init containers and volumes by name (the training container, `pytorch` or
  `node`, as MAIN), env by name as the kubelet resolves duplicates (the last wins), ports by number and
  mounts by path; the operators' own labels and annotations, hostname and subdomain set aside (row
  pod-identity), the Training Operator's injected init container (row init-container), the rendezvous
  port (row rdzv-port);
- label selectors (topology spread, pod affinity) as the pods of the job they select, so a selector that
  moved from the Training Operator's labels to JobSet's is equal when it picks the same pods (row selectors);
- torchrun's view of the env, with each operator's env names mapped to one vocabulary (facts): node count,
  processes per node, world size, node rank, the rendezvous (backend, the node that hosts it, the port),
  whether this pod hosts the store, in-place restarts; a program started without torchrun keeps the
  operator's MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (row process-env).
Then every difference left is matched: a row the comparison itself applies (above), or a claim of the plan
(what the migration changed on purpose or reported as a finding). Anything else is unexplained.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....fields import as_dict, as_int, as_list
from ... import kubernetes as K8S
from ... import migration as M
from ... import scheduling as SCHED
from ... import torchrun as TR
from ....resources import container_gpus
from . import launcher as L
from .patch import plain

MAIN = "<training container>"
# Env compared as torchrun's facts instead of by value: what torchrun reads (PET_*), the process-group env the
# Training Operator sets (MASTER_ADDR, ...), and the Job controller's completion index.
FACT_ENV = frozenset({v for _, v, _ in TR.VALUE_FLAGS.values() if v} | set(M.PROCESS_ENV) | {K8S.ENV_COMPLETION_INDEX})
NAMED_LISTS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
               "imagePullSecrets": "name", "schedulingGates": "name", "resourceClaims": "name"}


@dataclass
class NodePod:
    """One pod a job's operator creates, as the migration speaks of it."""
    key: str                      # its place in the job: "node 3" (a training node), "<replicated job> <i>/<j>"
    obj: dict                     # the pod as its controller creates it
    main: str = ""                # the training container's name
    names: tuple = ()             # DNS names that resolve to this pod
    node: int | None = None       # the node index of a training pod
    operator_init: frozenset = frozenset()   # init containers the operator injects
    set_aside: frozenset = frozenset()       # paths of the pod its operator's gang scheduling wrote (row gang)


@dataclass
class Side:
    """One side of the proof: the pods of one job, its run policy in one vocabulary, and the container ports
    its operator makes the rendezvous port (set aside in the pods: row rdzv-port)."""
    pods: list[NodePod]
    job: dict = field(default_factory=dict)
    rdzv_ports: frozenset = frozenset()


@dataclass(frozen=True)
class Claim:
    """A difference the plan expects, and the row (or finding) that explains it. `path` is a prefix in the
    pod view (("spec", ...), ("facts", ...), ("metadata", ...)) or the job view (("job", ...)); `nodes`
    limits it to some training nodes (None: every pod)."""
    row: str
    path: tuple
    nodes: Any = None             # a container of node indices (a range, a set); None: every pod
    finding: str = ""
    after: Any = None             # the value the path must have after, when the claim says (None: any)


@dataclass
class Difference:
    where: str                    # "node 1", "job"
    path: tuple
    before: Any
    after: Any
    row: str | None = None        # the row of the table that explains it; None: unexplained
    finding: str = ""             # the finding that says it, when one does

    @property
    def explained(self) -> bool:
        return self.row is not None


_ABSENT = "(absent)"


# ---------------------------------------------------------------------------------------- the pod view
# The label and annotations a gang scheduler's PodGroup names its pods by, which both operators write
# (kdt.operators.scheduling): compared as the job's gang (row gang), not per pod.
GANG_KEYS = frozenset({SCHED.COSCHEDULING_POD_LABEL, SCHED.VOLCANO_GROUP_ANNOTATION, SCHED.VOLCANO_TASK_SPEC_ANNOTATION})


def operator_label(key: str) -> bool:
    return str(key).split("/")[0] in M.OPERATOR_LABEL_DOMAINS or key in M.OPERATOR_LABEL_KEYS or key in GANG_KEYS


def _env_value(e: dict, pod: dict):
    """An env entry's value as the kubelet gives it: the literal, or a downward-API field of the pod."""
    if "valueFrom" not in e:
        return None if e.get("value") is None else str(e.get("value"))
    ref = as_dict(as_dict(e.get("valueFrom")).get("fieldRef")).get("fieldPath")
    if isinstance(ref, str):
        meta = as_dict(pod.get("metadata"))
        if ref in ("metadata.name", "metadata.namespace"):
            return meta.get(ref.split(".")[1])
        for section in ("labels", "annotations"):
            prefix = f"metadata.{section}['"
            if ref.startswith(prefix) and ref.endswith("']"):
                v = as_dict(meta.get(section)).get(ref[len(prefix):-2])
                return None if v is None else str(v)
    return {"valueFrom": plain(e.get("valueFrom"))}


def env_map(env: Any, pod: dict) -> dict:
    """name -> value (str), or {"valueFrom": ...} for one resolved at run time; a later entry of a name wins."""
    out: dict = {}
    for e in as_list(env):
        if isinstance(e, dict) and e.get("name") is not None:
            out[str(e["name"])] = _env_value(e, pod)
    return out


def _by(items: Any, key: str) -> dict:
    out = {}
    for i, it in enumerate(as_list(items)):
        k = str(it.get(key)) if isinstance(it, dict) and it.get(key) is not None else f"#{i}"
        out[k] = it
    return out


def _container(c: dict, pod: dict, rdzv_ports: set) -> dict:
    out = {}
    argv = [str(w) for part in ("command", "args") for w in as_list(c.get(part))]
    if argv:
        out["argv"] = argv       # the kubelet runs command + args as one list: where a word sits does not matter
    for k, v in c.items():
        if k in ("name", "command", "args"):
            continue
        if k == "env":
            env = {n: val for n, val in env_map(v, pod).items() if n not in FACT_ENV}
            if env:
                out["env"] = env
        elif k == "ports":
            ports = {str(p.get("containerPort")): {x: y for x, y in p.items() if x != "containerPort"}
                     for p in as_list(v) if isinstance(p, dict) and as_int(p.get("containerPort")) not in rdzv_ports}
            if ports:
                out["ports"] = ports
        elif k == "volumeMounts":
            out[k] = _by(v, "mountPath")
        else:
            out[k] = plain(v)
    return out


def pod_view(np: NodePod, rdzv_ports: set) -> dict:
    """The pod as the program sees it (module docstring); selectors are evaluated later (selections)."""
    pod = np.obj
    meta = as_dict(pod.get("metadata"))
    spec = as_dict(pod.get("spec"))
    view: dict = {"metadata": {}, "spec": {}}
    for section in ("labels", "annotations"):
        kept = {k: v for k, v in as_dict(meta.get(section)).items() if not operator_label(k)}
        if kept:
            view["metadata"][section] = plain(kept)
    if meta.get("namespace"):
        view["metadata"]["namespace"] = meta["namespace"]
    for k, v in spec.items():
        if k in ("hostname", "subdomain") or ("spec", k) in np.set_aside:
            continue
        if k in ("containers", "initContainers", "ephemeralContainers"):
            items = {}
            for name, c in _by(v, "name").items():
                if not isinstance(c, dict) or (k == "initContainers" and name in np.operator_init):
                    continue
                main = k == "containers" and name == np.main
                items[MAIN if main else name] = _container(c, pod, rdzv_ports if main else set())
            if items:
                view["spec"][k] = items
        elif k in NAMED_LISTS:
            view["spec"][k] = {n: plain({x: y for x, y in it.items() if x != NAMED_LISTS[k]})
                               for n, it in _by(v, NAMED_LISTS[k]).items() if isinstance(it, dict)}
        else:
            view["spec"][k] = plain(v)
    return view


# ---------------------------------------------------------------------------------------- selectors
def _requirements(sel: dict, labels: dict, match_keys=(), mismatch_keys=()) -> list[tuple]:
    reqs = [(k, "In", [str(v)]) for k, v in as_dict(sel.get("matchLabels")).items()]
    for e in as_list(sel.get("matchExpressions")):
        if isinstance(e, dict):
            reqs.append((str(e.get("key")), str(e.get("operator")), [str(x) for x in as_list(e.get("values"))]))
    for k in match_keys:
        if k in labels:
            reqs.append((str(k), "In", [str(labels[k])]))
    for k in mismatch_keys:
        if k in labels:
            reqs.append((str(k), "NotIn", [str(labels[k])]))
    return reqs


def _matches(reqs: list[tuple], labels: dict) -> bool:
    for key, op, values in reqs:
        have = key in labels
        v = str(labels.get(key)) if have else None
        if op == "In" and not (have and v in values):
            return False
        if op == "NotIn" and have and v in values:
            return False
        if op == "Exists" and not have:
            return False
        if op == "DoesNotExist" and have:
            return False
    return True


def _selected(sel: Any, labels: dict, pods: list[tuple[str, dict]], match_keys=(), mismatch_keys=()) -> list[str]:
    """The pods of the job (their keys) that a label selector picks, as seen from a pod with `labels`."""
    if not isinstance(sel, dict):
        return []
    reqs = _requirements(sel, labels, match_keys, mismatch_keys)
    return [key for key, other in pods if _matches(reqs, other)]


def selected_nodes(sel: Any, side: Side) -> list[str]:
    """The pods of `side` a label selector of another object (a NetworkPolicy, a Service) picks, by node."""
    pods = [(np.key, as_dict(as_dict(np.obj.get("metadata")).get("labels"))) for np in side.pods]
    index = {np.key: np.node for np in side.pods}
    flat = isinstance(sel, dict) and not ({"matchLabels", "matchExpressions"} & set(sel))
    picked = _selected({"matchLabels": sel} if flat else sel, {}, pods)
    return sorted(f"node {index[k]}" if index.get(k) is not None else k for k in picked)


def selections(view: dict, np: NodePod, pods: list[tuple[str, dict]]) -> bool:
    """Replace each label selector of the view's pod spec by the pods it selects; True when there was one."""
    spec = view["spec"]
    labels = as_dict(as_dict(np.obj.get("metadata")).get("labels"))
    found = False
    for tsc in as_list(spec.get("topologySpreadConstraints")):
        if isinstance(tsc, dict) and "labelSelector" in tsc:
            tsc["selects"] = _selected(tsc.pop("labelSelector"), labels, pods, as_list(tsc.pop("matchLabelKeys", [])))
            found = True
    for kind in ("podAffinity", "podAntiAffinity"):
        aff = as_dict(as_dict(spec.get("affinity")).get(kind))
        terms = as_list(aff.get("requiredDuringSchedulingIgnoredDuringExecution"))
        terms += [as_dict(t).get("podAffinityTerm") for t in as_list(aff.get("preferredDuringSchedulingIgnoredDuringExecution"))]
        for t in terms:
            if isinstance(t, dict) and "labelSelector" in t:
                t["selects"] = _selected(t.pop("labelSelector"), labels, pods, as_list(t.pop("matchLabelKeys", [])),
                                         as_list(t.pop("mismatchLabelKeys", [])))
                found = True
    return found


# ---------------------------------------------------------------------------------------- torchrun's facts
def _node_of(host: str, names: dict) -> str:
    host = str(host)
    return f"node {names[host]}" if host in names else host


def _bool(text) -> bool | None:
    t = str(text).strip().lower()
    if t in ("1", "true", "t", "yes", "y"):
        return True
    if t in ("0", "false", "f", "no", "n"):
        return False
    return None


def facts(np: NodePod, names: dict) -> dict:
    """What the training container's launcher is told, in one vocabulary for both operators (module docstring)."""
    spec = as_dict(np.obj.get("spec"))
    c = next((x for x in as_list(spec.get("containers")) if isinstance(x, dict) and x.get("name") == np.main), None)
    if c is None:
        return {}
    env = {k: (v if isinstance(v, str) else None) for k, v in env_map(c.get("env"), np.obj).items()}
    launch = L.find(c)
    if launch is None:
        if L.in_shell(c) is not None:
            return {"launcher": "torchrun in a shell script (not read)"}
        out: dict = {"launcher": None}
        for n in M.PROCESS_ENV:
            if env.get(n) is not None:
                out[f"env {n}"] = _node_of(env[n], names) if n == "MASTER_ADDR" else env[n]
        return out
    get = lambda name: L.setting(launch, name, env)   # noqa: E731
    backend = get("rdzv_backend")
    endpoint = get("rdzv_endpoint") or ""
    if launch.has_bool("--standalone"):
        backend, endpoint = "c10d (standalone)", "localhost"
    elif backend == TR.STATIC and not endpoint:
        endpoint = f"{get('master_addr')}:{get('master_port')}"
    host, _, port = endpoint.rpartition(":") if ":" in endpoint else (endpoint, "", "")
    nnodes = get("nnodes") or ""
    node_rank = as_int(get("node_rank"))
    nproc = str(get("nproc_per_node"))
    gpus = container_gpus(c)
    per_node: Any = as_int(nproc)
    if per_node is None:
        per_node = gpus if (nproc in ("auto", "gpu") and gpus) else f"{nproc} (the node's {'CPUs' if nproc != 'gpu' else 'GPUs'})"
    top = as_int(str(nnodes).split(":")[-1])
    out = {"launcher": "torchrun", "nnodes": nnodes, "processes per node": per_node,
           "world size": top * per_node if isinstance(per_node, int) and top is not None else f"{nnodes} x {per_node}",
           "rendezvous": f"{backend} at {_node_of(host, names) if host else 'localhost'}",
           "rendezvous port": as_int(port, port or None),
           "in-place restarts": as_int(get("max_restarts"), 0)}
    if backend == TR.STATIC:
        out["node rank"] = node_rank
        out["hosts the store"] = node_rank == 0
    else:
        is_host = _bool(L.conf(get("rdzv_conf")).get("is_host", ""))
        out["node rank"] = "assigned by the rendezvous"
        out["hosts the store"] = is_host if is_host is not None else (host in np.names or host == "localhost")
    return out


# ---------------------------------------------------------------------------------------- differences
def _diff(a: Any, b: Any, path: tuple, out: list) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            _diff(a.get(k, _ABSENT), b.get(k, _ABSENT), path + (k,), out)
    elif a != b:
        out.append((path, a, b))


def _claimed(path: tuple, after: Any, where: NodePod | None, claims: list[Claim]) -> Claim | None:
    for c in claims:
        if path[:len(c.path)] == c.path and (c.nodes is None or (where is not None and where.node in c.nodes)) \
                and (c.after is None or (path == c.path and c.after == after)):
            return c
    return None


def compare(before: Side, after: Side, claims: list[Claim], by: str = "node", partial: bool = False
            ) -> tuple[list[Difference], int]:
    """Every difference between the two sides' pods and run policies, each explained or not, and how many
    pods were paired.

    by: "node" pairs the training pods by node index (a PyTorchJob and its TrainJob), "key" pairs every pod
    by its place (a TrainJob and its other shape). partial: the merge preview built some pods of each group
    only (a job past its limit): the pods built on both sides are compared, the selections among them."""
    out: list[Difference] = []
    if partial:
        place = (lambda np: np.node) if by == "node" else (lambda np: np.key)
        common = {place(np) for np in before.pods} & {place(np) for np in after.pods}
        before = Side([np for np in before.pods if place(np) in common], before.job, before.rdzv_ports)
        after = Side([np for np in after.pods if place(np) in common], after.job, after.rdzv_ports)
    sides = []
    for side in (before, after):
        names = {n: np.node for np in side.pods if np.node is not None for n in np.names}
        views = {}
        fs = {np.key: facts(np, names) for np in side.pods}
        ports = set(side.rdzv_ports)
        labels = [(np.key, as_dict(as_dict(np.obj.get("metadata")).get("labels"))) for np in side.pods]
        for np in side.pods:
            v = pod_view(np, ports)
            selections(v, np, labels)
            v["facts"] = fs[np.key]
            views[np.key] = v
        sides.append((views, ports))
    (bviews, bports), (aviews, aports) = sides
    bpods = {(np.node if by == "node" else np.key): np for np in before.pods if by != "node" or np.node is not None}
    apods = {(np.node if by == "node" else np.key): np for np in after.pods if by != "node" or np.node is not None}
    # selection results name pods by key; by node they are compared as node indices
    if by == "node":
        for views, side in ((bviews, before), (aviews, after)):
            index = {np.key: np.node for np in side.pods}
            for v in views.values():
                _selects_as_nodes(v, index)
    paired = 0
    for k in sorted(set(bpods) | set(apods), key=lambda x: (str(type(x)), x)):
        b, a = bpods.get(k), apods.get(k)
        where = f"node {k}" if by == "node" else str(k)
        if b is None or a is None:
            out.append(Difference(where, ("pod",), b.key if b else _ABSENT, a.key if a else _ABSENT))
            continue
        paired += 1
        bname = as_dict(b.obj.get("metadata")).get("name") or as_dict(b.obj.get("spec")).get("hostname")
        aname = as_dict(a.obj.get("metadata")).get("name") or as_dict(a.obj.get("spec")).get("hostname")
        if by == "node" and bname != aname:
            out.append(Difference(where, ("pod",), bname, aname, "pod-identity"))
        injected = sorted(b.operator_init - a.operator_init)
        if injected:
            out.append(Difference(where, ("spec", "initContainers"), injected, _ABSENT, "init-container"))
        if bports != aports and (bports or aports):
            out.append(Difference(where, ("facts", "rendezvous port"), sorted(bports), sorted(aports), "rdzv-port"))
        raw = []
        _diff(bviews[b.key], aviews[a.key], (), raw)
        for path, x, y in raw:
            if path == ("facts", "rendezvous port") and x in bports and y in aports:
                continue     # recorded above, once per pod
            c = _claimed(path, y, a, claims)
            out.append(Difference(where, path, x, y, c.row if c else None, c.finding if c else ""))
        bf, af = bviews[b.key].get("facts", {}), aviews[a.key].get("facts", {})
        if by == "node" and isinstance(af.get("node rank"), int):
            # whatever a claim says, a static rendezvous must give node i rank i, and node 0 the store
            if af["node rank"] != a.node:
                out.append(Difference(where, ("facts", "node rank is the node index"), a.node, af["node rank"]))
            if af.get("hosts the store") != (a.node == 0):
                out.append(Difference(where, ("facts", "only node 0 hosts the store"), a.node == 0,
                                      af.get("hosts the store")))
        if bf.get("launcher") == "torchrun" and af.get("launcher") == "torchrun":
            env = env_map(next((as_list(c.get("env")) for c in as_list(as_dict(b.obj.get("spec")).get("containers"))
                                if isinstance(c, dict) and c.get("name") == b.main), []), b.obj)
            lost = [n for n in M.PROCESS_ENV if n in env]
            if lost:
                out.append(Difference(where, ("facts", "env " + "/".join(lost)), "set by the operator",
                                      "set by torchrun for each worker", "process-env"))
    raw = []
    _diff(before.job, after.job, ("job",), raw)
    for path, x, y in raw:
        c = _claimed(path, y, None, claims)
        out.append(Difference("job", path, x, y, c.row if c else None, c.finding if c else ""))
    return out, paired


def _selects_as_nodes(view: dict, index: dict) -> None:
    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "selects" and isinstance(v, list):
                    x[k] = sorted((f"node {index[p]}" if index.get(p) is not None else p) for p in v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(view)


def summarize(diffs: list[Difference]) -> list[dict]:
    """Differences grouped by (path, row, finding): how many pods, and the first one's values."""
    groups: dict[tuple, dict] = {}
    for d in diffs:
        key = (d.path, d.row, d.finding, d.where == "job")
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"path": d.path, "row": d.row, "finding": d.finding, "where": [],
                               "before": d.before, "after": d.after}
        g["where"].append(d.where)
    return list(groups.values())

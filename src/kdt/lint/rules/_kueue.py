"""Kueue's objects of a run, joined to a queued job (not a rule: shared by the kueue-* rules).

The queue objects a job is joined to are those of the run (every target and file: ctx.pool) and the
cluster's own (`.kdt-cluster.yaml` `objects`, kdt.cluster_file). Objects the cluster file declares are the
cluster's whole truth: a LocalQueue missing there is missing (an error); objects found only in the run
may have siblings on the cluster, so a name missing among them is a warning; a run with no queue objects
at all checks nothing and says so only in the rules' documentation.

`admit` runs Kueue's flavor assignment on an empty cluster (kubernetes-sigs/kueue v0.19.2
pkg/scheduler/flavorassigner/flavorassigner.go assignFlavors): pod set after pod set, each resource group
tries its flavors in order and takes the first that matches the pods (taints, node affinity, topology)
and whose maximum capacity (kdt.operators.kueue.expand.QuotaTree.potential) holds what the Workload's pod sets
assigned to it so far ask for. A pod set no flavor takes is never admitted, whatever else runs.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ... import kinds as K
from ...operators.kueue import expand as XK
from ...expand.model import Loader
from ...fields import as_dict, as_list
from ...operators.kueue import facts as KQ

# The Kueue kinds the rules join (the registry's objects: a kind is asked of kdt.kinds, never named).
LOCAL_QUEUE, CLUSTER_QUEUE, COHORT, FLAVOR, TOPOLOGY, WORKLOAD_PRIORITY_CLASS = (
    K.LOCAL_QUEUE, K.CLUSTER_QUEUE, K.COHORT, K.RESOURCE_FLAVOR, K.TOPOLOGY, K.WORKLOAD_PRIORITY_CLASS)
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"    # the API server sets it on every Namespace (1.22+)


@dataclass
class QueueObjects:
    """The Kueue objects of a run and of the cluster, by kind and name."""
    local_queues: list = field(default_factory=list)
    by_kind: dict = field(default_factory=dict)          # Kind -> {name: Document}
    declared: set = field(default_factory=set)           # (Kind, namespace, name) the cluster file declares
    tree: XK.QuotaTree = field(default_factory=XK.QuotaTree)
    ambiguous: set = field(default_factory=set)          # (Kind, name) defined twice, differently: not judged

    def get(self, kind: K.Kind, name) -> object:
        return self.by_kind.get(kind, {}).get(str(name)) if name is not None else None

    def names(self, kind: K.Kind) -> list[str]:
        return sorted(self.by_kind.get(kind, {}))

    def any(self, kind: K.Kind) -> bool:
        return bool(self.local_queues) if kind is LOCAL_QUEUE else bool(self.by_kind.get(kind))

    def authoritative(self, kind: K.Kind) -> bool:
        """Whether the cluster file declares objects of this kind: then they are all the cluster has."""
        return any(k is kind for k, _, _ in self.declared)

    def is_declared(self, doc) -> bool:
        return (K.of(doc), doc.namespace, doc.name) in self.declared


_cache: list = [None]      # (docs, run_docs, cluster, QueueObjects): the objects themselves, compared by identity


def cluster_objects(ctx) -> list:
    return list(getattr(ctx.cluster, "objects", ()) or ()) if ctx.cluster is not None else []


def queue_objects(docs, ctx) -> QueueObjects:
    got = _cache[0]
    if got is not None and got[0] is docs and got[1] is ctx.run_docs and got[2] is ctx.cluster:
        return got[3]
    cluster = cluster_objects(ctx)
    out = QueueObjects(declared={(K.of(d), d.namespace, d.name) for d in cluster if d.group == KQ.GROUP})
    for d in list(ctx.pool(docs)) + cluster:
        if d.group != KQ.GROUP or not isinstance(d.data, dict):
            continue
        kind = K.of(d)
        if kind is LOCAL_QUEUE:
            # every definition: a run may hold alternatives (two setups), and a job is refused only where
            # each of them refuses it
            if not any(q.name == d.name and q.namespace == d.namespace and q.data == d.data for q in out.local_queues):
                out.local_queues.append(d)
        elif kind in (CLUSTER_QUEUE, COHORT, FLAVOR, TOPOLOGY, WORKLOAD_PRIORITY_CLASS) and d.name:
            first = out.by_kind.setdefault(kind, {}).setdefault(d.name, d)
            if first.data != d.data:
                out.ambiguous.add((kind, d.name))
    for name, cq in out.by_kind.get(CLUSTER_QUEUE, {}).items():
        spec = as_dict(cq.data.get("spec"))
        version = str(cq.data.get("apiVersion", "")).rpartition("/")[2]
        cohort = spec.get(KQ.COHORT_FIELD.get(version, "cohortName"))
        out.tree.add_cluster_queue(name, str(cohort) if cohort else None, XK.quotas_of(spec.get("resourceGroups")))
    for name, co in out.by_kind.get(COHORT, {}).items():
        spec = as_dict(co.data.get("spec"))
        out.tree.add_cohort(name, str(spec["parentName"]) if spec.get("parentName") else None,
                            XK.quotas_of(spec.get("resourceGroups")))
    out.tree.link()
    _cache[0] = (docs, ctx.run_docs, ctx.cluster, out)
    return out


_workloads: dict = {}      # id(doc) -> (doc, run_docs, Workload): held, so that an id is never reused


def workload(doc, docs, ctx):
    """The Kueue Workload `doc` becomes (kdt.kinds.kueue_workload), None when it is not queued."""
    got = _workloads.get(id(doc))
    if got is not None and got[0] is doc and got[1] is ctx.run_docs:
        return got[2]
    if len(_workloads) > 256:
        _workloads.clear()
    ectx = K.ExpandContext(_pool_copy(docs, ctx), Loader(), ctx.trainer_version,
                           ctx.cluster.options if ctx.cluster is not None else {})
    w = K.kueue_workload(doc, ectx)
    _workloads[id(doc)] = (doc, ctx.run_docs, w)
    return w


_copies: list = [None]     # (pool, its copy): one copy of the run's documents per pool, not one per document


def _pool_copy(docs, ctx) -> list:
    """ctx.pool(docs) as a list of its own for an expansion, copied once per pool (a copy per document made a
    stream of N documents cost N x N)."""
    pool = ctx.pool(docs)
    got = _copies[0]
    if got is None or got[0] is not pool or len(got[1]) != len(pool):
        got = (pool, list(pool))
        _copies[0] = got
    return got[1]


def local_queues_for(objs: QueueObjects, name: str, namespace: str | None) -> list:
    """The LocalQueues named `name` the job may be queued in: of its namespace, or of any namespace when the
    job has none (it goes where it is applied)."""
    return [q for q in objs.local_queues if q.name == name and (not namespace or q.namespace in ("", namespace))]


def selector_admits(selector, namespace: str | None, namespace_doc) -> bool | None:
    """Whether a ClusterQueue's namespaceSelector admits the namespace; None when that cannot be known here
    (no namespace, or a label the run does not show). Unset selects nothing; {} everything."""
    if selector is None:
        return False
    sel = as_dict(selector)
    if not sel.get("matchLabels") and not sel.get("matchExpressions"):
        return True
    if namespace is None:
        return None
    labels = {NAMESPACE_NAME_LABEL: namespace}
    known = namespace_doc is not None
    if known:
        labels.update({str(k): str(v) for k, v in as_dict(namespace_doc.get(("metadata", "labels"))).items()})
    for k, v in as_dict(sel.get("matchLabels")).items():
        if str(k) not in labels:
            return False if known else None
        if labels[str(k)] != str(v):
            return False
    for e in as_list(sel.get("matchExpressions")):
        e = as_dict(e)
        key, op, values = str(e.get("key")), e.get("operator"), [str(x) for x in as_list(e.get("values"))]
        if key not in labels and not known:
            return None
        have = labels.get(key)
        ok = {"In": have is not None and have in values, "NotIn": have is None or have not in values,
              "Exists": have is not None, "DoesNotExist": have is None}.get(op)
        if ok is None or not ok:
            return ok if ok is not None else None
    return True


# ------------------------------------------------------------ admission on an empty cluster
FLAVOR_MISMATCH, TOPOLOGY_MISMATCH, QUOTA, UNCOVERED = "flavor", "topology", "quota", "uncovered"


@dataclass
class Refusal:
    """Why a pod set of a Workload can never be admitted by a ClusterQueue."""
    what: str                 # FLAVOR_MISMATCH, TOPOLOGY_MISMATCH, QUOTA or UNCOVERED
    pod_set: XK.PodSet
    message: str
    resource: str = ""
    certain: bool = True      # False: what the run does not show may change the verdict (doubt says what)
    doubt: str = ""


def _topology_levels(objs: QueueObjects, flavor: dict) -> list[str] | None:
    name = flavor.get("topologyName")
    topo = objs.get(TOPOLOGY, name)
    if topo is None:
        return None
    return [str(as_dict(lv).get("nodeLabel")) for lv in as_list(topo.get(("spec", "levels")))]


def admit(w: XK.Workload, cq, objs: QueueObjects) -> list[Refusal]:
    """What keeps ClusterQueue `cq` from ever admitting Workload `w` (an empty list: nothing the run shows)."""
    spec = as_dict(cq.data.get("spec"))
    groups = [as_dict(g) for g in as_list(spec.get("resourceGroups"))]
    flavor_names = [str(as_dict(f).get("name")) for g in groups for f in as_list(g.get("flavors"))]
    flavors = {n: as_dict(objs.get(FLAVOR, n).data.get("spec")) if objs.get(FLAVOR, n) is not None else None
               for n in flavor_names}
    if any(v is None for v in flavors.values()):
        return []          # a flavor the run does not show: kueue-local-queue says so; nothing to judge here
    root = objs.tree.root(("cq", cq.name))
    tree = [key for key in objs.tree.nodes if root is not None and (objs.tree.root(key) == root or key[1] == root)]
    kinds = {"cq": CLUSTER_QUEUE, "cohort": COHORT}
    if (CLUSTER_QUEUE, cq.name) in objs.ambiguous or any((FLAVOR, n) in objs.ambiguous for n in flavors) or any(
            (kinds[k], n) in objs.ambiguous for k, n in tree):
        return []          # defined twice, differently (alternatives in one run): which one applies is not known
    tas_only = bool(flavors) and all(f.get("topologyName") for f in flavors.values())
    cq_key = ("cq", cq.name)
    certain = root is None or objs.authoritative(COHORT) or objs.authoritative(CLUSTER_QUEUE)
    usage: dict = {}
    shares: dict = {}        # (flavor, resource) -> [(pod set, amount)] of the pod sets assigned so far
    out: list[Refusal] = []
    for ps in w.pod_sets:
        wanted = ps.total(least=True)
        if not wanted:
            continue
        covered_any: set = set()
        for g in groups:
            covered = {str(r) for r in as_list(g.get("coveredResources"))}
            covered_any |= covered
            req = {r: v for r, v in wanted.items() if r in covered}
            if not req:
                continue
            tried: list[tuple[str, str, str]] = []       # (what, message, resource)
            capped = False
            for fl in as_list(g.get("flavors")):
                fname = str(as_dict(fl).get("name"))
                flavor = flavors[fname]
                reason = XK.tas_mismatch(ps, flavor, fname, _topology_levels(objs, flavor), tas_only, covered)
                if reason:
                    tried.append((TOPOLOGY_MISMATCH, reason, ""))
                    continue
                reason = XK.flavor_mismatch(ps.spec, flavor, fname)
                if reason:
                    tried.append((FLAVOR_MISMATCH, reason, ""))
                    continue
                over = []
                for r, v in req.items():
                    fr = (fname, r)
                    cap = objs.tree.potential(cq_key, fr)
                    if usage.get(fr, 0) + v > cap:
                        over.append((r, v, cap, fr))
                if over:
                    r, v, cap, fr = over[0]
                    nominal = objs.tree.nodes[cq_key].quotas.get(fr, XK.Quota()).nominal
                    cohort = objs.tree.nodes[cq_key].parent
                    source = (f"plus {KQ.show_value(r, cap - nominal)} its cohort {cohort} can lend" if cohort
                              else "no cohort to borrow from")
                    parts = shares.get(fr, []) + [(ps.name, v)]
                    split = f" ({', '.join(f'{n} {KQ.show_value(r, x)}' for n, x in parts)})" if len(parts) > 1 else ""
                    tried.append((QUOTA, f"{r} {KQ.show_value(r, usage.get(fr, 0) + v)} in flavor {fname}{split} is "
                                         f"more than ClusterQueue {cq.name} can ever hold: {KQ.show_value(r, cap)} "
                                         f"(nominal {KQ.show_value(r, nominal)}, {source})", r))
                    # above nominal plus its borrowingLimit, no lender anywhere changes it
                    limit = objs.tree.nodes[cq_key].quotas.get(fr, XK.Quota()).borrowing_limit
                    capped = capped or (limit is not None and usage.get(fr, 0) + v > nominal + limit)
                    continue
                for r, v in req.items():
                    usage[(fname, r)] = usage.get((fname, r), 0) + v
                    shares.setdefault((fname, r), []).append((ps.name, v))
                tried = []
                break
            if not tried:
                continue
            kinds = {t[0] for t in tried}
            what = QUOTA if QUOTA in kinds else (TOPOLOGY_MISMATCH if TOPOLOGY_MISMATCH in kinds else FLAVOR_MISMATCH)
            msg = "; ".join(m for t, m, _ in tried if t == what)
            res = next((r for t, _, r in tried if t == what and r), "")
            sure = certain or capped or what != QUOTA
            out.append(Refusal(what, ps, msg, res, sure, "" if sure else
                               f"other ClusterQueues of the cohort on the cluster may lend more"))
        for r in sorted(set(wanted) - covered_any):
            out.append(Refusal(UNCOVERED, ps, f"resource {r} unavailable in ClusterQueue {cq.name} (its "
                                              f"resourceGroups cover {', '.join(sorted(covered_any)) or 'nothing'})", r))
    return out


def pod_set_path(doc, ps: XK.PodSet, *rest) -> tuple:
    """Where to locate a finding about a pod set: its template in the job, else the job's queue label."""
    if ps.path:
        return ps.path + rest
    trainer = doc.get(("spec", "trainer"))
    if isinstance(trainer, dict):      # a TrainJob: its pod sets come from the runtime; the trainer is its own part
        return ("spec", "trainer")
    return ("metadata", "labels", KQ.QUEUE_LABEL)


def cluster_queues_of(doc, w: XK.Workload, objs: QueueObjects) -> list:
    """The ClusterQueues the job's LocalQueue(s) point at and the run shows (one per name)."""
    return [cq for cq, _ in _candidates(doc, w, objs)]


def _candidates(doc, w: XK.Workload, objs: QueueObjects) -> list[tuple[object, bool]]:
    """(ClusterQueue, known) for each ClusterQueue the job may land in. Known: the cluster file declares it,
    or the job names its namespace and the run shows its LocalQueue there; else the job goes wherever it is
    applied, where a LocalQueue of its name the run does not show may lead elsewhere."""
    out: dict = {}
    for q in local_queues_for(objs, w.queue, doc.namespace):
        cq = objs.get(CLUSTER_QUEUE, q.get(("spec", "clusterQueue")))
        if cq is not None:
            known = objs.is_declared(cq) or bool(doc.namespace and q.namespace == doc.namespace)
            prev = out.get(cq.name)
            out[cq.name] = (cq, known if prev is None else prev[1] and known)
    return list(out.values())


def refusals(doc, docs, ctx, what: str) -> list[tuple[XK.Workload, Refusal]]:
    """The refusals of kind `what` of a queued job: only those every ClusterQueue it may land in gives
    (a job with no namespace may be applied where either of two LocalQueues of its name points). A refusal
    is certain (an error) where the ClusterQueue is known (`_candidates`) and, for quota, where nothing the
    run does not show could lend more."""
    w = workload(doc, docs, ctx)
    if w is None or not w.queue:
        return []
    objs = queue_objects(docs, ctx)
    cands = _candidates(doc, w, objs)
    if not cands:
        return []
    per_cq = [([r for r in admit(w, cq, objs) if r.what == what or (what == QUOTA and r.what == UNCOVERED)], known)
              for cq, known in cands]
    if any(not rs for rs, _ in per_cq):
        return []
    rs, known = per_cq[0]
    known = all(k for _, k in per_cq)
    if known:
        return [(w, r) for r in rs]
    where = "the job names no namespace: applied elsewhere, a LocalQueue of its name the files do not show may lead " \
            "to another ClusterQueue"
    return [(w, dataclasses.replace(r, certain=False, doubt="; ".join(x for x in (r.doubt, where) if x))) for r in rs]

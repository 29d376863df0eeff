"""A queued job's LocalQueue exists and leads to a ClusterQueue that can admit it.

A job labelled `kueue.x-k8s.io/queue-name: Q` is admitted through the LocalQueue Q of its namespace,
which names a ClusterQueue. Kueue keeps the job suspended, with a Workload that never gets quota, when
the LocalQueue does not exist, when its ClusterQueue does not, when the ClusterQueue is inactive (a
ResourceFlavor it names, or the Topology a flavor names, does not exist), when the ClusterQueue's
namespaceSelector does not select the job's namespace (unset selects none; `{}` all), and when the
job's `kueue.x-k8s.io/priority-class` names a WorkloadPriorityClass that does not exist (the Workload is
not created). The job is then never started, and nothing says so but the Workload's status.

The queue objects are those of the run (every file and target checked together) and the cluster's
(`.kdt-cluster.yaml` `objects`): a name missing among objects the cluster file declares is an error; a
name missing among objects found only in the run is a warning (the cluster may have it); a run with no
Kueue objects of a kind checks nothing of that kind (they live on the cluster): the job's LocalQueue,
ClusterQueue and quota cannot be checked, and no finding says otherwise. A job with no namespace is
judged against the LocalQueues of that name in any namespace.

Source: kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2 localqueue_types.go (clusterQueue),
clusterqueue_types.go (namespaceSelector: "Defaults to null which is a nothing selector"),
pkg/cache/scheduler clusterqueue.go (inactive: FlavorNotFound, TopologyNotFound),
pkg/controller/jobframework/reconciler.go (ExtractPriority: the WorkloadPriorityClass is read when the
Workload is made); kdt.operators.kueue.facts.
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators.kueue import facts as KQ
from ._kueue import (CLUSTER_QUEUE, FLAVOR, LOCAL_QUEUE, TOPOLOGY, WORKLOAD_PRIORITY_CLASS, local_queues_for,
                     queue_objects, selector_admits)
from ._util import d, lst

ID = "kueue-local-queue"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("Kueue keeps the job suspended for good: its Workload never gets quota (a name missing only among the "
       "objects of the run is a warning: the cluster may have it).")
_LABELS = ("metadata", "labels")


def _missing(objs, kind: K.Kind, name: str, what: str, path, doc, found_in: str):
    """A finding for an object of `kind` the job needs and the queue objects lack; None when the run has no
    object of that kind (nothing to judge)."""
    if not objs.any(kind):
        return None
    known = objs.names(kind) if kind is not LOCAL_QUEUE else sorted({f"{q.namespace or '-'}/{q.name}" for q in objs.local_queues})
    shown = ", ".join(known[:6]) + (", ..." if len(known) > 6 else "")
    if objs.authoritative(kind):
        return doc.finding(ID, f"{what}: no {kind.kind} {name!r} among the cluster's ({shown}; {found_in}): Kueue never "
                               "admits the job", path)
    return doc.finding(ID, f"{what}: no {kind.kind} {name!r} in the files checked ({shown}): it must exist on the cluster, "
                           "or Kueue never admits the job", path, WARNING)


def check(docs, ctx):
    objs = None
    for doc in docs:
        k = K.of(doc)
        if k is None or k.role not in (K.JOB, K.PODS):
            continue
        labels = d(doc.get(_LABELS))
        queue = labels.get(KQ.QUEUE_LABEL)
        if queue is None:
            continue
        objs = objs or queue_objects(docs, ctx)
        src = "the .kdt-cluster.yaml objects"
        qpath = _LABELS + (KQ.QUEUE_LABEL,)
        pc = labels.get(KQ.PRIORITY_CLASS_LABEL)
        if pc is not None and objs.get(WORKLOAD_PRIORITY_CLASS, pc) is None:
            f = _missing(objs, WORKLOAD_PRIORITY_CLASS, str(pc), f"{KQ.PRIORITY_CLASS_LABEL} {pc}",
                         _LABELS + (KQ.PRIORITY_CLASS_LABEL,), doc, src)
            if f:
                yield f
        lqs = local_queues_for(objs, str(queue), doc.namespace)
        if not lqs:
            f = _missing(objs, LOCAL_QUEUE, str(queue), f"queue {queue}" +
                         (f" in namespace {doc.namespace}" if doc.namespace else ""), qpath, doc, src)
            if f:
                yield f
            continue
        verdicts = [_verdict(objs, q, doc, ctx.pool(docs), qpath, src) for q in lqs]
        if any(v is None for v in verdicts):
            continue          # one LocalQueue of that name leads somewhere that admits it
        for v in {v.message: v for v in verdicts}.values():
            yield v


def _verdict(objs, lq, doc, pool, path, src):
    """None when the LocalQueue leads to a ClusterQueue that may admit the job, else the finding."""
    where = f"LocalQueue {lq.namespace + '/' if lq.namespace else ''}{lq.name}"
    cq_name = lq.get(("spec", "clusterQueue"))
    if not cq_name:
        return doc.finding(ID, f"{where} names no clusterQueue", path)
    cq = objs.get(CLUSTER_QUEUE, cq_name)
    if cq is None:
        return _missing(objs, CLUSTER_QUEUE, str(cq_name), where, path, doc, src)
    for g in lst(cq.get(("spec", "resourceGroups"))):
        for fl in lst(d(g).get("flavors")):
            fname = d(fl).get("name")
            flavor = objs.get(FLAVOR, fname)
            if flavor is None:
                f = _missing(objs, FLAVOR, str(fname), f"{where} -> ClusterQueue {cq.name} (inactive)", path, doc, src)
                if f:
                    return f
                continue
            topo = flavor.get(("spec", "topologyName"))
            if topo and objs.get(TOPOLOGY, topo) is None:
                f = _missing(objs, TOPOLOGY, str(topo), f"{where} -> ClusterQueue {cq.name} -> ResourceFlavor "
                                                      f"{flavor.name} (inactive)", path, doc, src)
                if f:
                    return f
    spec = d(cq.get(("spec",)))
    namespace = doc.namespace or lq.namespace or None
    ns_doc = next((n for n in pool if K.NAMESPACE.matches(n) and n.name == namespace), None) if namespace else None
    if selector_admits(spec.get("namespaceSelector"), namespace, ns_doc) is False:
        why = ("has no namespaceSelector: it admits no namespace (`{}` admits all)" if spec.get("namespaceSelector") is None
               else f"does not select namespace {namespace}")
        return doc.finding(ID, f"{where} -> ClusterQueue {cq.name} {why}", path)
    return None

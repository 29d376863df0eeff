"""A topology spread constraint must not cap a job below its own size.

With `whenUnsatisfiable: DoNotSchedule`, a pod fits a domain only while the
matching pods there exceed the "global minimum" by at most `maxSkew`; the
global minimum is taken over the eligible domains, and it is 0 when there are
fewer eligible domains than `minDomains`. A pod pinned to one domain of the
constraint's `topologyKey` (a nodeSelector such as seed 000's
`topology.kubernetes.io/zone: ap-northeast-2a`, or required node affinity
`In` one value) has one eligible domain under the default
`nodeAffinityPolicy: Honor`; with `minDomains` above 1 the scheduler then
places at most `maxSkew` of the job's pods, ever. The rest stay Pending: a gang
(PodGroup, Kueue) waits until its timeout and starts nothing, a job without
one half-starts and holds its GPUs. Reported when the pods the constraint picks
in one pod template (its own labels plus the operator's) outnumber `maxSkew`;
a TrainJob is checked in the pod Trainer makes of its runtime and patches,
with `trainer.numNodes` pods (a runtime no TrainJob of the input uses: with its
own `mlPolicy.numNodes`).

Not reported, because the cluster decides: `nodeAffinityPolicy: Ignore` with a
pin (capped too when the cluster has another domain of the key), and
`minDomains` above the number of domains the cluster has; constraints with
`matchLabelKeys` (they narrow the pods counted).

Source: Kubernetes core/v1 TopologySpreadConstraint (maxSkew, minDomains,
nodeAffinityPolicy: "the scheduler won't schedule more than maxSkew Pods to
those domains"), pkg/scheduler/framework/plugins/podtopologyspread/filtering.go.
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR
from ...operators.trainer_v2 import facts as TV2
from ..pods import as_int, pod_templates, runtime_for, trainer_pod
from ._own_pods import labels_of, selects
from ._util import d, lst, trainjobs

ID = "topology-spread-deadlock"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("The scheduler can place at most maxSkew of the job's pods, ever: the job never starts whole.")


def _pin(ps: dict, key: str) -> tuple[str, str] | None:
    """(value, where) when the pod can only go to nodes whose label `key` has one value."""
    sel = d(ps.get("nodeSelector")).get(key)
    if isinstance(sel, str):
        return sel, "nodeSelector"
    terms = lst(d(d(d(ps.get("affinity")).get("nodeAffinity")).get("requiredDuringSchedulingIgnoredDuringExecution"))
                .get("nodeSelectorTerms"))
    values = set()
    for t in terms:          # terms are ORed: every term must pin the key, to the same value
        one = [e for e in lst(d(t).get("matchExpressions")) if d(e).get("key") == key
               and d(e).get("operator") == "In" and len(lst(d(e).get("values"))) == 1]
        if not one:
            return None
        values.add(str(lst(d(one[0]).get("values"))[0]))
    if len(values) == 1:
        return values.pop(), "required node affinity"
    return None


def _caps(ps: dict, labels: dict, pods: int):
    """(index, message) for every constraint of pod spec `ps` that lets fewer than `pods` pods schedule."""
    for i, c in enumerate(lst(ps.get("topologySpreadConstraints"))):
        c = d(c)
        if c.get("whenUnsatisfiable") != "DoNotSchedule" or c.get("matchLabelKeys"):
            continue
        if c.get("nodeAffinityPolicy", "Honor") != "Honor":
            continue
        skew, min_domains, key = as_int(c.get("maxSkew")), as_int(c.get("minDomains")), c.get("topologyKey")
        if not skew or skew < 1 or not min_domains or min_domains < 2 or not isinstance(key, str):
            continue
        pin = _pin(ps, key)
        if pin is None or not selects(d(c.get("labelSelector")), labels) or pods <= skew:
            continue
        value, where = pin
        yield i, (f"topologySpreadConstraints[{i}] ({key}, maxSkew {skew}, minDomains {min_domains}, DoNotSchedule) "
                  f"on pods pinned to one {key} ({value}, {where}): with fewer eligible domains than minDomains "
                  f"the scheduler places at most {skew} of these {pods} pods, so {pods - skew} never schedule "
                  f"(a gang waits and starts nothing; without one the job half-starts); drop minDomains or the pin")


def check(docs, ctx):
    pool = ctx.pool_of(docs, *K.RUNTIMES)       # runtime_for reads runtimes only
    used = {id(runtime_for(job, pool)) for job in ctx.pool_of(docs, K.TRAINJOB)}
    for doc in docs:
        runtime = K.of(doc) in K.RUNTIMES
        if runtime and id(doc) in used:
            continue            # checked in the pods of the TrainJobs that use it (their node count)
        for pt in pod_templates(doc):
            labels = labels_of(doc, pt)
            pods = pt.replicas or 1
            if runtime and pt.role == TV2.NODE:     # a runtime alone: its own default node count
                pods = as_int(doc.get(("spec", "mlPolicy", "numNodes"))) or 1
            for i, msg in _caps(pt.spec, labels, pods):
                yield doc.finding(ID, msg, pt.path + ("topologySpreadConstraints", i))
    for job in trainjobs(docs):
        runtime = runtime_for(job, pool)
        merged = trainer_pod(job, runtime) if runtime is not None else None
        if merged is None:
            continue
        nodes = as_int(job.get(("spec", "trainer", "numNodes"))) or as_int(runtime.get(("spec", "mlPolicy", "numNodes"))) or 1
        node_pt = next((pt for pt in pod_templates(runtime) if pt.role == TV2.NODE), None)
        if node_pt is None:
            continue
        labels = labels_of(runtime, node_pt, job_name=job.name)
        for _, msg in _caps(merged[0], labels, nodes):
            where = ("spec", "trainer", "numNodes") if job.get(("spec", "trainer", "numNodes")) is not None else ("spec", "runtimeRef")
            yield job.finding(ID, f"runtime {runtime.name}: {msg}", where)

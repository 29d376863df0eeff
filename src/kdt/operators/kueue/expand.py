"""The Kueue Workload a job becomes: its pod sets, their counts and requests, as Kueue computes them.

Kueue admits a job as one Workload (kubernetes-sigs/kueue v0.19.2 pkg/controller/jobframework reconciler.go
constructWorkload): one pod set per part of the job, each with a count and a pod template, from the
job's own integration (pkg/controller/jobs/*). Quota, flavors and topology are checked against it, so
the merge preview shows it and the lint rules kueue-* read it.

- PyTorchJob (jobs/kubeflow/kubeflowjob/kubeflowjob_controller.go PodSets): one pod set per replica
  type, Master then Worker, count `replicas` (1 when unset), the replica's template.
- JobSet, and the JobSet a TrainJob's runtime becomes (jobs/jobset/jobset_controller.go PodSets; the
  TrainJob integration builds that JobSet with Trainer's own runtime, jobs/trainjob/trainjob_controller.go
  getChildJobSet): one pod set per replicated job, count `replicas` x min(parallelism, completions).
- batch Job (jobs/job/job_controller.go PodSets): one pod set `main` of min(parallelism, completions)
  pods, which partial admission may cut down to `kueue.x-k8s.io/job-min-parallelism` (MinCount).
- StatefulSet (jobs/statefulset/statefulset_pod_reconciler.go: its pods form a pod group of
  `replicas` pods, role `main`; jobs/pod/pod_controller.go constructGroupPodSetsFast): one pod set
  `main`, count `replicas`.

A pod set's requests per pod are Kueue's (pkg/workload/workload.go totalRequestsFromPodSets):
component-helpers resource.PodRequests (containers summed, init containers as peaks beside the
restartable ones before them, pod-level cpu/memory/hugepages when set, plus overhead) after a limit
stands in for a missing request (pkg/workload/resources.go UseLimitsAsMissingRequestsInPod), each
resource as ResourceValue (kdt.operators.kueue.facts.resource_value). The topology request is read from
the pod template's annotations (jobframework/tas.go NewPodSetTopologyRequest).

The objects here are data: which kind a document is, and which integration reads it, is the kinds'
(kdt.kinds: each job kind's `kueue_pod_sets` hook calls one of the builders below).
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from fractions import Fraction

from ... import quantity as Q
from ...fields import as_dict, as_int, as_list
from . import facts as KQ
from .. import scheduling as S


@dataclass(frozen=True)
class TopologyRequest:
    """A pod set's topology request (apis/kueue/v1beta2/workload_types.go PodSetTopologyRequest)."""
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool | None = None
    slice_required: str | None = None
    slice_size: str | None = None
    constraints: tuple = ()       # the multi-layer slice levels, outermost first
    group: str | None = None

    @property
    def explicit(self) -> bool:
        """workload.go IsExplicitlyRequestingTAS."""
        return (self.unconstrained is not None or self.required is not None or self.preferred is not None
                or self.slice_required is not None or self.slice_size is not None or bool(self.constraints))

    def levels(self) -> list[tuple[str, str]]:
        """(annotation, node label) of every topology level the request names."""
        out = [(KQ.REQUIRED_TOPOLOGY, self.required), (KQ.PREFERRED_TOPOLOGY, self.preferred),
               (KQ.SLICE_REQUIRED_TOPOLOGY, self.slice_required)]
        out += [(KQ.SLICE_CONSTRAINTS, level) for level in self.constraints]
        return [(a, v) for a, v in out if v is not None]

    def as_api(self) -> dict:
        out: dict = {}
        for key, v in (("required", self.required), ("preferred", self.preferred),
                       ("unconstrained", self.unconstrained), ("podSetSliceRequiredTopology", self.slice_required),
                       ("podSetSliceSize", as_int(self.slice_size, self.slice_size)), ("podSetGroupName", self.group)):
            if v is not None:
                out[key] = v
        if self.constraints:
            out["podsetSliceRequiredTopologyConstraints"] = [{"topology": t} for t in self.constraints]
        return out


def topology_request(meta: dict) -> TopologyRequest | None:
    """NewPodSetTopologyRequest(meta).Build(), without the pod index labels (what admission reads); None when
    the template asks for nothing. An unconstrained value that is no boolean or constraints that are no
    JSON list are the webhook's refusal (lint rule kueue-topology), read here as absent."""
    ann = {str(k): str(v) for k, v in as_dict(as_dict(meta).get("annotations")).items()}
    req = TopologyRequest()
    if KQ.REQUIRED_TOPOLOGY in ann:
        req = TopologyRequest(required=ann[KQ.REQUIRED_TOPOLOGY])
    elif KQ.PREFERRED_TOPOLOGY in ann:
        req = TopologyRequest(preferred=ann[KQ.PREFERRED_TOPOLOGY])
    elif KQ.UNCONSTRAINED_TOPOLOGY in ann:
        value = ann[KQ.UNCONSTRAINED_TOPOLOGY].strip().lower()
        if value in ("1", "t", "true"):          # strconv.ParseBool
            req = TopologyRequest(unconstrained=True)
        elif value in ("0", "f", "false"):
            req = TopologyRequest(unconstrained=False)
    constraints: tuple = ()
    if KQ.SLICE_CONSTRAINTS in ann:
        try:
            parsed = json.loads(ann[KQ.SLICE_CONSTRAINTS])
        except ValueError:
            parsed = None
        constraints = tuple(str(as_dict(c).get("topology")) for c in as_list(parsed) if as_dict(c).get("topology"))
    slice_req = ann.get(KQ.SLICE_REQUIRED_TOPOLOGY) if KQ.SLICE_SIZE in ann and not constraints else None
    group = ann.get(KQ.PODSET_GROUP) if (req.required is not None or req.preferred is not None) else None
    req = TopologyRequest(req.required, req.preferred, req.unconstrained, slice_req,
                          ann.get(KQ.SLICE_SIZE) if slice_req is not None else None, constraints, group)
    return req if req.explicit else None


@dataclass
class PodSet:
    """One pod set of a Workload: `count` pods from `template` (a PodTemplateSpec: metadata and spec)."""
    name: str
    count: int
    template: dict
    path: tuple = ()              # where the template is written in the job's document ("" when derived)
    topology: TopologyRequest | None = None
    min_count: int | None = None  # partial admission: the fewest pods Kueue may admit it with

    @property
    def spec(self) -> dict:
        return as_dict(self.template.get("spec"))

    def requests(self) -> dict[str, int]:
        """What one pod requests, as Kueue counts it (ResourceValue per resource)."""
        return {r: KQ.resource_value(r, v) for r, v in pod_requests(self.spec).items()}

    def total(self, least: bool = False) -> dict[str, int]:
        """What all its pods request; `least`: the fewest pods Kueue may admit (partial admission)."""
        n = self.min_count if least and self.min_count is not None else self.count
        return {r: v * n for r, v in self.requests().items()}


def pod_set(name: str, count, template, path: tuple = ()) -> PodSet:
    template = copy.deepcopy(as_dict(template))
    return PodSet(KQ.pod_set_name(name), as_int(count, 1) if count is not None else 1, template, path,
                  topology_request(as_dict(template.get("metadata"))))


def kubeflow_pod_sets(data: dict, replica_specs_key: str, order: tuple[str, ...]) -> list[PodSet]:
    """A Training Operator job: one pod set per replica type in the integration's order
    (kubeflowjob_controller.go PodSets, podsCount: replicas, 1 when unset)."""
    specs = as_dict(as_dict(data.get("spec")).get(replica_specs_key))
    out = []
    for rtype in order:
        rs = specs.get(rtype)
        if not isinstance(rs, dict):
            continue
        count = rs.get("replicas")
        out.append(pod_set(rtype, 1 if count is None else count, rs.get("template"),
                           ("spec", replica_specs_key, rtype, "template")))
    return out


def jobset_pod_sets(jobset: dict, path_base: tuple | None = ("spec", "replicatedJobs")) -> list[PodSet]:
    """A JobSet: one pod set per replicated job, replicas x pods per Job (jobset_controller.go podsCount,
    PodsCountPerReplica: parallelism, 1 when unset, capped by completions). `path_base` None: a JobSet an
    operator builds (no path in any document)."""
    out = []
    for i, rj in enumerate(as_list(as_dict(jobset.get("spec")).get("replicatedJobs"))):
        rj = as_dict(rj)
        job = as_dict(as_dict(rj.get("template")).get("spec"))
        per_job = _pods_per_job(job)
        replicas = as_int(rj.get("replicas"), 1) if rj.get("replicas") is not None else 1
        path = path_base + (i, "template", "spec", "template") if path_base is not None else ()
        out.append(pod_set(str(rj.get("name", "")), replicas * per_job, job.get("template"), path))
    return out


def _pods_per_job(job_spec: dict) -> int:
    """PodsCountPerReplica (jobset_controller.go), podsCount (job_controller.go): parallelism, 1 when unset,
    capped by completions."""
    per_job = as_int(job_spec.get("parallelism"), 1) if job_spec.get("parallelism") is not None else 1
    completions = as_int(job_spec.get("completions"), per_job) if job_spec.get("completions") is not None else per_job
    return min(per_job, completions)


def job_pod_sets(data: dict) -> list[PodSet]:
    """A batch Job: one pod set `main` (job_controller.go PodSets), partial admission down to the
    job-min-parallelism annotation."""
    spec = as_dict(data.get("spec"))
    ps = pod_set(KQ.DEFAULT_POD_SET, _pods_per_job(spec), spec.get("template"), ("spec", "template"))
    least = as_int(as_dict(as_dict(data.get("metadata")).get("annotations")).get(KQ.JOB_MIN_PARALLELISM))
    if least is not None:
        ps.min_count = max(0, min(least, ps.count))
    return [ps]


def pod_group_pod_sets(data: dict) -> list[PodSet]:
    """A StatefulSet's pods as the pod group Kueue makes of them: one pod set `main` of `replicas` pods
    (statefulset_pod_reconciler.go: GroupTotalCountAnnotation = replicas, RoleHashAnnotation = main)."""
    spec = as_dict(data.get("spec"))
    count = spec.get("replicas")
    return [pod_set(KQ.DEFAULT_POD_SET, 1 if count is None else count, spec.get("template"),
                    ("spec", "template"))]


# ------------------------------------------------------------ requests
def _amount(value) -> int | Fraction | None:
    got = Q.read(value)
    return got if isinstance(got, (int, Fraction)) else None   # not a quantity: the schema's finding


def _requests(res) -> dict:
    """A container's (or the pod's) requests, a limit standing in for a missing request."""
    res = as_dict(res)
    out = {str(k): v for k, v in as_dict(res.get("limits")).items()}
    out.update({str(k): v for k, v in as_dict(res.get("requests")).items()})
    return {k: a for k, v in out.items() if (a := _amount(v)) is not None}


def _add(into: dict, other: dict) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict, other: dict) -> None:
    for k, v in other.items():
        into[k] = max(into.get(k, 0), v)


_POD_LEVEL = ("cpu", "memory")        # component-helpers SupportedPodLevelResources, plus hugepages-*


def pod_requests(spec: dict) -> dict[str, int | Fraction]:
    """component-helpers resource.PodRequests (v0.36) of a pod spec whose limits stand in for missing requests."""
    result: dict = {}
    for c in as_list(spec.get("containers")):
        _add(result, _requests(as_dict(c).get("resources")))
    sidecars: dict = {}
    init_peak: dict = {}
    for c in as_list(spec.get("initContainers")):
        c = as_dict(c)
        own = _requests(c.get("resources"))
        if c.get("restartPolicy") == "Always":           # a sidecar runs beside everything after it
            _add(result, own)
            _add(sidecars, own)
            use = dict(sidecars)
        else:
            use = dict(own)
            _add(use, sidecars)
        _max(init_peak, use)
    _max(result, init_peak)
    pod_level = _requests(spec.get("resources"))
    for k, v in pod_level.items():
        if k in _POD_LEVEL or k.startswith("hugepages-"):
            result[k] = v
    _add(result, {k: a for k, v in as_dict(spec.get("overhead")).items() if (a := _amount(v)) is not None})
    return result


# ------------------------------------------------------------ the Workload
@dataclass
class Workload:
    """The Workload Kueue makes of one job (v1beta2 shape: spec.podSets, status.resourceRequests)."""
    job_kind: str
    job_name: str
    namespace: str | None
    queue: str
    pod_sets: list[PodSet]
    priority_class: tuple[str, str, str] | None = None   # (group, kind, name) of the PriorityClassRef
    facts: dict = field(default_factory=dict)

    def total(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for ps in self.pod_sets:
            _add(out, ps.total())
        return out

    def as_object(self) -> dict:
        meta: dict = {"generateName": KQ.workload_name_prefix(self.job_kind, self.job_name)}
        if self.namespace:
            meta["namespace"] = self.namespace
        spec: dict = {"queueName": self.queue}
        if self.priority_class:
            group, kind, name = self.priority_class
            spec["priorityClassRef"] = {"group": group, "kind": kind, "name": name}
        spec["podSets"] = [self._pod_set(ps) for ps in self.pod_sets]
        return {"apiVersion": KQ.API_VERSION, "kind": "Workload", "metadata": meta, "spec": spec,
                "status": {"resourceRequests": [
                    {"name": ps.name, "resources": {r: KQ.show_value(r, v) for r, v in sorted(ps.total().items())}}
                    for ps in self.pod_sets]}}

    @staticmethod
    def _pod_set(ps: PodSet) -> dict:
        """A pod set with its template cut to what admission reads: per container its requests (limits
        standing in), the pod's node selection, tolerations, priority and overhead."""
        spec = ps.spec
        keep: dict = {}
        for key in ("initContainers", "containers"):
            items = [{"name": as_dict(c).get("name"),
                      "resources": {"requests": {k: KQ.show_value(k, KQ.resource_value(k, v)) for k, v
                                                 in sorted(_requests(as_dict(c).get("resources")).items())}}}
                     for c in as_list(spec.get(key))]
            if items:
                keep[key] = items
        for key in ("nodeSelector", "tolerations", "priorityClassName", "overhead", "resources"):
            if spec.get(key) not in (None, {}, []):
                keep[key] = copy.deepcopy(spec[key])
        node_affinity = as_dict(as_dict(spec.get("affinity")).get("nodeAffinity"))
        if node_affinity:
            keep["affinity"] = {"nodeAffinity": copy.deepcopy(node_affinity)}
        template: dict = {"spec": keep}
        ann = {k: v for k, v in as_dict(as_dict(ps.template.get("metadata")).get("annotations")).items()
               if str(k).startswith(KQ.GROUP + "/")}
        if ann:
            template = {"metadata": {"annotations": dict(ann)}, "spec": keep}
        out: dict = {"name": ps.name, "count": ps.count, "template": template}
        if ps.topology is not None:
            out["topologyRequest"] = ps.topology.as_api()
        return out


def workload(job_kind: str, data: dict, pod_sets: list[PodSet], pod_priority_class: str = "") -> Workload:
    """The Workload of a queued job from its pod sets; the priority class as jobframework ExtractPriority
    picks it (the job's kueue.x-k8s.io/priority-class label, else the first pod set's priorityClassName,
    else `pod_priority_class` when the integration reads it elsewhere)."""
    meta = as_dict(data.get("metadata"))
    labels = as_dict(meta.get("labels"))
    priority = None
    if labels.get(KQ.PRIORITY_CLASS_LABEL):
        priority = (*KQ.WORKLOAD_PRIORITY_CLASS, str(labels[KQ.PRIORITY_CLASS_LABEL]))
    else:
        name = pod_priority_class or next((str(ps.spec["priorityClassName"]) for ps in pod_sets
                                           if ps.spec.get("priorityClassName")), "")
        priority = (*KQ.POD_PRIORITY_CLASS, name) if name else None
    return Workload(job_kind, str(meta.get("name", "")), meta.get("namespace"), str(labels.get(S.QUEUE_LABEL, "")),
                    pod_sets, priority)


# ------------------------------------------------------------ admission: flavors and quota
def tolerates(toleration: dict, taint: dict) -> bool:
    """k8s.io/api core/v1 toleration.go Toleration.ToleratesTaint: the effect (empty matches every effect),
    the key (empty matches every key), then Exists matches any value and Equal (the default) the same value."""
    t, n = as_dict(toleration), as_dict(taint)
    if t.get("effect") and t.get("effect") != n.get("effect"):
        return False
    if t.get("key") and t.get("key") != n.get("key"):
        return False
    op = t.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and str(t.get("value") or "") == str(n.get("value") or "")


def _requirement_matches(req: dict, labels: dict) -> bool:
    """A NodeSelectorRequirement against a node's labels (k8s.io/component-helpers nodeaffinity)."""
    key, op, values = req.get("key"), req.get("operator"), [str(v) for v in as_list(req.get("values"))]
    if op == "In":
        return key in labels and str(labels[key]) in values
    if op == "NotIn":
        return key not in labels or str(labels[key]) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and len(values) == 1:
        have, want = as_int(labels[key]), as_int(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def flavor_mismatch(spec: dict, flavor: dict, flavor_name: str) -> str | None:
    """Why a pod spec cannot be admitted into a ResourceFlavor (None: it can), as
    flavorassigner.go checkFlavorForPodSets judges it: an untolerated taint of the flavor (the pod's
    tolerations and the flavor's own), then the pod's nodeSelector and required node affinity, each cut
    to the keys the flavor's nodeLabels name (flavorSelector), against a node with those labels."""
    tolerations = as_list(spec.get("tolerations")) + as_list(flavor.get("tolerations"))
    for taint in as_list(flavor.get("nodeTaints")):
        taint = as_dict(taint)
        if taint.get("effect") in KQ.TAINT_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            shown = f"{taint.get('key')}{'=' + str(taint['value']) if taint.get('value') else ''}:{taint.get('effect')}"
            return f"untolerated taint {shown} in flavor {flavor_name}"
    labels = {str(k): str(v) for k, v in as_dict(flavor.get("nodeLabels")).items()}
    for k, v in as_dict(spec.get("nodeSelector")).items():
        if str(k) in labels and labels[str(k)] != str(v):
            return (f"flavor {flavor_name} doesn't match node affinity: nodeSelector {k}={v}, the flavor's nodes "
                    f"have {k}={labels[str(k)]}")
    required = as_dict(as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"))
    terms = []
    for term in as_list(required.get("nodeSelectorTerms")):
        kept = [as_dict(e) for e in as_list(as_dict(term).get("matchExpressions")) if as_dict(e).get("key") in labels]
        if not kept:          # a term with no expression on the flavor's keys matches any flavor
            terms = []
            break
        terms.append(kept)
    if terms and not any(all(_requirement_matches(e, labels) for e in term) for term in terms):
        return f"flavor {flavor_name} doesn't match node affinity: no required nodeSelectorTerm matches its nodeLabels"
    return None


def tas_mismatch(ps: PodSet, flavor: dict, flavor_name: str, topology_levels: list[str] | None,
                 tas_only: bool, covered: set[str]) -> str | None:
    """flavorassigner/tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS: a pod set asking for topology
    (or in a ClusterQueue whose flavors are all topology-aware) needs a flavor with a Topology that has
    every level it names (TASFlavorSnapshot.HasLevel); a topology-aware flavor takes no other pod set.
    `topology_levels`: the node labels of the flavor's Topology (None when it names none, or the Topology
    is not known)."""
    requested = ps.topology is not None and ps.topology.explicit
    if requested and not tas_only:
        if not flavor.get("topologyName"):
            if not set(ps.requests()) & covered:
                return None
            return f"flavor {flavor_name} does not support TopologyAwareScheduling"
    if requested and topology_levels is not None:
        missing = [v for _, v in ps.topology.levels() if v not in topology_levels]
        if missing:
            return (f"flavor {flavor_name}'s Topology {flavor.get('topologyName')} has no level {missing[0]} "
                    f"(levels: {', '.join(topology_levels)})")
    if not requested and not tas_only and flavor.get("topologyName"):
        return f"flavor {flavor_name} supports only TopologyAwareScheduling"
    return None


@dataclass
class Quota:
    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None


def quotas_of(resource_groups) -> dict[tuple[str, str], Quota]:
    """(flavor, resource) -> Quota of a ClusterQueue's or Cohort's spec.resourceGroups, in ResourceValues."""
    out: dict[tuple[str, str], Quota] = {}
    for group in as_list(resource_groups):
        for fl in as_list(as_dict(group).get("flavors")):
            fl = as_dict(fl)
            for res in as_list(fl.get("resources")):
                res = as_dict(res)
                name = str(res.get("name"))

                def value(key):
                    a = _amount(res.get(key)) if res.get(key) is not None else None
                    return KQ.resource_value(name, a) if a is not None else None
                out[(str(fl.get("name")), name)] = Quota(value("nominalQuota") or 0, value("borrowingLimit"),
                                                         value("lendingLimit"))
    return out


@dataclass
class QuotaNode:
    """A ClusterQueue or Cohort of the quota tree (pkg/cache/scheduler/resource_node.go resourceNode)."""
    name: str
    quotas: dict
    parent: str | None = None
    children: list = field(default_factory=list)


class QuotaTree:
    """Cohorts and ClusterQueues as Kueue's scheduler cache holds them: a ClusterQueue's subtree quota is
    its nominal quota; a Cohort's is its own plus what each child can lend (its subtree quota less what its
    lendingLimit keeps back: accumulateFromChild, localQuota). The most a ClusterQueue can ever admit of a
    flavor and resource is potentialAvailable: what it keeps back plus what its parent could ever give,
    capped by its subtree quota plus its borrowingLimit (resource_node.go potentialAvailable; the
    scheduler's "maximum capacity", flavorassigner.go fitsResourceQuota). A Cohort named but not defined
    is an implicit one with no quota of its own."""

    def __init__(self) -> None:
        self.nodes: dict[tuple[str, str], QuotaNode] = {}    # ("cq" | "cohort", name) -> node

    def add_cluster_queue(self, name: str, cohort: str | None, quotas: dict) -> None:
        self.nodes[("cq", name)] = QuotaNode(name, quotas, cohort)

    def add_cohort(self, name: str, parent: str | None, quotas: dict) -> None:
        self.nodes[("cohort", name)] = QuotaNode(name, quotas, parent)

    def link(self) -> None:
        for (kind, name), node in list(self.nodes.items()):
            if node.parent:
                parent = self.nodes.setdefault(("cohort", node.parent), QuotaNode(node.parent, {}))
                parent.children.append((kind, name))

    def _node(self, key):
        return self.nodes[key]

    def subtree(self, key, fr) -> int:
        node = self._node(key)
        total = node.quotas.get(fr, Quota()).nominal
        if key[0] == "cohort":
            for child in node.children:
                total += self.subtree(child, fr) - self.local(child, fr)
        return total

    def local(self, key, fr) -> int:
        q = self._node(key).quotas.get(fr, Quota())
        return max(0, self.subtree(key, fr) - q.lending_limit) if q.lending_limit is not None else 0

    def potential(self, key, fr, seen=()) -> int:
        node = self._node(key)
        if not node.parent or key in seen:
            return self.subtree(key, fr)
        avail = self.local(key, fr) + self.potential(("cohort", node.parent), fr, seen + (key,))
        q = node.quotas.get(fr, Quota())
        if q.borrowing_limit is not None:
            avail = min(self.subtree(key, fr) + q.borrowing_limit, avail)
        return avail

    def root(self, key) -> str | None:
        """The top Cohort above a node (None: no cohort)."""
        node, seen = self._node(key), set()
        top = None
        while node.parent and node.parent not in seen:
            seen.add(node.parent)
            top = node.parent
            node = self._node(("cohort", node.parent))
        return top

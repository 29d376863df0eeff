"""A target admitted by the real Kueue and placed by the real schedulers on simulated GPU nodes.

    kdt run overlays/scale-512-pytorchjob --live --simulate 64x8

The target is applied (server-side, one document at a time, so a refusal is located) into the namespace its
LocalQueue lives in (`training`, deploy/argocd's destination) of a control plane started with Kueue, the
coscheduling scheduler and KWOK's nodes (kdt.live.schedulers). What the run reports is read from the cluster,
never from kdt's model of Kueue:

- admission: the Workload's `status.admission` (ClusterQueue, each pod set's flavors and topology assignment)
  or, while it is not admitted, its QuotaReserved/Admitted condition message, as Kueue writes it;
- placement: each pod's node (spec.nodeName, set by kube-scheduler or the coscheduling scheduler) and that
  node's topology labels; the time from apply to the last pod bound and to the last pod Running (KWOK's
  pod-ready stage reports it as a kubelet would);
- the gang: the spread between the first and the last pod's binding.

Claims are given a PersistentVolume each, bound ahead (no provisioner here), as kdt.live.node does.
What the run created is deleted at the end (the control plane it started is stopped).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from .. import findings as F
from ..errors import UsageError
from .api import Api, ApiError

NAMESPACE = "training"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/workloads"


@dataclass
class Observed:
    """What the cluster says about one applied target."""
    workloads: list = field(default_factory=list)    # name, admitted, message, cluster_queue, flavors, topology
    pods: int = 0
    expected: int = 0
    bound: int = 0
    running: int = 0
    nodes: set = field(default_factory=set)
    blocks: dict = field(default_factory=dict)       # block label value -> pods
    first_bound_s: float | None = None
    all_bound_s: float | None = None
    all_running_s: float | None = None
    admitted_s: float | None = None
    bind_times: list = field(default_factory=list)

    @property
    def admitted(self) -> bool:
        return bool(self.workloads) and all(w["admitted"] for w in self.workloads)

    @property
    def pending_message(self) -> str:
        return next((w["message"] for w in self.workloads if not w["admitted"] and w["message"]), "")

    @property
    def gang_spread_s(self) -> float | None:
        return (max(self.bind_times) - min(self.bind_times)) if self.bind_times else None


def provision(api: Api, namespace: str, docs: list) -> list[str]:
    """A PersistentVolume for each claim the target makes, bound ahead to it (claimRef)."""
    made = []
    for d in docs:
        if d.kind != "PersistentVolumeClaim" or not isinstance(d.data, dict):
            continue
        spec = d.data.get("spec") or {}
        # a name of its own per run: the volume of an earlier run of the same claim may still be going
        name = f"kdt-scale-{namespace}-{d.name}"[:240] + f"-{time.monotonic_ns() % 10**9:09d}"
        pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": {"kdt-scale": "1"}},
              "spec": {"capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")},
                       "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                       "persistentVolumeReclaimPolicy": "Retain", "storageClassName": spec.get("storageClassName") or "",
                       "hostPath": {"path": f"/kdt-scale/{name}"},
                       "claimRef": {"namespace": namespace, "name": d.name}}}
        try:
            api.create("/api/v1/persistentvolumes", pv)
        except ApiError as e:
            if e.code != 409:
                raise
        made.append(name)
    return made


def apply(cluster, docs: list, namespace: str) -> tuple[list, list]:
    """Apply each document server-side; (applied documents, findings of the refused ones, located)."""
    applied, refused = [], []
    order = {"Namespace": 0, "PersistentVolumeClaim": 1, "ConfigMap": 1, "Service": 1, "ClusterTrainingRuntime": 1}
    for d in sorted(docs, key=lambda d: order.get(d.kind, 2)):
        if not isinstance(d.data, dict):
            continue
        proc = cluster.kubectl("apply", "--server-side", "--field-manager=kdt-scale", "-n", namespace, "-f", "-",
                               input=json.dumps(d.data), check=False)
        if proc.returncode != 0:
            msg = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "refused"
            refused.append(d.finding("live-scale", f"the API server refuses this: {msg}"))
            continue
        applied.append(d)
    return applied, refused


def workloads(api: Api, namespace: str) -> list[dict]:
    out = []
    for w in api.items(WORKLOADS.format(ns=namespace)):
        st = w.get("status") or {}
        conds = {c["type"]: c for c in st.get("conditions") or []}
        adm = st.get("admission") or {}
        admitted = (conds.get("Admitted") or {}).get("status") == "True"
        msg = ""
        for t in ("QuotaReserved", "Admitted"):
            c = conds.get(t)
            if c and c.get("status") != "True" and c.get("message"):
                msg = c["message"]
                break
        sets = []
        for ps in adm.get("podSetAssignments") or []:
            ta = ps.get("topologyAssignment") or {}
            sets.append({"name": ps.get("name"), "count": ps.get("count"), "flavors": ps.get("flavors") or {},
                         "levels": ta.get("levels") or [], "domains": _domains(ta)})
        out.append({"name": w["metadata"]["name"], "admitted": admitted, "message": msg,
                    "cluster_queue": adm.get("clusterQueue"), "pod_sets": sets,
                    "counts": sum(int(ps.get("count") or 0) for ps in (w.get("spec") or {}).get("podSets") or []),
                    "spec_pod_sets": [{"name": ps.get("name"), "count": ps.get("count"),
                                       "topology": ps.get("topologyRequest") or {}}
                                      for ps in (w.get("spec") or {}).get("podSets") or []],
                    "priority": (w.get("spec") or {}).get("priority"),
                    "evicted": (conds.get("Evicted") or {}).get("status") == "True",
                    "preempted": (conds.get("Preempted") or {}).get("status") == "True"})
    return out


def _domains(ta: dict) -> int:
    """How many topology domains (of the lowest level Kueue assigned) the pod set got: v1beta2's
    topologyAssignment lists them as `slices` or (older) `domains`."""
    if "domains" in ta:
        return len(ta.get("domains") or [])
    n = 0
    for s in ta.get("slices") or []:
        n += int(s.get("domainCount") or 0)
    return n


class Watch:
    """Polls the namespace's Workloads and pods, says the progress as pods bind."""

    def __init__(self, cluster, namespace: str, block_label: str, say=None):
        self.api = Api.from_kubeconfig(cluster.kubeconfig)
        self.cluster, self.namespace, self.block_label = cluster, namespace, block_label
        self.say = say or (lambda msg: None)
        self.t0 = time.monotonic()
        self._bound_at: dict[str, float] = {}
        self._node_block: dict[str, str] = {}

    def _block(self, node: str) -> str:
        if node not in self._node_block:
            try:
                labels = self.api.get(f"/api/v1/nodes/{node}")["metadata"].get("labels") or {}
            except ApiError:
                labels = {}
            self._node_block[node] = labels.get(self.block_label, "?")
        return self._node_block[node]

    def poll(self, obs: Observed, selector: str = "") -> Observed:
        now = time.monotonic() - self.t0
        obs.workloads = workloads(self.api, self.namespace)
        obs.expected = sum(w["counts"] for w in obs.workloads)
        if obs.admitted and obs.admitted_s is None:
            obs.admitted_s = now
            self.say(f"admitted at {now:.1f} s: " + "; ".join(describe_admission(w) for w in obs.workloads))
        params = {"labelSelector": selector} if selector else {}
        pods = [p for p in self.api.items(f"/api/v1/namespaces/{self.namespace}/pods", **params)
                if not p["metadata"].get("deletionTimestamp")]
        before = obs.bound
        obs.pods = len(pods)
        obs.bound = obs.running = 0
        obs.nodes, obs.blocks = set(), {}
        for p in pods:
            node = (p.get("spec") or {}).get("nodeName")
            if not node:
                continue
            obs.bound += 1
            obs.nodes.add(node)
            b = self._block(node)
            obs.blocks[b] = obs.blocks.get(b, 0) + 1
            self._bound_at.setdefault(p["metadata"]["name"], now)
            if (p.get("status") or {}).get("phase") == "Running":
                obs.running += 1
        obs.bind_times = [self._bound_at[n] for n in (p["metadata"]["name"] for p in pods) if n in self._bound_at]
        if obs.bound and obs.first_bound_s is None:
            obs.first_bound_s = now
        if obs.expected and obs.bound >= obs.expected and obs.all_bound_s is None:
            obs.all_bound_s = now
        if obs.expected and obs.running >= obs.expected and obs.all_running_s is None:
            obs.all_running_s = now
        if obs.bound != before:
            self.say(f"{now:6.1f} s: {obs.bound}/{obs.expected or '?'} pods bound, {obs.running} Running, "
                     f"{len(obs.nodes)} nodes")
        return obs

    def until(self, done, timeout: float, obs: Observed | None = None, selector: str = "") -> Observed:
        obs = obs or Observed()
        end = time.monotonic() + timeout
        while True:
            self.cluster.check()
            self.poll(obs, selector)
            if done(obs) or time.monotonic() >= end:
                return obs
            time.sleep(0.5)


def running(obs: Observed) -> bool:
    return bool(obs.expected) and obs.running >= obs.expected


def pending_settled(obs: Observed) -> bool:
    """Kueue has said why the workload waits (its condition message is written)."""
    return bool(obs.workloads) and not obs.admitted and bool(obs.pending_message)


def describe_admission(w: dict) -> str:
    sets = ", ".join(
        f"{ps['name']} x{ps['count']} -> {'/'.join(sorted(set(ps['flavors'].values())))}"
        + (f" in {ps['domains']} {ps['levels'][0].split('/')[-1] if ps['levels'] else ''} domain(s)"
           if ps["levels"] else "")
        for ps in w["pod_sets"])
    return f"Workload {w['name']} admitted by ClusterQueue {w['cluster_queue']}: {sets}"


def delete(cluster, applied: list, namespace: str, pvs: list, timeout: float = 120) -> None:
    """Delete what the run applied and the volumes it made, waiting until the pods are gone."""
    for d in reversed(applied):
        if d.kind == "Namespace":
            continue
        cluster.kubectl("delete", "-n", namespace, "--ignore-not-found", "--wait=false", "-f", "-",
                        input=json.dumps(d.data), check=False)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        left = cluster.get_json("pods,workloads.kueue.x-k8s.io,podgroups.scheduling.x-k8s.io", "-n", namespace)["items"]
        if not left:
            break
        for p in left:       # KWOK's pod-delete stage ends pods as a kubelet would; finalizers of jobs go with them
            if p.get("kind") == "Pod" and p["metadata"].get("deletionTimestamp") is None:
                cluster.kubectl("delete", "pod", "-n", namespace, p["metadata"]["name"], "--wait=false", check=False)
        time.sleep(0.5)
    for pv in pvs:
        cluster.kubectl("delete", "pv", pv, "--ignore-not-found", "--wait=false", check=False)


def locate(docs: list, message: str) -> F.Finding | None:
    """Kueue's reason, located at the manifest field that decides it: the queue name, the topology request,
    the priority class; a quota (ClusterQueue) or flavor message at the job's queue label."""
    for d in docs:
        if not isinstance(d.data, dict):
            continue
        labels = ((d.data.get("metadata") or {}).get("labels") or {})
        if QUEUE_LABEL in labels:
            path = ["metadata", "labels", QUEUE_LABEL]
            low = message.lower()
            if "topology" in low or "domain" in low:
                hit = _annotation_path(d.data, ("kueue.x-k8s.io/podset-required-topology",
                                                "kueue.x-k8s.io/podset-preferred-topology"))
                path = hit or path
            elif "priority" in low:
                hit = _find_key(d.data, "priorityClassName")
                path = hit or path
            return d.finding("live-scale", f"Kueue: {message}", path)
    return None


def _find_key(obj, key: str, path=()) -> list | None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                return [*path, k]
            hit = _find_key(v, key, (*path, k))
            if hit:
                return hit
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            hit = _find_key(v, key, (*path, i))
            if hit:
                return hit
    return None


def _annotation_path(obj, keys: tuple) -> list | None:
    for k in keys:
        hit = _find_key(obj, k)
        if hit:
            return hit
    return None


def target_documents(target: str) -> tuple[str, list]:
    """(name, rendered documents) of one target, as `kdt run` renders it; a target that does not render is a
    UsageError with its first finding."""
    from .. import targets as T
    from ..render import render
    targets = T.resolve([target])
    results = [render(t) for t in targets]
    errors = [f for r in results for f in r.findings if f.level == F.ERROR]
    if errors:
        raise UsageError(f"{target}: {errors[0].message.splitlines()[0]}")
    return (targets[0].name if len(targets) == 1 else target), [d for r in results for d in r.documents]


def start_cluster(shape, stream, cluster_file=None, coscheduling: bool = True, operators: bool = True):
    """A control plane of the default releases with Kueue, coscheduling and `shape`'s KWOK nodes; the
    repository's cluster file (.kdt-cluster.yaml) gives its objects and the Training Operator's flags. Without
    `operators`, their CRDs only (enough for a StatefulSet target)."""
    from .. import cluster_file as CF
    from . import install
    from . import releases as R
    from . import schedulers as S
    from .controlplane import Cluster
    cf = cluster_file if cluster_file is not None else CF.load()
    to_file = S.training_operator_cluster_file(cf) if coscheduling else S.dataclasses.replace(cf, object_paths=())
    rs = R.ReleaseSet()
    c = Cluster.start(rs, stream=stream, cluster_file=to_file, operators=operators)
    try:
        if not operators:
            install.apply_base(c, *R.trainer(rs.trainer), R.training_operator(rs.training_operator))
        c.facts = S.start(c, cf, shape, coscheduling)
    except BaseException:
        c.stop()
        raise
    return c


def submit(cluster, target: str, namespace: str = NAMESPACE, say=None, timeout: float = 600,
           settle_s: float = 5.0, edit=None) -> tuple[Observed, list, list, list]:
    """Apply `target` (each document's data passed through `edit` first, when given) and watch it until all its
    pods Run, or Kueue has said why it waits (its message unchanged for `settle_s`), or `timeout`:
    (observed, documents, applied, findings)."""
    name, docs = target_documents(target)
    if edit is not None:
        for d in docs:
            if isinstance(d.data, dict):
                edit(d.data)
    api = Api.from_kubeconfig(cluster.kubeconfig)
    pvs = provision(api, namespace, docs)
    block = cluster.facts.levels[0] if getattr(cluster, "facts", None) else "kubernetes.io/hostname"
    watch = Watch(cluster, namespace, block, say)
    applied, refused = apply(cluster, docs, namespace)
    cluster.scale_pvs = getattr(cluster, "scale_pvs", []) + pvs
    if refused:
        return Observed(), docs, applied, refused
    seen = {"msg": None, "at": 0.0}

    def done(obs: Observed) -> bool:
        if running(obs):
            return True
        if pending_settled(obs):
            if obs.pending_message != seen["msg"]:
                seen["msg"], seen["at"] = obs.pending_message, time.monotonic()
            return time.monotonic() - seen["at"] >= settle_s
        return False
    obs = watch.until(done, timeout)
    findings = []
    if not obs.admitted and obs.pending_message:
        f = locate(docs, obs.pending_message)
        if f is not None:
            findings.append(f)
    return obs, docs, applied, findings


def report(name: str, obs: Observed, shape) -> list[str]:
    lines = [f"# {name} on {shape.nodes} simulated nodes x {shape.gpus} nvidia.com/gpu (Kueue, kube-scheduler, "
             f"coscheduling, KWOK)"]
    for w in obs.workloads:
        lines.append(describe_admission(w) if w["admitted"] else f"Workload {w['name']} not admitted: {w['message']}")
    if obs.bound:
        blocks = ", ".join(f"{b}: {n}" for b, n in sorted(obs.blocks.items()))
        lines.append(f"placement: {obs.bound}/{obs.expected} pods bound to {len(obs.nodes)} distinct nodes ({blocks})")
    if obs.all_bound_s is not None:
        lines.append(f"time: admitted {obs.admitted_s:.1f} s, all bound {obs.all_bound_s:.1f} s, all Running "
                     f"{obs.all_running_s if obs.all_running_s is not None else float('nan'):.1f} s after apply; "
                     f"first to last bound {obs.gang_spread_s:.1f} s; "
                     f"{obs.bound / max(obs.all_bound_s - (obs.first_bound_s or 0), 0.1):.0f} pods bound/s")
    return lines


def memory(cluster) -> dict[str, int]:
    """Resident memory of each component of the control plane (its process group), in bytes."""
    import os
    out = {}
    for p in cluster.procs:
        total = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if os.getpgid(int(pid)) != p.popen.pid:
                    continue
                for line in open(f"/proc/{pid}/status"):
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            except (OSError, ProcessLookupError):
                continue
        out[p.name] = total
    return out

"""The node agent: the project's kubelet for processes, on the live control plane (`kdt run --live`).

It registers the nodes a run needs, each a Node object with the capacity its pods ask (and `pods: 1`, so
the real kube-scheduler places one pod per node, as the target's node count says), renews their Leases
(kube-node-lease), and runs the containers of every pod the scheduler binds to them as processes of this
machine, with what `kdt run` gives a pod offline (kdt.run.supervisor: the image's environment, the
kubelet's env, volumes as folders, a loopback address of its own, names through the preloaded shim).

What it reports is what a kubelet reports (k8s.io/api core/v1 PodStatus, kubelet pkg/kubelet/status at
v1.36.3): `phase`, the conditions `PodReadyToStartContainers`, `Initialized`, `ContainersReady`, `Ready`
(no probes here: a running container is ready), `podIP`/`podIPs`, `hostIP`, `startTime`, and per container
`state`, `lastState.terminated` (exit code, reason `Completed` or `Error`), `restartCount`, `ready` and
`started`. `restartPolicy` is applied in place as the kubelet's does (Always: every exit; OnFailure: a
non-zero exit; init containers restart on failure unless Never), after a back-off that doubles from
`--restart-delay` up to the kubelet's 300 s (kubelet's is 10 s at first). A pod given a deletionTimestamp
gets SIGTERM, its grace period (capped by the run's), SIGKILL, and then its final delete (grace 0), as the
kubelet's status manager does once the containers are gone.

The names the shim resolves are rewritten as pods and Services change: each pod's hostname (and
`hostname.subdomain...` names), and each Service's names to the address of a ready endpoint of its
EndpointSlices (a ClusterIP Service's virtual address is nowhere here, so its name resolves to a pod
behind it: ports must be the same, as the shipped targets' are).
"""
from __future__ import annotations

import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..operators.framework import controller as C
from ..run import netshim
from ..operators.framework.pods import CLUSTER_DOMAIN, Container, EnvError, LocalPod, pod_containers
from ..run.supervisor import PodRun, Proc, Supervisor
from .api import Api, ApiError, pod_path
from .kept import alive

NODE_LABEL = "kdt.dev/run"             # the run a node belongs to (its owner's pid in OWNER_ANNOTATION)
OWNER_ANNOTATION = "kdt.dev/owner-pid"
LEASE_NS = "kube-node-lease"
LEASE_SECONDS = 40                     # the kubelet's nodeLeaseDurationSeconds default
RENEW_EVERY = 10.0                     # the kubelet renews at a quarter of the duration
MAX_BACKOFF = 300.0                    # kubelet MaxContainerBackOff
# The taints the node lifecycle controller puts on a node whose Ready condition is Unknown
# (pkg/controller/nodelifecycle: UnreachableTaintTemplate, and its NoSchedule twin from taint-by-condition).
UNREACHABLE = [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
               {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def api_address(local: str) -> str:
    """The address the API server is told for a pod (status.podIP) whose processes use the loopback address
    `local`: the API server refuses loopback addresses in Endpoints and EndpointSlices ("may not be in the
    loopback range", k8s.io/kubernetes pkg/apis/discovery/validation at v1.36.3), so the cluster sees one of
    100.64.0.0/10 (shared address space) one to one with it; the shim resolves names to the local one."""
    _, net, hi, lo = local.split(".")
    return f"100.{64 + (int(net) - 64) % 64}.{hi}.{lo}"


def selected_labels(spec: dict) -> dict:
    """The node labels a pod spec asks for: its nodeSelector, and of its required node affinity's first term
    the `In` (first value) and `Exists` expressions (kube-scheduler's NodeAffinity plugin reads both)."""
    out = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = req.get("nodeSelectorTerms") or []
    for e in (terms[0].get("matchExpressions") or []) if terms and isinstance(terms[0], dict) else []:
        if e.get("operator") == "In" and e.get("values"):
            out.setdefault(str(e["key"]), str(e["values"][0]))
        elif e.get("operator") == "Exists":
            out.setdefault(str(e["key"]), "")
    return out


def tolerated_taints(spec: dict) -> list[dict]:
    """The NoSchedule taints a pod spec's tolerations name by key (`nvidia.com/gpu` Exists, as a GPU node pool is
    tainted): the node made for that pod carries them, so a pod that tolerates none of them (a Deployment's beside
    the job, such as the torchft Lighthouse) is not placed on a node another pod of the run needs. A toleration
    with no key (it tolerates every taint) names none."""
    out = []
    for t in spec.get("tolerations") or []:
        if not isinstance(t, dict) or not t.get("key") or t.get("effect") not in ("NoSchedule", None, ""):
            continue
        taint = {"key": str(t["key"]), "effect": "NoSchedule"}
        if t.get("operator") == "Equal" or (t.get("operator") in (None, "") and t.get("value") is not None):
            taint["value"] = str(t.get("value") or "")
        if taint not in out:
            out.append(taint)
    return out


def replica_set_base(pod: dict) -> str:
    """The Deployment of a pod a ReplicaSet owns (`<deployment>-<pod-template-hash>`), or ""."""
    meta = pod.get("metadata") or {}
    h = (meta.get("labels") or {}).get("pod-template-hash")
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "ReplicaSet" and h and str(ref.get("name", "")).endswith(f"-{h}"):
            return str(ref["name"])[: -len(h) - 1]
    return ""


def logical_name(pod: dict) -> str:
    """The name `kdt run` gives a pod offline: a Job's pod is `<job>-<completion index>` (its real name has a
    generated suffix); every other pod keeps its name (a PyTorchJob's, a StatefulSet's)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    index = labels.get("batch.kubernetes.io/job-completion-index")
    job = labels.get("batch.kubernetes.io/job-name") or labels.get("job-name")
    if index is not None and job:
        return f"{job}-{index}"
    return str(meta.get("name"))


@dataclass
class Node:
    name: str
    lost: bool = False
    renewed: float = 0.0


@dataclass
class LivePodRun(PodRun):
    uid: str = ""
    node: str = ""
    logical: str = ""
    api_ip: str = ""
    created: str = ""
    started_at: dict = field(default_factory=dict)       # container -> when its current run started (RFC 3339)
    state: dict = field(default_factory=dict)            # container -> its state object
    last: dict = field(default_factory=dict)             # container -> lastState
    restarts: dict = field(default_factory=dict)         # container -> restartCount
    phase: str = "Pending"
    dirty: bool = True
    term_deadline: float = 0.0                           # deletionTimestamp seen: SIGKILL after this
    finalized: bool = False
    problem: str = ""                                    # why a container cannot start (as the kubelet's waiting reason)
    exited_zero: set = field(default_factory=set)        # containers that have exited 0 at least once


def sweep_orphans(api: Api) -> list[str]:
    """What runs whose `kdt` died (SIGKILL, a crash) left in a kept control plane: their nodes (and Leases),
    PersistentVolumes and namespaces, found by the owner's pid on each node. Called by `kdt cluster up`'s
    daemon every few seconds and by every live run as it starts; the names removed."""
    gone = []
    for n in api.items("/api/v1/nodes", labelSelector=NODE_LABEL):
        meta = n["metadata"]
        pid = int((meta.get("annotations") or {}).get(OWNER_ANNOTATION) or 0)
        if pid and alive(pid):
            continue
        run = (meta.get("labels") or {}).get(NODE_LABEL, "")
        api.delete(f"/api/v1/nodes/{meta['name']}")
        api.delete(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/{meta['name']}")
        gone.append(f"node {meta['name']}")
        for pv in api.items("/api/v1/persistentvolumes", labelSelector=f"{NODE_LABEL}={run}"):
            path = f"/api/v1/persistentvolumes/{pv['metadata']['name']}"
            api.delete(path)
            try:
                api.merge_patch(path, {"metadata": {"finalizers": None}})
            except ApiError:
                pass
            gone.append(f"pv {pv['metadata']['name']}")
        if run and not any(g == f"namespace kdt-run-{run}" for g in gone):
            if api.delete(f"/api/v1/namespaces/kdt-run-{run}") is not None:
                gone.append(f"namespace kdt-run-{run}")
    return gone


class NodeAgent:
    """Runs the pods bound to its nodes. `sync()` once per tick; `kdt.live.liverun` drives it. The processes are
    the offline run's (kdt.run.supervisor.Supervisor's public process API, composed: the agent says what an exit
    means, as the kubelet does; the restart rule is kdt.operators.framework.controller.restarts_in_place)."""

    def __init__(self, api: Api, run_id: str, nodes: int, capacity: dict, opts, timeline, twins: dict | None = None,
                 fallback_doc=None, labels: list[dict] | None = None, taints: list[list[dict]] | None = None):
        self.processes = Supervisor([], [], {}, opts, timeline, exited=self._on_exit, crash_loops=False)
        self.opts, self.tl = opts, timeline
        self.run_id = self.processes.run_id        # the marker of every process of this run
        self.api = api
        self.label = run_id
        self.nodes = {f"kdt-{run_id}-{i}": Node(f"kdt-{run_id}-{i}") for i in range(nodes)}
        self.capacity = capacity
        self.labels = labels or []             # node i's own labels (what the pods select), by index
        self.taints = taints or []             # node i's own taints (what its pod tolerates by key), by index
        self.twins = twins or {}               # logical name -> the offline LocalPod (where findings point)
        self.fallback_doc = fallback_doc
        self.runs: dict[str, LivePodRun] = {}  # pod uid -> its run
        self.net = netshim.NETS[os.getpid() % len(netshim.NETS)]
        self.next_ip = 0
        self.names_key: tuple = ()
        self.problems: list = []               # (finding, why): what ends the run
        self.objects_ns: dict[str, dict] = {}

    # ------------------------------------------------------------- nodes
    def register(self) -> None:
        cap = {"pods": "1", **self.capacity}
        for i, n in enumerate(self.nodes.values()):
            own = self.labels[i] if i < len(self.labels) else {}
            taints = self.taints[i] if i < len(self.taints) else []
            body = {"apiVersion": "v1", "kind": "Node", "spec": {"taints": taints} if taints else {},
                    "metadata": {"name": n.name, "labels": {**own, NODE_LABEL: self.label, "kubernetes.io/hostname": n.name,
                                                            "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
                                 "annotations": {OWNER_ANNOTATION: str(os.getpid())}},
                    "status": {"capacity": cap, "allocatable": cap, "conditions": self._conditions(True),
                               "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                             {"type": "Hostname", "address": n.name}],
                               "nodeInfo": {"kubeletVersion": "kdt-node-agent", "operatingSystem": "linux",
                                            "architecture": "amd64", "containerRuntimeVersion": "kdt://processes",
                                            "kernelVersion": os.uname().release, "osImage": "local processes",
                                            "machineID": "", "systemUUID": "", "bootID": "", "kubeProxyVersion": ""}}}
            self.api.create("/api/v1/nodes", body)
            # Node creation keeps status (nodeStrategy); set it again in case an admission plugin reset it
            self.api.merge_patch(f"/api/v1/nodes/{n.name}/status", {"status": body["status"]})
        self.heartbeat(force=True)
        shown = sorted({f"{k}={v}" for d in self.labels for k, v in d.items()})
        self.tl.add("note", "", f"node agent: {len(self.nodes)} node(s) registered ({', '.join(self.nodes)}), "
                                f"each with {', '.join(f'{k}={v}' for k, v in cap.items())}"
                                + (f"; labelled {', '.join(shown)}" if shown else ""))

    @staticmethod
    def _conditions(ready: bool) -> list[dict]:
        t = now_iso()
        ok = [{"type": k, "status": "False", "reason": f"KubeletHas{r}", "lastHeartbeatTime": t,
               "lastTransitionTime": t} for k, r in (("MemoryPressure", "SufficientMemory"),
                                                    ("DiskPressure", "NoDiskPressure"),
                                                    ("PIDPressure", "SufficientPID"))]
        ready_c = ({"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kdt node agent is ready"}
                   if ready else {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                  "message": "Kubelet stopped posting node status."})
        return ok + [{**ready_c, "lastHeartbeatTime": t, "lastTransitionTime": t}]

    def heartbeat(self, force: bool = False) -> None:
        now = time.monotonic()
        for n in self.nodes.values():
            if n.lost or (not force and now - n.renewed < RENEW_EVERY):
                continue
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": n.name, "namespace": LEASE_NS},
                     "spec": {"holderIdentity": n.name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now_micro()}}
            try:
                self.api.merge_patch(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/{n.name}",
                                     {"spec": lease["spec"]})
            except ApiError as e:
                if e.code != 404:
                    raise
                self.api.create(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases", lease)
            n.renewed = now

    def lose(self, node: str) -> None:
        """A node is gone: its Ready condition Unknown and the unreachable taints (the node lifecycle controller's
        reading of a node that stopped posting status), every process of its pods killed, and its pods
        deleted at once (what the controller's eviction does after the pods' toleration)."""
        n = self.nodes[node]
        n.lost = True
        self.api.merge_patch(f"/api/v1/nodes/{node}/status", {"status": {"conditions": self._conditions(False)}})
        self.api.merge_patch(f"/api/v1/nodes/{node}", {"spec": {"taints": [{**t, "timeAdded": now_iso()} for t in UNREACHABLE]}})
        for r in list(self.runs.values()):
            if r.node == node:
                if r.procs:
                    self.processes.delete_pod(r, 0)
                self.api.delete(pod_path(r.pod.namespace, r.pod.name), grace=0, uid=r.uid)
                r.finalized = True

    def remove_nodes(self) -> None:
        for pv in self.api.items("/api/v1/persistentvolumes", labelSelector=f"{NODE_LABEL}={self.label}"):
            # the run's claims go with its namespace; the PV's protection finalizer would hold it until then
            path = f"/api/v1/persistentvolumes/{pv['metadata']['name']}"
            self.api.delete(path)
            try:
                self.api.merge_patch(path, {"metadata": {"finalizers": None}})
            except ApiError as e:
                if e.code != 404:
                    raise
        for n in self.nodes:
            self.api.delete(f"/api/v1/nodes/{n}")
            self.api.delete(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/{n}")

    # ------------------------------------------------------------- pods
    def _objects(self, ns: str) -> dict:
        """The namespace's ConfigMaps and Secrets as kdt.operators.framework.pods reads them ((kind, name) -> object)."""
        out = {}
        for kind, path in (("ConfigMap", "configmaps"), ("Secret", "secrets")):
            for o in self.api.items(f"/api/v1/namespaces/{ns}/{path}"):
                out[(kind, o["metadata"]["name"])] = o
        return out

    def _adopt(self, obj: dict) -> LivePodRun:
        meta = obj["metadata"]
        logical = logical_name(obj)
        base = replica_set_base(obj)
        if base:        # a Deployment's pod: `<deployment>-<k>` as offline, k the lowest not held by a live pod
            held = {x.logical for x in self.runs.values() if not x.finalized}
            logical = next(f"{base}-{k}" for k in range(len(self.runs) + 1) if f"{base}-{k}" not in held)
        twin = self.twins.get(logical)
        src = twin.source if twin is not None else self.fallback_doc
        lp = LocalPod(meta["name"], obj, twin.owner if twin else None, twin.owner_name if twin else "",
                      twin.group if twin else "", twin.index if twin else 0, src,
                      claim_templates=set(twin.claim_templates) if twin else set())
        lp.uid, lp.node, lp.label = meta.get("uid", ""), obj["spec"].get("nodeName", ""), logical
        pod_containers(lp, (), src)
        if twin is not None:       # findings about a container point where the target wrote it
            by_name = {c.name: c for c in [*twin.init_containers, *twin.containers]}
            for c in [*lp.init_containers, *lp.containers]:
                t = by_name.get(c.name)
                if t is not None:
                    c.doc, c.path = t.doc, t.path
        lp.ip = netshim.pod_ip(self.next_ip, self.net)
        self.next_ip += 1
        r = LivePodRun(lp, uid=lp.uid, node=lp.node, logical=logical, api_ip=api_address(lp.ip), created=now_iso())
        if any(x.logical == logical for x in self.runs.values()):
            self.tl.add("recreate", logical, f"the controller created the pod again ({meta['name']})")
        self.runs[r.uid] = r
        self.processes.pods = list(self.twins.values()) or [lp]   # OMP_NUM_THREADS: the machine's cores over the run's pods
        self.tl.add("scheduled", logical, f"pod {meta['name']} bound to node {lp.node}; address {r.api_ip} (here "
                                          f"{lp.ip})", ip=lp.ip, pod_ip=r.api_ip)
        return r

    def _start(self, r: LivePodRun) -> None:
        self.objects_ns[r.pod.namespace] = self._objects(r.pod.namespace)
        r.incarnation = 1
        r.dir = self.opts.run_dir / "pods" / f"{r.pod.name}.{r.uid[:8]}"
        r.dir.mkdir(parents=True, exist_ok=True)
        for c in [*r.pod.init_containers, *r.pod.containers]:
            r.state[c.name] = {"waiting": {"reason": "PodInitializing" if not c.init else "ContainerCreating"}}
            r.restarts[c.name] = 0
        self._advance(r)

    def _advance(self, r: LivePodRun) -> None:
        """Start the next init container, or the main containers once every init container succeeded."""
        if r.init_next < len(r.pod.init_containers):
            self._start_container(r, r.pod.init_containers[r.init_next])
            return
        for c in r.pod.containers:
            self._start_container(r, c)

    def _start_container(self, r: LivePodRun, c: Container) -> None:
        self.processes.objects = self.objects_ns.get(r.pod.namespace, {})
        try:
            argv, _env, _ = self.processes.command(r.pod, c, r.dir)
        except EnvError as exc:
            self._cannot_start(r, c, "CreateContainerConfigError", exc.message, c.path + exc.path)
            return
        prog = argv[0] if argv else ""
        if not prog or (os.sep not in prog and shutil.which(prog, path=self._path(r, c)) is None) \
                or (os.sep in prog and not os.access(prog, os.X_OK)):
            self._cannot_start(r, c, "ErrImagePull",
                               f"the program {prog or '(none)'} of image {c.spec.get('image')} is not on this machine "
                               "(a local run starts the image's program from this machine's PATH)",
                               c.path + (("command", 0) if c.spec.get("command") else ("image",)))
            return
        self.processes.start_container(r, c)
        r.started_at[c.name] = now_iso()
        r.state[c.name] = {"running": {"startedAt": r.started_at[c.name]}}
        r.phase = "Running" if not c.init else r.phase
        r.dirty = True

    def _path(self, r: LivePodRun, c: Container) -> str:
        return os.pathsep.join([str(self.opts.run_dir / "bin"), str(Path(os.sys.executable).parent),
                                os.environ.get("PATH", "/usr/bin:/bin")])

    def _cannot_start(self, r: LivePodRun, c: Container, reason: str, message: str, path: tuple) -> None:
        r.state[c.name] = {"waiting": {"reason": reason, "message": message}}
        r.problem = reason
        r.dirty = True
        self.problems.append((c.doc.finding("run", f"pod {r.logical} container {c.name}: {reason}: {message}", path),
                              reason))
        self.tl.add("note", r.logical, f"container {c.name}: {reason}: {message}")

    def _on_exit(self, r: LivePodRun, proc: Proc) -> None:
        c, code = proc.container, proc.code
        self.processes.signal_marked(proc.marker, signal.SIGKILL)   # the container's PID 1 is gone: so is the rest of it
        r.procs.pop(c.name, None)
        term = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                               "startedAt": r.started_at.get(c.name), "finishedAt": now_iso(),
                               "containerID": f"kdt://{proc.pid}"}}
        self.tl.add("exit", r.logical, f"{'init container' if c.init else 'container'} {c.name} exited with code {code}",
                    code=code)
        if code == 0:
            r.exited_zero.add(c.name)
        policy = r.pod.restart_policy
        restart = C.restarts_in_place(policy, code, init=c.init)
        r.dirty = True
        if restart:
            r.restarts[c.name] = r.restarts.get(c.name, 0) + 1
            r.last[c.name] = term
            delay = min(MAX_BACKOFF, self.opts.restart_delay * 2 ** (r.restarts[c.name] - 1))
            r.state[c.name] = {"waiting": {"reason": "CrashLoopBackOff",
                                           "message": f"back-off {delay:g}s restarting failed container={c.name}"}}
            r.pending_restart[c.name] = time.time() + delay
            self.tl.add("restart", r.logical, f"container {c.name} restarts in place (restartPolicy {policy})")
            return
        r.state[c.name] = term
        if c.init:
            if code == 0:
                r.init_next += 1
                self._advance(r)
            else:
                self._end(r, "Failed")
            return
        r.exited[c.name] = code
        if len(r.exited) == len(r.pod.containers):
            self._end(r, "Succeeded" if all(v == 0 for v in r.exited.values()) else "Failed")

    def _end(self, r: LivePodRun, phase: str) -> None:
        r.phase, r.ended, r.dirty = phase, True, True
        self.tl.add("pod-" + phase.lower(), r.logical, f"pod {phase}")

    # ------------------------------------------------------------- status
    def _status(self, r: LivePodRun) -> dict:
        def cs(c: Container) -> dict:
            st = r.state.get(c.name) or {"waiting": {"reason": "ContainerCreating"}}
            out = {"name": c.name, "image": str(c.spec.get("image", "")), "imageID": "",
                   "ready": "running" in st and not c.init, "started": "running" in st,
                   "restartCount": r.restarts.get(c.name, 0), "state": st, "lastState": r.last.get(c.name) or {}}
            if c.init:
                out["ready"] = "terminated" in st and st["terminated"]["exitCode"] == 0
            return out
        inits_done = r.init_next >= len(r.pod.init_containers)
        ready = inits_done and not r.ended and all("running" in (r.state.get(c.name) or {}) for c in r.pod.containers)
        t = now_iso()

        def cond(kind: str, ok: bool, reason: str = "") -> dict:
            d = {"type": kind, "status": "True" if ok else "False", "lastProbeTime": None, "lastTransitionTime": t}
            if not ok and reason:
                d["reason"] = reason
            return d
        phase = r.phase if (r.ended or inits_done) else "Pending"
        status = {"phase": phase, "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
                  "podIP": r.api_ip, "podIPs": [{"ip": r.api_ip}], "startTime": r.created,
                  "conditions": [cond("PodReadyToStartContainers", True), cond("Initialized", inits_done, "ContainersNotInitialized"),
                                 cond("Ready", ready, "ContainersNotReady"), cond("ContainersReady", ready, "ContainersNotReady"),
                                 cond("PodScheduled", True)],
                  "containerStatuses": [cs(c) for c in r.pod.containers]}
        if r.pod.init_containers:
            status["initContainerStatuses"] = [cs(c) for c in r.pod.init_containers]
        return status

    def _report(self, r: LivePodRun) -> None:
        r.dirty = False
        try:
            self.api.merge_patch(pod_path(r.pod.namespace, r.pod.name, "status"), {"status": self._status(r)})
        except ApiError as e:
            if e.code not in (404, 409):
                raise

    # ------------------------------------------------------------- one tick
    def sync(self) -> list[dict]:
        """Adopt the pods bound to the nodes, end the deleted ones, restart what is due, report; the pods seen."""
        self.processes.reap()
        pods = [p for p in self.api.items("/api/v1/pods") if (p.get("spec") or {}).get("nodeName") in self.nodes]
        seen = set()
        for obj in pods:
            uid = obj["metadata"]["uid"]
            seen.add(uid)
            r = self.runs.get(uid)
            if r is None:
                if self.nodes[obj["spec"]["nodeName"]].lost or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                r = self._adopt(obj)
                self._start(r)
            r.pod.obj["metadata"] = obj["metadata"]
            if obj["metadata"].get("deletionTimestamp") and not r.finalized:
                self._terminate(r, obj)
        for uid, r in list(self.runs.items()):
            if uid not in seen and not r.finalized:       # deleted with no grace (force): gone at once
                if r.procs:
                    self.processes.delete_pod(r, 0)
                r.finalized = True
        now = time.time()
        for r in self.runs.values():
            if r.finalized or r.deleting:
                continue
            for proc in list(r.procs.values()):
                self.processes.scan(r, proc)
            for cname, when in list(r.pending_restart.items()):
                if now >= when:
                    del r.pending_restart[cname]
                    c = next(x for x in [*r.pod.init_containers, *r.pod.containers] if x.name == cname)
                    self._start_container(r, c)
        self.processes.reap()
        for r in self.runs.values():
            if r.dirty and not r.finalized:
                self._report(r)
        self._names(pods)
        self._provision()
        self.heartbeat()
        return pods

    def _provision(self) -> None:
        """A PersistentVolume for every claim left Pending (no provisioner here), bound to it ahead (claimRef),
        so the PV controller binds them and the scheduler's VolumeBinding admits the pod. The data lives where
        kdt.operators.framework.pods.volume_folders puts the claim's folder; the PV's hostPath names it."""
        now = time.monotonic()
        if now - getattr(self, "_provisioned_at", 0.0) < 0.5:
            return
        self._provisioned_at = now
        for pvc in self.api.items("/api/v1/persistentvolumeclaims"):
            meta, spec = pvc["metadata"], pvc.get("spec") or {}
            if spec.get("volumeName") or (pvc.get("status") or {}).get("phase") != "Pending":
                continue
            name = f"kdt-{self.label}-{meta['namespace']}-{meta['name']}"[:253]
            size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
            pv = {"apiVersion": "v1", "kind": "PersistentVolume",
                  "metadata": {"name": name, "labels": {NODE_LABEL: self.label}},
                  "spec": {"capacity": {"storage": size}, "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                           "persistentVolumeReclaimPolicy": "Delete",
                           "storageClassName": spec.get("storageClassName") or "",
                           "hostPath": {"path": str(self.opts.run_dir / "volumes" / f"pvc-{meta['name']}")},
                           "claimRef": {"namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]}}}
            if spec.get("volumeMode"):
                pv["spec"]["volumeMode"] = spec["volumeMode"]
            try:
                self.api.create("/api/v1/persistentvolumes", pv)
                self.tl.add("note", "", f"node agent: PersistentVolume {name} for claim {meta['name']} ({size})")
            except ApiError as e:
                if e.code != 409:
                    raise

    def _terminate(self, r: LivePodRun, obj: dict) -> None:
        """The kubelet's pod termination: SIGTERM, the grace period (the run's cap), SIGKILL, the final delete."""
        now = time.time()
        if not r.term_deadline:
            grace = obj["metadata"].get("deletionGracePeriodSeconds")
            grace = self.opts.grace if grace is None else min(float(grace), self.opts.grace)
            r.term_deadline = now + grace
            r.pending_restart = {}
            self.tl.add("delete", r.logical, f"pod {r.pod.name} is deleted: SIGTERM, then SIGKILL after {grace:g} s")
            self.processes.signal_marked(f"{self.run_id}/{r.pod.name}/{r.incarnation}/", signal.SIGTERM)
        prefix = f"{self.run_id}/{r.pod.name}/{r.incarnation}/"
        self.processes.reap()
        if now < r.term_deadline and any(p.code is None for p in r.procs.values()):
            return
        r.deleting = True
        self.processes.delete_pod(r, 0)
        for c in r.pod.containers:
            if "terminated" not in (r.state.get(c.name) or {}):
                r.state[c.name] = {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": r.started_at.get(c.name),
                                                  "finishedAt": now_iso()}}
        if not r.ended:
            r.phase = "Failed"
        self._report(r)
        self.api.delete(pod_path(r.pod.namespace, r.pod.name), grace=0, uid=r.uid)
        r.finalized = True
        del prefix

    # ------------------------------------------------------------- names
    def _names(self, pods: list[dict]) -> None:
        """The shim's table: pods' names, and Services' names to a ready endpoint; rewritten when it changes."""
        names: dict[str, list[str]] = {}
        for r in self.runs.values():
            if r.finalized or r.deleting:
                continue
            names.setdefault(r.pod.ip, []).extend(r.pod.dns_names())
        local = {r.api_ip: r.pod.ip for r in self.runs.values() if not r.finalized}
        services = self.api.items("/api/v1/services")
        slices = self.api.items("/apis/discovery.k8s.io/v1/endpointslices")
        for s in services:
            meta = s["metadata"]
            ns, name = meta.get("namespace", "default"), meta["name"]
            ips = [a for sl in slices if (sl["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name
                   and sl["metadata"].get("namespace") == ns
                   for e in sl.get("endpoints") or [] if (e.get("conditions") or {}).get("ready", True)
                   or (s.get("spec") or {}).get("publishNotReadyAddresses")
                   for a in e.get("addresses") or [] if a in local]
            if ips:
                names.setdefault(local[sorted(ips)[0]], []).extend(
                    [name, f"{name}.{ns}", f"{name}.{ns}.svc", f"{name}.{ns}.svc.{CLUSTER_DOMAIN}"])
        key = tuple(sorted((ip, tuple(ns)) for ip, ns in names.items()))
        if key != self.names_key:
            self.names_key = key
            netshim.write_hosts(self.processes.hosts, names)

    def start(self) -> None:
        """The run's folder and shim, as offline (kdt.run.supervisor.prepare with no pods of its own). A crash
        loop is the kubelet's to live with (it backs off forever): the run reads it from the container's status,
        not from its output (crash_loops=False)."""
        self.processes.prepare()
        self.runs = {}

    @property
    def max_step(self) -> int:
        """The highest training step a process of the run logged."""
        return self.processes.max_step

    def cleanup(self) -> int:
        """Kill whatever of this run is still alive (nothing restarts any more); the number of processes that were."""
        for r in self.runs.values():
            r.deleting, r.start_at, r.pending_restart = True, 0.0, {}
        return self.processes.cleanup()

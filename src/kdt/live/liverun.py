"""`kdt run --live`: a target run by the real controllers on the live control plane, its pods as processes.

    kdt run overlays/ddp --live --nproc-per-node 1 --max-steps 6

The target's documents are applied (server-side, one document at a time, so a refusal is located to its
document) to a control plane of the target's releases (kdt.live.controlplane: the API server, the Job, garbage
collector, endpoint-slice and node lifecycle controllers, kube-scheduler, the Training Operator, Trainer and
JobSet). The node agent (kdt.live.node) registers a node per pod of the target (and one spare per `--lose`),
and runs what the scheduler binds there. Nothing of kdt's own model of the operators decides anything:

- the verdict and its reason are the job's own status conditions (PyTorchJob/TFJob `Succeeded`/`Failed`,
  TrainJob `Complete`/`Failed`, JobSet `Completed`/`Failed`); a StatefulSet's pods run until each has exited
  0 once (a StatefulSet has no end: the kubelet would start them again);
- faults: `--kill POD@...` signals the container's processes (the kubelet sees the exit and reports it);
  `--lose POD@...` is the pod's node lost (kdt.live.node.NodeAgent.lose);
- a pod the scheduler cannot place ends the run with the scheduler's own message, located to the field;
- the timeline holds the API server's events beside the processes' own lines.

On a fault of its own (Ctrl-C, a crash) every process is stopped: the control plane's by the kernel
(PR_SET_PDEATHSIG), the pods' by the agent's cleanup and the same death signal.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field

from .. import findings as F
from .. import kinds as K
from ..quantity import parse_quantity
from ..operators.framework.controller import Verdict
from . import admission as A
from .api import Api, ApiError
from .node import NodeAgent, selected_labels, tolerated_taints

# scheduler messages that only say every node is taken for now (one pod per node; a replacement waits for
# the pod it replaces to be gone) or lost: the pod will be placed, not a verdict
_TRANSIENT = re.compile(r"Too many pods|untolerated taint|node\(s\) were unschedulable|preemption")
RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "ephemeral-storage")


def _ends(d) -> tuple[str, str] | None:
    """The status conditions that end a job of the document's kind (kdt.operators.framework.kind.Kind.ends)."""
    k = K.of(d)
    return k.ends if k is not None else None


def _namespaced(d) -> bool:
    k = K.of(d)
    return k.namespaced if k is not None else True


@dataclass
class Options:
    nodes_extra: int = 0                     # spare nodes (one per --lose)
    node_size: dict = field(default_factory=dict)
    node_labels: dict | None = None          # --node-labels: every node's labels (None: what each pod selects)
    unschedulable_s: float = 3.0


def _requests(pod) -> dict:
    """What a pod asks of a node (kube-scheduler's sum of containers, or the largest init container)."""
    def of(cs):
        out: dict = {}
        for c in cs:
            res = (c.spec.get("resources") or {})
            req = {**(res.get("limits") or {}), **(res.get("requests") or {})}
            for k in RESOURCES:
                if k in req:
                    try:
                        out[k] = out.get(k, 0.0) + float(parse_quantity(str(req[k]))[0])
                    except ValueError:
                        pass
        return out
    main, init = of(pod.containers), {}
    for c in pod.init_containers:
        for k, v in of([c]).items():
            init[k] = max(init.get(k, 0.0), v)
    return {k: max(main.get(k, 0.0), init.get(k, 0.0)) for k in set(main) | set(init)}


def node_capacity(pods, size: dict) -> dict:
    """Each node's capacity: `--node-size` where given, else what the largest pod asks (at least a core
    and 1 GiB), so every pod of the target fits on a node of its own."""
    need: dict = {}
    for p in pods:
        for k, v in _requests(p).items():
            need[k] = max(need.get(k, 0.0), v)
    cap = {"cpu": str(max(1, int(-(-need.get("cpu", 1.0) // 1)))),
           "memory": str(max(2 ** 30, int(need.get("memory", 0)))),
           "ephemeral-storage": str(max(100 * 2 ** 30, int(need.get("ephemeral-storage", 0))))}
    if need.get("nvidia.com/gpu"):
        cap["nvidia.com/gpu"] = str(int(need["nvidia.com/gpu"]))
    cap.update(size)
    return cap


class LiveRun:
    def __init__(self, client, docs: list, twins: list, opts, tl, faults: list, lopts: Options, namespace: str,
                 shared: bool = False):
        """shared: the control plane outlives the run (`kdt cluster up`): the run gets a namespace of its own,
        and leaves the cluster as it found it but for cluster-scoped objects of the target."""
        self.c = client
        self.shared = shared
        self.api = Api.from_kubeconfig(client.kubeconfig)
        self.docs = [d for d in docs if isinstance(d.data, dict)]
        self.opts, self.tl, self.faults, self.lopts, self.ns = opts, tl, faults, lopts, namespace
        self.run_id = uuid.uuid4().hex[:6]
        if shared:
            self.ns = f"kdt-run-{self.run_id}"
        first = next(iter(self.docs), None)
        lost = [f.pod for f in faults if f.action == "lose"]
        by_name = {p.name: p for p in twins}
        # node i carries what pod i selects (a spare, what the pod it stands in for selects), unless
        # --node-labels says what the cluster's nodes carry
        specs = [p.spec for p in twins] + [by_name[n].spec if n in by_name else {} for n in lost]
        labels = [dict(lopts.node_labels) if lopts.node_labels is not None else selected_labels(sp) for sp in specs]
        self.agent = NodeAgent(self.api, self.run_id, len(twins) + lopts.nodes_extra,
                               node_capacity(twins, lopts.node_size), opts, tl, by_name, first, labels,
                               [tolerated_taints(sp) for sp in specs])
        self.events_seen: set = set()
        self.unschedulable: dict = {}
        self.applied: list = []

    # ------------------------------------------------------------- apply
    def apply(self) -> list[F.Finding]:
        """Every document server-side applied, the ones others refer to first; refusals located."""
        order = sorted(self.docs, key=lambda d: A.tier(d.data, _namespaced(d)))
        out = []
        for d in order:
            args = ["apply", "--server-side", "--force-conflicts", "--field-manager=kdt-run", "-f", "-"]
            if not (d.data.get("metadata") or {}).get("namespace"):
                args += ["-n", self.ns]
            p = self.c.kubectl(*args, input=json.dumps(d.data), check=False)
            if p.returncode != 0:
                msg = " ".join(p.stderr.split())
                msg = re.sub(r"^Error from server(?: \(\w+\))?: (error when applying patch:.*?)?", "", msg)
                out.append(d.finding("live-admission", f"the API server refuses it: {msg[:600]}"))
            else:
                self.applied.append(d)
        return out

    # ------------------------------------------------------------- verdict
    def _owners(self) -> list:
        return [d for d in self.applied if _ends(d) is not None]

    def _object(self, d) -> dict | None:
        group, _, version = str(d.data.get("apiVersion")).rpartition("/")
        ns = (d.data.get("metadata") or {}).get("namespace") or self.ns
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            return self.api.get(f"{base}/namespaces/{ns}/{d.kind.lower()}s/{d.name}")
        except ApiError as e:
            if e.code == 404:
                return None
            raise

    def _restarts(self, d) -> str:
        """A JobSet's (a TrainJob's JobSet's) status.restarts, as the offline verdict says it."""
        if K.of(d) not in (K.TRAINJOB, K.JOBSET):
            return ""
        ns = (d.data.get("metadata") or {}).get("namespace") or self.ns
        try:
            js = self.api.get(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets/{d.name}")
        except ApiError:
            return ""
        return f" ({int((js.get('status') or {}).get('restarts') or 0)} restart(s))"

    def verdict(self) -> Verdict | None:
        owners = self._owners()
        results = []
        for d in owners:
            obj = self._object(d) or {}
            ok_type, fail_type = _ends(d)
            conds = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []
                     if c.get("status") == "True"}
            if fail_type in conds:
                c = conds[fail_type]
                return Verdict(False, str(c.get("reason") or fail_type),
                               f"{d.kind} {d.name}: {c.get('message', '')}{self._restarts(d)}")
            if ok_type in conds:
                c = conds[ok_type]
                results.append(Verdict(True, str(c.get("reason") or ok_type),
                                       f"{d.kind} {d.name}: {c.get('message', '')}{self._restarts(d)}"))
            else:
                results.append(None)
        sts = [d for d in self.applied if K.STATEFULSET.matches(d)]
        for d in sts:
            runs = [r for r in self.agent.runs.values()
                    if ((r.pod.obj.get("metadata") or {}).get("labels") or {}).get("statefulset.kubernetes.io/pod-name")
                    and r.pod.name.startswith(d.name + "-")]
            replicas = int((d.data.get("spec") or {}).get("replicas", 1))
            done = {r.pod.name for r in runs if r.exited_zero >= {c.name for c in r.pod.containers}}
            results.append(Verdict(True, "Finished", f"every pod of StatefulSet {d.name} ran its containers to exit 0 "
                                                     "(a StatefulSet would start them again)")
                           if len(done) >= replicas else None)
        if results and all(results):
            return results[0]
        return None

    # ------------------------------------------------------------- what happens
    def _events(self) -> None:
        for e in self.api.items(f"/api/v1/namespaces/{self.ns}/events"):
            uid = e["metadata"]["uid"]
            if uid in self.events_seen:
                continue
            self.events_seen.add(uid)
            obj = e.get("involvedObject") or {}
            self.tl.add("event", "", f"{obj.get('kind')} {obj.get('name')}: {e.get('reason')}: {e.get('message', '')}"[:300],
                        reason=e.get("reason"), object=f"{obj.get('kind')}/{obj.get('name')}")

    def _placement(self, pods: list[dict]) -> list[F.Finding]:
        """Pods the scheduler cannot place, for a reason no wait will change: a finding each."""
        out = []
        now = time.monotonic()
        for p in self.api.items(f"/api/v1/namespaces/{self.ns}/pods"):
            if (p.get("spec") or {}).get("nodeName"):
                continue
            cond = next((c for c in (p.get("status") or {}).get("conditions") or []
                         if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"), None)
            if cond is None or _TRANSIENT.search(str(cond.get("message"))) and not re.search(
                    r"Insufficient|didn't match|affinity|node selector", str(cond.get("message"))):
                continue
            uid = p["metadata"]["uid"]
            first = self.unschedulable.setdefault(uid, now)
            if now - first >= self.lopts.unschedulable_s:
                out.append(self._locate_unschedulable(p, str(cond.get("message"))))
        return out

    def _locate_unschedulable(self, pod: dict, message: str) -> F.Finding:
        from .node import logical_name
        twin = self.agent.twins.get(logical_name(pod))
        doc = twin.source if twin is not None else self.agent.fallback_doc
        path: tuple = ()
        if twin is not None and twin.containers:
            c = twin.containers[0]
            base = c.path[:-2]                 # the pod spec holding `containers`
            m = re.search(r"Insufficient ([\w./-]*[\w/-])", message)      # "Insufficient cpu." -> cpu
            if m:
                for x in twin.containers:
                    res = (x.spec.get("resources") or {})
                    for section in ("requests", "limits"):
                        if m.group(1) in (res.get(section) or {}):
                            c, path = x, x.path + ("resources", section, m.group(1))
                            break
                    if path:
                        break
                doc = c.doc
            elif twin.spec.get("nodeSelector") is not None:
                path = base + ("nodeSelector",)
            elif twin.spec.get("affinity") is not None:
                path = base + ("affinity",)
            else:
                path = base
            doc = c.doc
        return doc.finding("live-schedule", f"pod {logical_name(pod)} cannot be placed: the scheduler says "
                                            f"{message.strip()}", path)

    def _fault(self, fault) -> None:
        fault.done = True
        runs = [r for r in self.agent.runs.values() if r.logical == fault.pod and not r.finalized]
        r = next((x for x in reversed(runs) if x.procs), None)
        if r is None:
            self.tl.add("note", fault.pod, f"fault {fault.spec}: the pod is not running; nothing to do")
            return
        if fault.action == "lose":
            self.tl.add("lose", r.logical, f"node {r.node} is lost: the pod's processes killed, the node NotReady "
                                           "and tainted unreachable, its pods deleted")
            self.agent.lose(r.node)
            return
        import os
        import signal
        if fault.rank is not None:
            pid = r.rank_pids.get(fault.rank)
            if pid is None:
                self.tl.add("note", r.logical, f"fault {fault.spec}: no live worker of rank {fault.rank} in this pod")
                return
            self.tl.add("kill", r.logical, f"{signal.Signals(fault.sig).name} to the worker of rank {fault.rank} (pid {pid})")
            os.kill(pid, fault.sig)
            return
        proc = next(iter(r.procs.values()))
        self.tl.add("kill", r.logical, f"{signal.Signals(fault.sig).name} to container {proc.container.name}'s main "
                                       f"process (pid {proc.pid})")
        os.kill(proc.pid, fault.sig)

    # ------------------------------------------------------------- the run
    def run(self, timeout: float) -> tuple[Verdict | None, list[F.Finding]]:
        from ..run.supervisor import set_subreaper, start_guardian
        set_subreaper()
        self.guardian = start_guardian(self.agent.run_id)
        self.agent.start()
        if self.shared:
            from .node import sweep_orphans
            for what in sweep_orphans(self.api):
                self.tl.add("note", "", f"removed what a run that died left: {what}")
            self.c.kubectl("create", "namespace", self.ns)
        self.agent.register()
        refused = self.apply()
        if refused:
            return None, refused
        deadline = time.time() + timeout
        last_slow = 0.0
        verdict = None
        while True:
            self.c.check()
            pods = self.agent.sync()
            for fault in self.faults:
                if fault.due(self.tl.now(), self.agent.max_step):
                    self._fault(fault)
            if self.agent.problems:
                return None, [f for f, _ in self.agent.problems]
            now = time.time()
            if now - last_slow >= 0.5:
                last_slow = now
                self._events()
                stuck = self._placement(pods)
                if stuck:
                    return None, stuck
                verdict = self.verdict()
                if verdict is not None:
                    break
            if now > deadline:
                return Verdict(False, "Timeout", f"no verdict after {timeout:.0f} s (--timeout)"), []
            time.sleep(0.1)
        self._events()
        return verdict, []

    def cleanup(self) -> int:
        n = self.agent.cleanup()
        for d in reversed(self.applied):
            if self.shared and not _namespaced(d):
                continue
            self.c.kubectl("delete", "--ignore-not-found", "--wait=false", *(["-n", self.ns]
                           if not (d.data.get("metadata") or {}).get("namespace") else []),
                           "-f", "-", input=json.dumps(d.data), check=False)
        if self.shared:
            self.c.kubectl("delete", "namespace", self.ns, "--wait=false", "--ignore-not-found", check=False)
        try:
            self.agent.remove_nodes()
        except (ApiError, OSError):
            pass
        self.api.close()
        return n

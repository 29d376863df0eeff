"""The real schedulers on a live control plane: Kueue's manager, scheduler-plugins' coscheduling and KWOK's nodes.

`start(cluster, cluster_file, shape)` adds to a running `kdt.live.controlplane.Cluster`, as a user installs them:

- Kueue's manager (kdt.versions.KUEUE, built from `go/kueue-<version>`), out of cluster with a kubeconfig, its
  webhook server on 127.0.0.1 with the run's certificate (kdt.live.pki) and its webhook configurations
  (`config/components/webhook` at the tag, rendered with kustomize, as `config/default` installs them) pointed
  there. Its Configuration is upstream's `config/components/manager/controller_manager_config.yaml` with the
  integrations a user turns on for this repository's jobs: `batch/job` (JobSet's Jobs), `jobset.x-k8s.io/jobset`,
  `kubeflow.org/pytorchjob`, `trainer.kubeflow.org/trainjob`, `pod` and `statefulset` (site/content/en/docs/
  tasks/run/{pytorchjobs,trainjobs,plain_pods,statefulset}.md); jobs outside kube-system and kueue-system are
  managed (managedJobsNamespaceSelector, as upstream's commented default). Its on-demand visibility API server
  (feature gate VisibilityOnDemand) is off: it is an aggregated API server this control plane does not proxy.
- scheduler-plugins' scheduler (kdt.versions.SCHEDULER_PLUGINS, `cmd/scheduler`) as a second scheduler, as its
  chart `manifests/install/charts/as-a-second-scheduler` installs it: one profile `scheduler-plugins-scheduler`
  with Coscheduling (permitWaitingTimeSeconds 10, the chart's pluginConfig), PrioritySort off; the PodGroup CRD
  is installed with the operators' CRDs (kdt.live.install). The Training Operator is started with
  `--gang-scheduler-name=scheduler-plugins-scheduler`, so a PyTorchJob's PodGroup holds its pods there.
- the KWOK controller (kdt.versions.KWOK, `cmd/kwok`) managing the nodes annotated `kwok.x-k8s.io/node: fake`,
  with KWOK's own stages (kustomize/stage at the tag): node-initialize and node-heartbeat-with-lease (the
  node Ready, its Lease renewed), pod-ready (a bound pod Running and Ready, its containers started, as a kubelet
  reports them) and pod-delete; pod-complete is left out (it ends every pod a Job owns at once: a training pod
  here runs until it is deleted).

Nodes (kdt.live.schedulers.node_docs): `shape.nodes` nodes of `shape.gpus` `nvidia.com/gpu`, their CPU and
memory the ClusterQueue's nominal quota per node (deploy/cluster/kueue/clusterqueue.yaml: 184 CPUs, 1440Gi),
the ResourceFlavor's node labels and taints, and the Topology's levels: block (layer 2) and rack (layer 3)
labels in blocks of `shape.block` nodes and racks of `shape.rack`, the host its name.
"""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import versions
from ..errors import UsageError
from ..quantity import parse_quantity
from . import build, install
from . import releases as R

KUEUE_NAMESPACE = "kueue-system"      # config/default/kustomization.yaml namespace
SECOND_SCHEDULER = "scheduler-plugins-scheduler"   # manifests/install/charts/as-a-second-scheduler values.yaml
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")  # kwok's docs (site/content/en/docs/user/kwok-in-cluster.md)
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "trainer.kubeflow.org/trainjob",
              "pod", "statefulset")
PODS_PER_NODE = 110                   # the kubelet's default maxPods


@dataclass(frozen=True)
class Shape:
    """A simulated cluster: `nodes` x `gpus`, blocks of `block` nodes, racks of `rack`."""
    nodes: int = 64
    gpus: int = 8
    block: int = 64
    rack: int = 16

    @property
    def name(self) -> str:
        return f"{self.nodes}x{self.gpus}"


def parse_shape(text: str, block: int | None = None) -> Shape:
    """`64x8` (nodes x GPUs per node); blocks of 64 nodes unless `block` says otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*x\s*(\d+)\s*", text or "")
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise UsageError(f"--simulate {text!r}: expected NODESxGPUS, e.g. 64x8")
    nodes, gpus = int(m.group(1)), int(m.group(2))
    b = block or min(nodes, 64)
    if b < 1:
        raise UsageError(f"--block {block}: expected a number of nodes, 1 or more")
    return Shape(nodes, gpus, b, min(16, b))


# -- the cluster's own facts (deploy/cluster/kueue, read through .kdt-cluster.yaml) -------------------------
@dataclass(frozen=True)
class Facts:
    labels: dict            # the ResourceFlavor's nodeLabels
    taints: list            # its nodeTaints
    levels: list            # the Topology's level labels, coarsest first
    per_node: dict          # cpu, memory a node offers (the ClusterQueue's nominal quota per node)


def facts(objects: list) -> Facts:
    """The node side of the cluster's Kueue objects: the first topology-aware ResourceFlavor, its Topology, and
    the quota of the ClusterQueue that names it, per node of `gpus` GPUs."""
    docs = [d.data for d in objects if isinstance(getattr(d, "data", None), dict)]
    flavors = [d for d in docs if d.get("kind") == "ResourceFlavor" and (d.get("spec") or {}).get("topologyName")]
    if not flavors:
        return Facts({}, [], ["kubernetes.io/hostname"], {"cpu": "184", "memory": "1440Gi"})
    flavor = flavors[0]
    spec = flavor["spec"]
    topo = next((d for d in docs if d.get("kind") == "Topology" and d["metadata"]["name"] == spec["topologyName"]), None)
    levels = [lv["nodeLabel"] for lv in ((topo or {}).get("spec") or {}).get("levels") or []] or ["kubernetes.io/hostname"]
    per_node = {"cpu": "184", "memory": "1440Gi"}
    for cq in (d for d in docs if d.get("kind") == "ClusterQueue"):
        for group in (cq.get("spec") or {}).get("resourceGroups") or []:
            for fl in group.get("flavors") or []:
                if fl.get("name") != flavor["metadata"]["name"]:
                    continue
                quota = {r["name"]: r.get("nominalQuota") for r in fl.get("resources") or []}
                gpus = parse_quantity(str(quota.get("nvidia.com/gpu") or 0))[0]
                if gpus:
                    n = gpus / 8
                    per_node = {"cpu": _per(quota.get("cpu"), n, per_node["cpu"]),
                                "memory": _per(quota.get("memory"), n, per_node["memory"], "Gi")}
                    return Facts(dict(spec.get("nodeLabels") or {}), list(spec.get("nodeTaints") or []), levels,
                                 per_node)
    return Facts(dict(spec.get("nodeLabels") or {}), list(spec.get("nodeTaints") or []), levels, per_node)


def _per(quota, nodes: float, default: str, unit: str = "") -> str:
    if quota is None:
        return default
    v = parse_quantity(str(quota))[0] / nodes
    if unit == "Gi":
        return f"{int(v // 2**30)}Gi"
    return str(int(v))


def node_docs(shape: Shape, f: Facts) -> list[dict]:
    """The simulated nodes: KWOK's annotation, the flavor's labels and taints, one label per topology level."""
    out = []
    alloc = {"cpu": f.per_node["cpu"], "memory": f.per_node["memory"], "nvidia.com/gpu": str(shape.gpus),
             "pods": str(PODS_PER_NODE)}
    for i in range(shape.nodes):
        name = f"gpu-{i:04d}"
        labels = {**f.labels, "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  "type": "kwok"}
        for depth, level in enumerate(f.levels):
            if level == "kubernetes.io/hostname":
                continue
            labels[level] = f"block-{i // shape.block}" if depth == 0 else f"block-{i // shape.block}-rack-{i // shape.rack}"
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]}},
                    "spec": {"taints": [dict(t) for t in f.taints]},
                    "status": {"capacity": alloc, "allocatable": alloc}})
    return out


# -- the components ---------------------------------------------------------------------------------------
def kueue_config(port: int, certs: Path) -> str:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2, apis/config/v1beta2/configuration_types.go)."""
    cfg = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "namespace": KUEUE_NAMESPACE,
           "health": {"healthProbeBindAddress": "0"}, "metrics": {"bindAddress": "0"},
           "webhook": {"port": port, "host": "127.0.0.1", "certDir": str(certs)},
           "leaderElection": {"leaderElect": False},
           "internalCertManagement": {"enable": False},
           # upstream's config/components/manager/controller_manager_config.yaml
           "controller": {"groupKindConcurrency": {"Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10,
                                                   "LocalQueue.kueue.x-k8s.io": 5, "Cohort.kueue.x-k8s.io": 1,
                                                   "ClusterQueue.kueue.x-k8s.io": 5,
                                                   "ResourceFlavor.kueue.x-k8s.io": 1}},
           "clientConnection": {"qps": 300, "burst": 500},
           "manageJobsWithoutQueueName": False,
           "managedJobsNamespaceSelector": {"matchExpressions": [
               {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", KUEUE_NAMESPACE]}]},
           "integrations": {"frameworks": list(FRAMEWORKS)}}
    return json.dumps(cfg, indent=1)


def coscheduling_config(kubeconfig: Path) -> str:
    """The second scheduler's KubeSchedulerConfiguration (the chart's templates/configmap.yaml, Coscheduling
    only; podInitialBackoffSeconds as kdt.live.controlplane gives kube-scheduler)."""
    return json.dumps({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)}, "leaderElection": {"leaderElect": False},
        "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 2,
        "profiles": [{"schedulerName": SECOND_SCHEDULER,
                      "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}],
                                                 "disabled": [{"name": "PrioritySort"}]}},
                      "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}]}]})


def kwok_config() -> str:
    """KWOK's stages at the tag (kustomize/stage): the nodes' and the pods' lifecycle, without pod-complete."""
    k = build.module_dir(R.KWOK_MODULE, versions.KWOK) / "kustomize" / "stage"
    docs = (install.kustomize(k / "node" / "fast") + install.kustomize(k / "node" / "heartbeat-with-lease")
            + [d for d in install.kustomize(k / "pod" / "fast") if d["metadata"]["name"] != "pod-complete"])
    return "\n---\n".join(json.dumps(d) for d in docs)


def kueue_webhooks(port: int, bundle: str) -> list[dict]:
    k = build.module_dir(R.KUEUE_MODULE, versions.KUEUE)
    out = []
    for d in install.kustomize(k / "config" / "components" / "webhook"):
        if d.get("kind") not in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            continue
        d["metadata"]["name"] = "kueue-" + d["metadata"]["name"]     # config/default namePrefix
        for w in d.get("webhooks") or []:
            svc = (w.get("clientConfig") or {}).get("service") or {}
            w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{svc.get('path', '/')}", "caBundle": bundle}
        out.append(d)
    return out


def training_operator_cluster_file(cluster_file):
    """The repository's cluster file with the Training Operator's gang scheduler set to the second scheduler,
    and its objects left for `start` to apply once Kueue's webhooks answer."""
    from ..cluster_file import Cluster as ClusterFile
    base = cluster_file if cluster_file is not None else ClusterFile()
    return dataclasses.replace(base, gang_scheduler=SECOND_SCHEDULER, object_paths=())


def start(cluster, cluster_file, shape: Shape, coscheduling: bool = True) -> Facts:
    """Kueue, the coscheduling scheduler (unless `coscheduling` is False), KWOK, the cluster file's objects and
    the nodes, on `cluster`."""
    from .controlplane import free_port
    from .pki import ca_bundle
    comps = {c.name: c for c in R.schedulers() if coscheduling or c.name != "scheduler-plugins"}
    bins = {name: build.operator(c, cluster.stream) for name, c in comps.items()}
    cluster.say(f"starting Kueue {versions.KUEUE}, scheduler-plugins {versions.SCHEDULER_PLUGINS} (coscheduling) "
                f"and KWOK {versions.KWOK}")
    install.apply(cluster, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}}],
                  f"namespace {KUEUE_NAMESPACE}")
    port = cluster.ports["webhook-kueue"] = free_port()
    certs = cluster.folder / "kueue-certs"
    certs.mkdir(parents=True, exist_ok=True)
    crt, key = cluster.pki.pair("webhook")
    shutil.copy(crt, certs / "tls.crt")
    shutil.copy(key, certs / "tls.key")
    # Without its internal certificate management Kueue reads a metrics certificate from a fixed path, where a
    # kubelet mounts its Secret (cmd/kueue/main.go metricsCertPath; the metrics server itself is off here)
    metrics = Path("/etc/kueue/metrics/certs")
    if not (metrics / "tls.crt").exists():
        try:
            metrics.mkdir(parents=True, exist_ok=True)
            shutil.copy(crt, metrics / "tls.crt")
            shutil.copy(key, metrics / "tls.key")
        except OSError as e:
            raise UsageError(f"Kueue {versions.KUEUE} reads its metrics certificate from {metrics} (cmd/kueue/main.go); "
                             f"it cannot be written here: {e}") from None
    cfg = cluster.folder / "kueue-config.yaml"
    cfg.write_text(kueue_config(port, certs))
    kueue = cluster._spawn("kueue", [bins["kueue"], f"--config={cfg}", "--feature-gates=VisibilityOnDemand=false",
                                     "--zap-log-level=2"], env={"KUBECONFIG": str(cluster.kubeconfig)})
    if coscheduling:
        sched = cluster.folder / "scheduler-plugins.yaml"
        sched.write_text(coscheduling_config(cluster.kubeconfig))
        cluster._spawn("scheduler-plugins", [bins["scheduler-plugins"], f"--config={sched}", "--secure-port=0",
                                             "--v=1"])
    stages = cluster.folder / "kwok.yaml"
    stages.write_text(kwok_config())
    cluster._spawn("kwok", [bins["kwok"], f"--kubeconfig={cluster.kubeconfig}", f"--config={stages}",
                            "--manage-all-nodes=false",
                            f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION[0]}={KWOK_ANNOTATION[1]}",
                            "--node-lease-duration-seconds=40", "--cidr=10.128.0.0/12"])
    cluster._wait(f"Kueue's webhook server (port {port})", lambda: cluster._tls_ready(port), 120, kueue)
    install.apply(cluster, kueue_webhooks(port, ca_bundle(cluster.pki)), f"Kueue {versions.KUEUE}'s webhook configurations")
    _wait_kueue(cluster)
    objects = cluster_file.objects if cluster_file is not None else []
    # the namespaces the LocalQueues live in exist before them (deploy/argocd creates them with the apps)
    spaces = sorted({d.data["metadata"].get("namespace") for d in objects if isinstance(d.data, dict)
                     and d.data.get("kind") == "LocalQueue" and d.data["metadata"].get("namespace")})
    if spaces:
        install.apply(cluster, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in spaces],
                      f"namespaces {', '.join(spaces)}")
    if cluster_file is not None and cluster_file.object_paths:
        cluster.notes = install.apply_cluster_objects(cluster, cluster_file)
    f = facts(objects)
    add_nodes(cluster, shape, f)
    return f


def _wait_kueue(cluster, timeout: float = 60) -> None:
    """Until Kueue's webhooks answer a dry-run LocalQueue (a refused one says its webhook is not up yet)."""
    import time
    probe = json.dumps({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                        "metadata": {"name": "kdt-probe"}, "spec": {}})
    end = time.monotonic() + timeout
    last = ""
    while time.monotonic() < end:
        cluster.check()
        proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=probe, check=False)
        last = proc.stderr
        if proc.returncode == 0:
            return
        time.sleep(0.3)
    raise UsageError(f"live control plane: Kueue's webhooks did not answer in {timeout:.0f} s: {last.strip()[-300:]}")


def add_nodes(cluster, shape: Shape, f: Facts, timeout: float = 300) -> None:
    """Create the simulated nodes and wait until KWOK has made every one Ready."""
    import time
    docs = node_docs(shape, f)
    t0 = time.monotonic()
    for i in range(0, len(docs), 256):
        cluster.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                               "items": docs[i:i + 256]}), timeout=300)
    end = time.monotonic() + timeout
    ready = 0
    while time.monotonic() < end:
        cluster.check()
        nodes = cluster.get_json("nodes", "-l", "type=kwok")["items"]
        ready = sum(1 for n in nodes if any(c.get("type") == "Ready" and c.get("status") == "True"
                                           for c in (n.get("status") or {}).get("conditions") or []))
        if ready == shape.nodes:
            cluster.say(f"{shape.nodes} nodes x {shape.gpus} nvidia.com/gpu Ready (KWOK) in {time.monotonic() - t0:.1f} s")
            return
        time.sleep(0.5)
    raise UsageError(f"KWOK made {ready} of {shape.nodes} nodes Ready in {timeout:.0f} s")


# What a simulated cluster costs this machine, measured by bench/scale.py (the control plane's resident memory,
# every process of it summed, with one pod per node bound and Running): a base and a cost per node.
BASE_BYTES = 1_600 * 2**20
PER_NODE_BYTES = 3 * 2**20


def _available_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def largest_that_fits(available: int | None = None) -> int:
    avail = _available_bytes() if available is None else available
    return max(0, int((avail * 0.8 - BASE_BYTES) // PER_NODE_BYTES))


def check_fits(shape: Shape, available: int | None = None) -> None:
    """One line naming the largest simulated cluster that fits this machine's free memory when `shape` does not."""
    avail = _available_bytes() if available is None else available
    if not avail:
        return
    most = largest_that_fits(avail)
    if shape.nodes > most:
        raise UsageError(f"--simulate {shape.name}: {shape.nodes} simulated nodes need about "
                         f"{(BASE_BYTES + shape.nodes * PER_NODE_BYTES) / 2**30:.1f} GiB here; this machine has "
                         f"{avail / 2**30:.1f} GiB free: the largest that fits is {most}x{shape.gpus} "
                         f"(bench/scale.py measured {PER_NODE_BYTES / 2**20:.0f} MiB per node and pod)")

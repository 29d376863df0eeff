"""Real nodes for the live control plane: the kubelet, containerd and runc run pods in containers.

    nodes = RealNodes(cluster, count=2, images=[archive, ...]).start()   # after Cluster.start
    ...
    nodes.stop()                                                          # everything removed

What one start makes, every piece named by the run's prefix (`kdt-<hash>`) and removed by `stop()`, by the
reaper when the process that started them dies (`python -m kdt.live.realnodes reap`), and by `kdt cluster
down` from the record it leaves (`/var/lib/kdt/<prefix>/real-nodes.json`, kdt.live.realnodes.nodes_folder):
- a fabric network namespace `<prefix>-fab` holding the bridge `br0` (100.64.0.254/24: CoreDNS answers
  there) and, per node i, a network namespace `<prefix>-n<i>` joined to it by a veth (`eth0`, 100.64.0.i);
  the node forwards to the other nodes' pod ranges (100.65.<j>.0/24 via 100.64.0.j); no namespace has a
  default route, and nothing is NATed out of them: a packet to an address nothing programmed is dropped
  inside, never handed to the host's routes. The host reaches none of it; each namespace reaches the API
  server through a forwarder this process runs (a socket on 127.0.0.1:<API port> inside the namespace,
  connected to the host's loopback);
- per node, containerd (its root, state, socket, runc root and CNI configuration under the node's folder;
  the pods' network namespaces under its state: `netns_mounts_under_state_dir`) and the kubelet (its root
  and pod logs under the node's folder, `cgroupRoot: /<prefix>-n<i>`, cgroupfs, `failCgroupV1: false`: this
  host's cgroups are v1), both in the node's network namespace (nsenter --net) and the host's mount
  namespace, so the kubelet's volumes are the mounts runc binds; kube-proxy (iptables, in the node's
  namespace); the CNI plugins bridge (`cni0`, 100.65.<i>.0/24, a route to 100.64.0.0/10 only), host-local,
  loopback and portmap;
- CoreDNS in the fabric namespace, answering `cluster.local` only (no forwarder: any other name is refused),
  the kubelets' `clusterDNS`;
- images: the pause image (Kubernetes' build/pause/linux/pause.c, pinned as containerd's sandbox image) and
  every archive given, imported into each node's containerd (`ctr -n k8s.io images import`) under the
  reference the manifests use: no registry runs here (none can be reached, and a registry built from a Go
  module would copy each image once more for nothing a pod's `imagePullPolicy: IfNotPresent`/`Never` needs).

Facts of this host the configuration answers (checked on it): cgroups v1 (the kubelet refuses them unless
`failCgroupV1: false`); no CAP_SYS_RESOURCE in a container host (runc fails "can't get final child's PID
from pipe" unless containerd's `restrict_oom_score_adj`); no hugetlb controller
(`tolerate_missing_hugetlb_controller`).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from . import build, oci
from . import releases as R

NODE_NET = "100.64.0"                 # node i: 100.64.0.i/24 on the fabric bridge
DNS_IP = f"{NODE_NET}.254"            # the bridge's own address: CoreDNS
POD_CIDR = "100.65.{i}.0/24"          # node i's pods
CLUSTER_CIDR = "100.65.0.0/16"
SERVICE_CIDR = "100.96.0.0/16"        # kube-apiserver --service-cluster-ip-range for real nodes
ALL = "100.64.0.0/10"                 # the only route a pod has
GPUS = 8                              # declared nvidia.com/gpu per node (a status patch: nothing backs it)
PAUSE_REF = "kdt.local/pause:" + "3.10.2"   # build/pause/Makefile TAG at k8s.io/kubernetes v1.36.3
CGROUP_FS = Path("/sys/fs/cgroup")
_CTRS = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd", "hugetlb",
         "net_cls", "net_prio", "perf_event", "rdma", "misc")
LABEL = "kdt.dev/real-node"


class NodeFailed(UsageError):
    """A real node could not start (what is missing on this host, or a component's end of log)."""


def prefix_of(folder: Path) -> str:
    return "kdt-" + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:6]


def nodes_folder(cluster_folder: Path) -> Path:
    """The nodes' own folder: `$KDT_NODES_DIR` (default /var/lib/kdt) / <prefix>. A short path, not under the
    control plane's folder: the kubelet and containerd make unix sockets under it (pod-resources,
    containerd.sock.ttrpc), and a socket's path is at most 107 bytes."""
    return Path(os.environ.get("KDT_NODES_DIR") or "/var/lib/kdt") / prefix_of(cluster_folder)


def record_of(cluster_folder: Path) -> Path:
    return nodes_folder(cluster_folder) / "real-nodes.json"


# -- what a host needs ---------------------------------------------------------------------------------
def missing() -> list[str]:
    """What this host lacks for a real node (empty: it can start one)."""
    out = []
    if os.geteuid() != 0:
        out.append("root (network namespaces, mounts and cgroups need it)")
    try:
        fs = Path("/proc/filesystems").read_text()
    except OSError:
        fs = ""
    if "overlay" not in fs:
        out.append("the overlay filesystem (containerd's overlayfs snapshotter)")
    v2 = (CGROUP_FS / "cgroup.controllers").is_file()
    if not v2:
        for c in ("cpu", "memory", "pids", "cpuset"):
            if not (CGROUP_FS / c).is_dir():
                out.append(f"the {c} cgroup controller (mounted at {CGROUP_FS / c})")
    for tool in ("ip", "nsenter", "runc", "iptables"):
        if shutil.which(tool) is None:
            out.append(f"`{tool}` on PATH")
    return out


def preflight() -> None:
    lack = missing()
    if lack:
        raise NodeFailed("real nodes cannot start on this host: no " + "; no ".join(lack)
                         + " (the process path, kdt run --live without --real-nodes, still runs)")


def _run(*argv, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, input=input)
    if check and proc.returncode != 0:
        raise NodeFailed(f"{' '.join(map(str, argv[:6]))}: {proc.stderr.strip()[-300:]}")
    return proc


# -- the API server inside a namespace -----------------------------------------------------------------
def _setns(path: str) -> None:
    import ctypes
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, 0x40000000) != 0:        # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), f"setns {path}")
    finally:
        os.close(fd)


class Forwarder:
    """127.0.0.1:<port> inside a network namespace, connected to 127.0.0.1:<port> of this process's own:
    the listening socket is made by a thread that entered the namespace (setns affects that thread only)
    and came back; every connection is then pumped from here."""

    def __init__(self, netns: str, port: int):
        self.netns, self.port = netns, port
        self.sock: socket.socket | None = None
        done, err = threading.Event(), []

        def make() -> None:
            try:
                home = f"/proc/{os.getpid()}/task/{threading.get_native_id()}/ns/net"
                home_fd = os.open(home, os.O_RDONLY)
                try:
                    _setns(f"/run/netns/{netns}")
                    s = socket.socket()
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind(("127.0.0.1", port))
                    s.listen(128)
                    self.sock = s
                finally:
                    _setns(home)
                    os.close(home_fd)
            except OSError as exc:
                err.append(exc)
            done.set()
        t = threading.Thread(target=make, daemon=True)
        t.start()
        done.wait()
        if err:
            raise NodeFailed(f"the API server's forwarder in {netns}: {err[0]}")
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                up.settimeout(None)
            except OSError:
                conn.close()
                continue
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


# -- one run's nodes -----------------------------------------------------------------------------------
@dataclass
class Node:
    index: int
    name: str
    netns: str
    folder: Path
    cgroup: str

    @property
    def ip(self) -> str:
        return f"{NODE_NET}.{self.index}"

    @property
    def pod_cidr(self) -> str:
        return POD_CIDR.format(i=self.index)

    @property
    def sock(self) -> Path:
        return self.folder / "containerd.sock"


@dataclass
class RealNodes:
    cluster: object                       # kdt.live.controlplane.Cluster (started)
    count: int = 2
    images: list = field(default_factory=list)     # OCI archives to import into every node
    stream: object = sys.stderr
    nodes: list = field(default_factory=list)
    procs: list = field(default_factory=list)      # kdt.live.controlplane.Proc
    forwarders: list = field(default_factory=list)
    started_s: float = 0.0

    @property
    def folder(self) -> Path:
        return nodes_folder(self.cluster.folder)

    @property
    def prefix(self) -> str:
        return prefix_of(self.cluster.folder)

    @property
    def record(self) -> Path:
        return self.folder / "real-nodes.json"

    def say(self, msg: str) -> None:
        print(f"live: {msg}", file=self.stream, flush=True)

    def start(self) -> "RealNodes":
        preflight()
        t0 = time.monotonic()
        try:
            bins = build.node(self.stream)
            self.folder.mkdir(parents=True, exist_ok=True)
            self.nodes = [Node(i, f"node-{i}", f"{self.prefix}-n{i}", self.folder / f"n{i}", f"/{self.prefix}-n{i}")
                          for i in range(1, self.count + 1)]
            self._write_record()
            self._reaper()
            self._network()
            pause = self._pause_archive()
            for n in self.nodes:
                self._containerd(n, bins)
            for n in self.nodes:
                self._wait_socket(n)
                for archive in [pause, *self.images]:
                    _run(bins["ctr"], "--address", n.sock, "-n", "k8s.io", "images", "import",
                         "--snapshotter", "overlayfs", archive)
            self._coredns(bins)
            for n in self.nodes:
                self._kubelet(n, bins)
                self._kube_proxy(n, bins)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - t0
        self.say(f"{self.count} real node(s) ready in {self.started_s:.0f} s: "
                 + ", ".join(f"{n.name} ({n.ip}, pods {n.pod_cidr})" for n in self.nodes))
        return self

    # -- pieces ---------------------------------------------------------------------------------------
    def _write_record(self) -> None:
        rec = {"prefix": self.prefix, "folder": str(self.folder),
               "netns": [f"{self.prefix}-fab"] + [n.netns for n in self.nodes],
               "cgroups": [n.cgroup for n in self.nodes],
               "runc_roots": [str(n.folder / "runc") for n in self.nodes],
               "sockets": [str(n.sock) for n in self.nodes],
               "pod_logs": [str(n.folder / "pod-logs") for n in self.nodes]}
        self.record.write_text(json.dumps(rec, indent=1))

    def _reaper(self) -> None:
        """A process of its own session that removes everything once this one is gone (SIGKILL included)."""
        (self.cluster.folder / "logs").mkdir(parents=True, exist_ok=True)
        log = open(self.cluster.folder / "logs" / "reaper.log", "ab")
        subprocess.Popen([sys.executable, "-m", "kdt.live.realnodes", "reap", str(self.record), str(os.getpid())],
                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
        log.close()

    def _network(self) -> None:
        fab = f"{self.prefix}-fab"
        _run("ip", "netns", "add", fab)
        _run("ip", "-n", fab, "link", "set", "lo", "up")
        _run("ip", "-n", fab, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", fab, "addr", "add", f"{DNS_IP}/24", "dev", "br0")
        _run("ip", "-n", fab, "link", "set", "br0", "up")
        for n in self.nodes:
            _run("ip", "netns", "add", n.netns)
            _run("ip", "-n", n.netns, "link", "set", "lo", "up")
            _run("ip", "-n", n.netns, "link", "add", "eth0", "type", "veth", "peer", "name", f"n{n.index}",
                 "netns", fab)
            _run("ip", "-n", fab, "link", "set", f"n{n.index}", "master", "br0", "up")
            _run("ip", "-n", n.netns, "addr", "add", f"{n.ip}/24", "dev", "eth0")
            _run("ip", "-n", n.netns, "link", "set", "eth0", "up")
            _run("ip", "netns", "exec", n.netns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
            for m in self.nodes:
                if m is not n:
                    _run("ip", "-n", n.netns, "route", "add", m.pod_cidr, "via", m.ip)
            _run("ip", "-n", fab, "route", "add", n.pod_cidr, "via", n.ip)      # CoreDNS's replies to the pods
        port = self.cluster.ports["apiserver"]
        for ns in [fab] + [n.netns for n in self.nodes]:
            self.forwarders.append(Forwarder(ns, port))

    def _pause_archive(self) -> Path:
        src = build.module_dir("k8s.io/kubernetes", R.KUBERNETES) / "build/pause/linux/pause.c"
        images = build.cache_root() / "images"
        binary = oci.pause_binary(src, images / f"pause-{R.KUBERNETES}", f"v{PAUSE_REF.split(':')[1]}-kdt")
        out = images / f"pause-{R.KUBERNETES}.oci.tar"
        if not out.is_file():
            oci.write(oci.pause(PAUSE_REF, binary), out)
        return out

    def _spawn(self, name: str, netns: str, argv: list, env: dict | None = None):
        from .controlplane import Proc, _die_with_parent
        logs = self.cluster.folder / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{name}.log"
        fh = open(log, "ab")
        popen = subprocess.Popen(["nsenter", f"--net=/run/netns/{netns}", "--", *map(str, argv)], stdout=fh,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
                                 preexec_fn=_die_with_parent, cwd=self.cluster.folder)
        fh.close()
        p = Proc(name, popen, log)
        self.procs.append(p)
        return p

    def _containerd(self, n: Node, bins: dict) -> None:
        cni_bin = bins["bridge"].parent
        for d in ("root", "state", "runc", "cni/net.d", "cni/ipam", "kubelet", "pod-logs"):
            (n.folder / d).mkdir(parents=True, exist_ok=True)
        (n.folder / "cni/net.d/10-kdt.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": "kdt", "plugins": [
                {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False, "hairpinMode": True,
                 "ipam": {"type": "host-local", "dataDir": str(n.folder / "cni/ipam"),
                          "ranges": [[{"subnet": n.pod_cidr}]], "routes": [{"dst": ALL}]}},
                {"type": "portmap", "capabilities": {"portMappings": True}}]}, indent=1))
        cfg = n.folder / "containerd.toml"
        # version 3: containerd v2.4.2 migrates it (a warning); written as version 4 the same file left containerd
        # without its socket on this host
        cfg.write_text(f"""version = 3
root = "{n.folder / 'root'}"
state = "{n.folder / 'state'}"
[grpc]
  address = "{n.sock}"
[ttrpc]
  address = "{n.sock}.ttrpc"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{PAUSE_REF}"
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  tolerate_missing_hugetlb_controller = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{cni_bin}"]
    conf_dir = "{n.folder / 'cni/net.d'}"
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
      BinaryName = "{shutil.which('runc')}"
      Root = "{n.folder / 'runc'}"
      SystemdCgroup = false
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
""")
        # the shim is found next to containerd on PATH
        env = {"PATH": f"{bins['containerd'].parent}:{os.environ.get('PATH', '')}"}
        self._spawn(f"containerd-{n.name}", n.netns, [bins["containerd"], "--config", cfg, "--log-level", "warn"],
                    env)

    def _wait_socket(self, n: Node, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while not n.sock.exists():
            self.check()
            if time.monotonic() > end:
                raise NodeFailed(f"containerd of {n.name}: no socket {n.sock} after {timeout:.0f} s")
            time.sleep(0.1)

    def _cgroup_root(self, n: Node) -> None:
        for ctrl in _CTRS:
            base = CGROUP_FS / ctrl
            if not base.is_dir():
                continue
            d = base / n.cgroup.lstrip("/")
            d.mkdir(exist_ok=True)
            if ctrl == "cpuset":
                for f in ("cpuset.cpus", "cpuset.mems"):
                    (d / f).write_text((base / f).read_text())

    def _kubelet(self, n: Node, bins: dict) -> None:
        self._cgroup_root(n)
        resolv = n.folder / "resolv.conf"
        resolv.write_text("# no upstream resolver: the pods' names are CoreDNS's cluster.local only\n")
        cfg = n.folder / "kubelet.yaml"
        cfg.write_text(json.dumps({
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "failCgroupV1": False, "failSwapOn": False, "cgroupDriver": "cgroupfs", "cgroupRoot": n.cgroup,
            "containerRuntimeEndpoint": f"unix://{n.sock}", "podLogsDir": str(n.folder / "pod-logs"),
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"}, "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1",
            "clusterDNS": [DNS_IP], "clusterDomain": "cluster.local", "resolvConf": str(resolv),
            "staticPodPath": "", "serializeImagePulls": False, "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "0%", "nodefs.available": "0%", "imagefs.available": "0%",
                             "nodefs.inodesFree": "0%"},
            "nodeStatusUpdateFrequency": "4s", "syncFrequency": "10s", "fileCheckFrequency": "10s",
            "protectKernelDefaults": False, "makeIPTablesUtilChains": False, "maxPods": 110}, indent=1))
        self._spawn(f"kubelet-{n.name}", n.netns, [
            bins["kubelet"], f"--config={cfg}", f"--kubeconfig={self.cluster.kubeconfig}",
            f"--hostname-override={n.name}", f"--node-ip={n.ip}", f"--root-dir={n.folder / 'kubelet'}",
            f"--cert-dir={n.folder / 'kubelet-pki'}", f"--node-labels={LABEL}=true", "--v=1"])

    def _kube_proxy(self, n: Node, bins: dict) -> None:
        cfg = n.folder / "kube-proxy.yaml"
        # masqueradeAll: a pod reaching a Service whose endpoint shares its bridge gets the reply through the
        # node (no br_netfilter in a namespace of a container host); the SNAT stays inside the node's namespace
        cfg.write_text(json.dumps({
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.cluster.kubeconfig)}, "hostnameOverride": n.name,
            "mode": "iptables", "clusterCIDR": CLUSTER_CIDR, "iptables": {"masqueradeAll": True},
            "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            "metricsBindAddress": "127.0.0.1:10249", "healthzBindAddress": ""}, indent=1))
        self._spawn(f"kube-proxy-{n.name}", n.netns, [bins["kube-proxy"], f"--config={cfg}", "--v=1"])

    def _coredns(self, bins: dict) -> None:
        corefile = self.folder / "Corefile"
        corefile.write_text(f"""cluster.local:53 {{
    bind {DNS_IP}
    errors
    kubernetes cluster.local {{
        kubeconfig {self.cluster.kubeconfig} kdt
        pods insecure
    }}
}}
""")
        self._spawn("coredns", f"{self.prefix}-fab", [bins["coredns"], "-conf", corefile])

    def _wait_ready(self, timeout: float = 120) -> None:
        end = time.monotonic() + timeout
        names = {n.name for n in self.nodes}
        while True:
            self.check()
            items = self.cluster.get_json("nodes", "-l", f"{LABEL}=true").get("items", [])
            ready = {i["metadata"]["name"] for i in items
                     if any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in i.get("status", {}).get("conditions", []))}
            if names <= ready:
                break
            if time.monotonic() > end:
                raise NodeFailed(f"real nodes not Ready after {timeout:.0f} s: {', '.join(sorted(names - ready))}; "
                                 f"see {self.cluster.folder / 'logs'}")
            time.sleep(0.5)
        patch = json.dumps({"status": {"capacity": {"nvidia.com/gpu": str(GPUS)},
                                       "allocatable": {"nvidia.com/gpu": str(GPUS)}}})
        for n in self.nodes:
            self.cluster.kubectl("patch", "node", n.name, "--subresource=status", "--type=merge", "-p", patch)

    def logs(self, pod: dict, container: str, attempt: int | None = None) -> str:
        """A container's output as the kubelet kept it (`<podLogsDir>/<ns>_<pod>_<uid>/<container>/<n>.log`,
        CRI log lines `<time> <stream> <F|P> <text>`), read from the node's folder: `kubectl logs` would have
        the API server dial the kubelet, which the host cannot reach (the nodes' network is theirs)."""
        meta = pod["metadata"]
        node = next(n for n in self.nodes if n.name == pod["spec"].get("nodeName"))
        folder = node.folder / "pod-logs" / f"{meta['namespace']}_{meta['name']}_{meta['uid']}" / container
        files = sorted(folder.glob("*.log"), key=lambda p: int(p.stem) if p.stem.isdigit() else -1)
        if attempt is not None:
            files = [f for f in files if f.stem == str(attempt)]
        out = []
        for f in files[-1:]:
            for line in f.read_text(errors="replace").splitlines():
                parts = line.split(" ", 3)
                if len(parts) == 4:
                    out.append(parts[3] + ("\n" if parts[2] == "F" else ""))
        return "".join(out)

    # -- watch and stop -------------------------------------------------------------------------------
    def check(self) -> None:
        from .controlplane import ComponentFailed
        for p in self.procs:
            rc = p.popen.poll()
            if rc is not None:
                raise ComponentFailed(f"real node: {p.name} exited ({rc}); {p.log}: {p.tail()}")

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.popen.poll() is None:
                try:
                    os.killpg(p.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.popen.wait()
        self.procs.clear()
        for f in self.forwarders:
            f.close()
        self.forwarders.clear()
        if self.record.is_file():
            teardown(self.record)


# -- teardown: from the record, by whoever is left -----------------------------------------------------
def _pids_of(pred) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if pred(d.name, (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _cgroup_dirs(cg: str) -> list[Path]:
    out = []
    for ctrl in _CTRS + ("unified",):
        base = CGROUP_FS / ctrl / cg.lstrip("/")
        if base.is_dir():
            out += sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [base]
    return out


def _umount_under(folder: str) -> None:
    import ctypes
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    for _ in range(5):
        points = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            mp = line.split()[4].encode().decode("unicode_escape")
            if mp == folder or mp.startswith(folder.rstrip("/") + "/"):
                points.append(mp)
        if not points:
            return
        for mp in sorted(points, key=len, reverse=True):
            libc.umount2(mp.encode(), 2)        # MNT_DETACH


def _host_leftovers(ids: list) -> None:
    """What containerd and the kubelet keep at fixed host paths, for the containers `ids` ((socket, namespace,
    id)): the shims' sockets (/run/containerd/s/<sha256 of socket/namespace/id>, containerd v2.4.2
    pkg/shim/util_unix.go CreateSocketAddress), go-cni's result cache (/var/lib/cni/results/<net>-<id>-<if>),
    and, once no kubelet runs here, the device manager's socket (/var/lib/kubelet/device-plugins/kubelet.sock,
    a fixed path: k8s.io/kubelet pkg/apis/deviceplugin/v1beta1 constants.go)."""
    results = Path("/var/lib/cni/results")
    cached = list(results.iterdir()) if results.is_dir() else []
    for sock, ns, cid in ids:
        for suffix in ("", "/debug"):
            h = hashlib.sha256(f"{sock}/{ns}/{cid}{suffix}".encode()).hexdigest()
            Path("/run/containerd/s", h).unlink(missing_ok=True)
        for f in cached:
            if f"-{cid}-" in f.name:
                f.unlink(missing_ok=True)
    empty = [results, results.parent, Path("/run/containerd/s"), Path("/run/containerd")]
    if not _pids_of(lambda pid, cmd: cmd.split(" ")[0].endswith("/kubelet")):
        dp = Path("/var/lib/kubelet/device-plugins")
        (dp / "kubelet.sock").unlink(missing_ok=True)
        empty += [dp, dp.parent]
    for d in empty:            # only when empty: what another runtime of this host keeps there stays
        try:
            d.rmdir()
        except OSError:
            pass


def teardown(record: Path) -> list[str]:
    """Remove everything a start left (processes, containers, mounts, cgroups, namespaces, log links):
    idempotent; returns what it removed."""
    try:
        rec = json.loads(record.read_text())
    except (OSError, ValueError):
        return []
    done = []
    folder = rec["folder"]
    # the node's own processes (any the owner's death left), then the containers and their shims
    own = _pids_of(lambda pid, cmd: folder in cmd and int(pid) != os.getpid()
                   and ("nsenter" in cmd or "containerd" in cmd or "kubelet" in cmd or "kube-proxy" in cmd
                        or "coredns" in cmd) and " reap " not in cmd)
    _kill(own)
    ids = []
    for base, sock in zip(rec["runc_roots"], rec["sockets"]):
        # the shim keeps runc's state per containerd namespace: <Root>/k8s.io
        for root in [p for p in Path(base).iterdir() if p.is_dir()] if Path(base).is_dir() else []:
            found = _run("runc", "--root", root, "list", "-q", check=False).stdout.split()
            for cid in found:
                _run("runc", "--root", root, "delete", "--force", cid, check=False)
                ids.append((sock, root.name, cid))
            if found:
                done.append(f"{len(found)} container(s) of {root}")
    shims = _pids_of(lambda pid, cmd: "containerd-shim" in cmd and any(s in cmd for s in rec["sockets"]))
    _kill(shims)
    for cg in rec["cgroups"]:
        for d in _cgroup_dirs(cg):
            for f in ("cgroup.procs",):
                try:
                    _kill(int(x) for x in (d / f).read_text().split())
                except OSError:
                    pass
    time.sleep(0.2 if own or shims else 0)
    _umount_under(folder)
    for cg in rec["cgroups"]:
        dirs = _cgroup_dirs(cg)
        for d in dirs:
            for _ in range(20):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
        if dirs:
            done.append(f"cgroup {cg}")
    listed = _run("ip", "netns", "list", check=False).stdout
    for ns in rec["netns"]:
        if ns in listed:
            _run("ip", "netns", "del", ns, check=False)
            done.append(f"network namespace {ns}")
    _host_leftovers(ids)
    logs = Path("/var/log/containers")
    if logs.is_dir():
        for link in logs.iterdir():
            try:
                if link.is_symlink() and any(os.readlink(link).startswith(p) for p in rec["pod_logs"]):
                    link.unlink()
            except OSError:
                pass
    shutil.rmtree(folder, ignore_errors=True)
    try:
        Path(folder).parent.rmdir()         # /var/lib/kdt once no other run's nodes are there
    except OSError:
        pass
    return done


def _reap(record: Path, pid: int) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while record.is_file():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            removed = teardown(record)
            if removed:
                print(f"live: the owner (pid {pid}) is gone: removed " + ", ".join(removed), flush=True)
            return 0
        time.sleep(0.5)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "reap":
        sys.exit(_reap(Path(sys.argv[2]), int(sys.argv[3])))
    print("usage: python -m kdt.live.realnodes reap RECORD PID", file=sys.stderr)
    sys.exit(2)

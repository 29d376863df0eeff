"""A local control plane: the real API server, controllers, scheduler and operators, no Docker, no cluster.

    with Cluster.start(ReleaseSet(trainer="2.3")) as c:
        c.kubectl("apply", "--server-side", "-f", "job.yaml")

What starts, in order, each a process of this machine on free loopback ports, its output in
`<folder>/logs/<component>.log`:
- etcd (no fsync: the store lives as long as the run);
- kube-apiserver with a CA made for the run (kdt.live.pki), RBAC, the default admission plugins (the
  webhooks, ServiceAccount, PodSecurity ... as a cluster has them);
- kube-controller-manager (every default controller: Job, garbage collector, service accounts, endpoint
  slices, node lifecycle, ...) and kube-scheduler;
- the operators' CRDs and webhook configurations, read from the Go module cache at the pinned tags, the
  webhooks pointed at `https://127.0.0.1:<port>` with the run's CA;
- each operator manager out of cluster with a kubeconfig: Trainer and the JobSet it ships, the Training
  Operator (given the repository's init container template, as `.kdt-cluster.yaml` says the cluster does).

The managers run as Trainer's own integration tests run them (test/integration/framework at v2.3.0: a
real API server, the webhooks served on loopback), as processes rather than in the test binary.

Every process gets PR_SET_PDEATHSIG: if the process that started them dies (a crash, SIGKILL), the kernel
kills them too, so nothing is left running; `stop()` sends SIGTERM, waits, then SIGKILL. A component that
exits early ends the start (or the run) with one line naming it and the last lines of its log.
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from ..errors import UsageError
from . import build, pki
from . import releases as R

_PR_SET_PDEATHSIG = 1


class ComponentFailed(UsageError):
    """A component of the control plane did not start or died: its name and the end of its log."""


def _die_with_parent() -> None:      # preexec_fn: runs in the child before exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    os.setpgid(0, 0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self, n: int = 3) -> str:
        try:
            lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return " | ".join(ln.strip()[:300] for ln in lines[-n:])


class Client:
    """What talks to a running control plane: the kubeconfig, the pinned kubectl, and `check()`, which
    raises ComponentFailed when a component has died."""

    kubeconfig: Path
    installed: set          # (group, kind, namespace, name) of what the control plane's install applied

    def say(self, msg: str) -> None:
        print(f"live: {msg}", file=getattr(self, "stream", sys.stderr), flush=True)

    def check(self) -> None:
        pass

    # -- kubectl ----------------------------------------------------------------------------------------
    def kubectl(self, *args, input: str | None = None, check: bool = True, timeout: float = 120
                ) -> subprocess.CompletedProcess:
        proc = subprocess.run([paths.tool("kubectl"), f"--kubeconfig={self.kubeconfig}", *args], input=input, capture_output=True,
                              text=True, timeout=timeout)
        if check and proc.returncode != 0:
            self.check()
            raise UsageError(f"kubectl {' '.join(args[:3])}: {proc.stderr.strip()[-500:]}")
        return proc

    def get_json(self, *args) -> dict:
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)



@dataclass
class Attached(Client):
    """A control plane another process owns (`kdt cluster up`): its state file's kubeconfig and pids."""
    kubeconfig: Path
    components: dict
    stream: object = sys.stderr
    installed: set = field(default_factory=set)     # not known of a control plane another process started

    def check(self) -> None:
        for name, pid in self.components.items():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                raise ComponentFailed(f"live control plane: {name} (pid {pid}) has exited") from None


def attach(state: dict, stream=sys.stderr) -> Attached:
    """The control plane a daemon's state names (kdt.live.daemon), with what its install applied, so the judge
    guards those objects (kdt.live.admission) as on a control plane of its own."""
    return Attached(Path(state["kubeconfig"]), dict(state["components"]), stream,
                    {tuple(k) for k in state.get("installed") or ()})


@dataclass
class Cluster(Client):
    folder: Path
    releases: R.ReleaseSet
    stream: object = sys.stderr
    procs: list[Proc] = field(default_factory=list)
    ports: dict = field(default_factory=dict)
    owned_folder: bool = False
    started_s: float = 0.0
    cluster_file: object = None       # kdt.cluster_file.Cluster: how the repository's clusters run the operators
    notes: list = field(default_factory=list)   # what of the cluster file's objects was left out, and why
    installed: set = field(default_factory=set)  # kdt.live.install.key of every object the install applied
    service_cidr: str = "10.96.0.0/16"           # real nodes give one inside 100.64.0.0/10 (kdt.live.realnodes)
    timeline: list = field(default_factory=list)  # (phase, seconds since the start began): where the start goes

    # -- start ------------------------------------------------------------------------------------------
    @classmethod
    def start(cls, releases: R.ReleaseSet | None = None, folder: Path | None = None, stream=sys.stderr,
              operators: bool = True, cluster_file=None, service_cidr: str | None = None) -> "Cluster":
        releases = releases or R.ReleaseSet()
        owned = folder is None
        if folder is None:
            base = build.cache_root() / "runs"
            base.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix="run-", dir=base))
        c = cls(Path(folder), releases, stream, owned_folder=owned, cluster_file=cluster_file)
        if service_cidr:
            c.service_cidr = service_cidr
        t0 = c._t0 = time.monotonic()
        try:
            c._start(operators)
        except BaseException:
            c.stop()
            raise
        c.started_s = time.monotonic() - t0
        return c

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def mark(self, phase: str) -> None:
        """The end of a phase of the start (bench/live_speed.py prints the timeline)."""
        self.timeline.append((phase, round(time.monotonic() - getattr(self, "_t0", time.monotonic()), 2)))

    def _spawn(self, name: str, argv: list, env: dict | None = None) -> Proc:
        logs = self.folder / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{name}.log"
        fh = open(log, "ab")
        full_env = {**os.environ, **(env or {})}
        popen = subprocess.Popen([str(a) for a in argv], stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=full_env, preexec_fn=_die_with_parent, cwd=self.folder)
        fh.close()
        p = Proc(name, popen, log)
        self.procs.append(p)
        return p

    def check(self) -> None:
        """Raise ComponentFailed naming the first component that has exited."""
        for p in self.procs:
            rc = p.popen.poll()
            if rc is not None:
                raise ComponentFailed(f"live control plane: {p.name} exited ({rc}); {p.log}: {p.tail()}")

    def _wait(self, what: str, ready, timeout: float, proc: Proc | None = None) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.check()
            try:
                if ready():
                    return
            except Exception:       # not ready yet (connection refused, TLS not up, ...)
                pass
            time.sleep(0.1)
        tail = f"; {proc.log}: {proc.tail()}" if proc else ""
        raise ComponentFailed(f"live control plane: {what} not ready after {timeout:.0f} s{tail}")

    def _tls_ready(self, port: int) -> bool:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca))
        ctx.check_hostname = False
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            with ctx.wrap_socket(s):
                return True

    def _healthz(self, path: str = "/readyz") -> bool:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca))
        cert, key = self.pki.pair("admin")
        ctx.load_cert_chain(str(cert), str(key))
        import urllib.request
        with urllib.request.urlopen(self.server + path, context=ctx, timeout=2) as r:
            return r.status == 200

    def _start(self, operators: bool) -> None:
        bins = build.control_plane(self.stream)
        op_bins = {c.name: build.operator(c, self.stream) for c in self.releases.operators()} if operators else {}
        self.say(f"starting Kubernetes {R.KUBERNETES} (etcd {R.ETCD})"
                 + (f" with {self.releases.name}" if operators else "") + f" in {self.folder}")
        self.mark("binaries found")
        self.pki = pki.kept(self.folder / "pki", build.cache_root() / "pki")
        self.mark("certificates made")
        for name in ("etcd", "etcd-peer", "apiserver"):
            self.ports[name] = free_port()
        etcd = self._spawn("etcd", [
            bins["etcd"], "--name", "kdt", "--data-dir", self.folder / "etcd",
            "--listen-client-urls", f"http://127.0.0.1:{self.ports['etcd']}",
            "--advertise-client-urls", f"http://127.0.0.1:{self.ports['etcd']}",
            "--listen-peer-urls", f"http://127.0.0.1:{self.ports['etcd-peer']}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.ports['etcd-peer']}",
            "--initial-cluster", f"kdt=http://127.0.0.1:{self.ports['etcd-peer']}",
            "--unsafe-no-fsync", "--log-level", "warn"])
        self._wait("etcd", lambda: socket.create_connection(("127.0.0.1", self.ports["etcd"]), timeout=1).close() or True,
                   30, etcd)
        self.mark("etcd serving")
        crt, key = self.pki.pair("apiserver")
        api = self._spawn("kube-apiserver", [
            bins["kube-apiserver"], f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            f"--secure-port={self.ports['apiserver']}", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--tls-cert-file={crt}", f"--tls-private-key-file={key}", f"--client-ca-file={self.pki.ca}",
            f"--cert-dir={self.folder / 'apiserver-certs'}",
            f"--service-cluster-ip-range={self.service_cidr}", "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={self.pki.sa_pub}", f"--service-account-signing-key-file={self.pki.sa_key}",
            "--authorization-mode=RBAC", "--allow-privileged=true", "--v=1"])
        self._write_kubeconfig()
        self._wait("kube-apiserver", self._healthz, 90, api)
        self.mark("kube-apiserver ready")
        common = [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false", "--secure-port=0"]
        self._spawn("kube-controller-manager", [
            bins["kube-controller-manager"], *common, "--controllers=*",
            f"--service-account-private-key-file={self.pki.sa_key}", f"--root-ca-file={self.pki.ca}",
            "--use-service-account-credentials=false", "--cluster-name=kdt", "--v=1"])
        # The scheduler retries a pod it could not place after 1 s, and at most 2 s (its defaults: 1 s doubling
        # to 10 s; KubeSchedulerConfiguration podInitialBackoffSeconds/podMaxBackoffSeconds, v1 at
        # k8s.io/kube-scheduler v0.36.3): a replacement pod waiting for its node lands as soon as it is free.
        sched = self.folder / "scheduler.yaml"
        sched.write_text(json.dumps({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                                     "clientConnection": {"kubeconfig": str(self.kubeconfig)},
                                     "leaderElection": {"leaderElect": False},
                                     "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 2}))
        self._spawn("kube-scheduler", [bins["kube-scheduler"], f"--config={sched}", "--secure-port=0", "--v=1"])
        if operators:
            self._start_operators(op_bins)
        self.mark("ready")
        self.say(f"ready: kubeconfig {self.kubeconfig}")

    def _write_kubeconfig(self) -> None:
        crt, key = self.pki.pair("admin")
        cfg = {
            "apiVersion": "v1", "kind": "Config", "current-context": "kdt",
            "clusters": [{"name": "kdt", "cluster": {"server": self.server, "certificate-authority": str(self.pki.ca)}}],
            "users": [{"name": "kdt-admin", "user": {"client-certificate": str(crt), "client-key": str(key)}}],
            "contexts": [{"name": "kdt", "context": {"cluster": "kdt", "user": "kdt-admin"}}],
        }
        tmp = self.kubeconfig.with_suffix(".tmp")
        tmp.write_text(json.dumps(cfg, indent=1))
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.kubeconfig)

    # -- operators --------------------------------------------------------------------------------------
    def _start_operators(self, op_bins: dict) -> None:
        from . import install
        trainer, jobset = R.trainer(self.releases.trainer)
        to = R.training_operator(self.releases.training_operator)
        for name in ("trainer", "jobset", "training-operator"):
            self.ports[f"webhook-{name}"] = free_port()
        install.apply_base(self, trainer, jobset, to)
        self.mark("CRDs installed and established")
        # certificates for the managers' webhook servers (controller-runtime reads
        # $TMPDIR/k8s-webhook-server/serving-certs/tls.{crt,key} when none other is configured)
        procs = []
        certs_of = {}
        for name in ("jobset", "trainer", "training-operator"):
            tmpdir = self.folder / f"{name}-tmp"
            certs = tmpdir / "k8s-webhook-server" / "serving-certs"
            certs.mkdir(parents=True, exist_ok=True)
            crt, key = self.pki.pair("webhook")
            shutil.copy(crt, certs / "tls.crt")
            shutil.copy(key, certs / "tls.key")
            certs_of[name] = tmpdir
        # The Training Operator's rotator waits for a certificate file at a fixed path, where a kubelet mounts
        # its Secret (v1.9.4 pkg/cert/cert.go certDir; cert-controller v0.16.0 rotator.go ensureCertsMounted
        # only checks that it exists); its webhook server reads $TMPDIR's copy (controller-runtime's default).
        marker = Path("/tmp/k8s-webhook-server/serving-certs/tls.crt")
        if not marker.exists():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text("kdt live: the Training Operator's certificate is in its TMPDIR\n")
        for name, comp in (("jobset", jobset), ("trainer", trainer)):
            tmpdir = certs_of[name]
            certs = tmpdir / "k8s-webhook-server" / "serving-certs"
            cfg = self.folder / f"{name}-config.yaml"
            gates = self.cluster_file.feature_gates.get(name) if self.cluster_file is not None else None
            cfg.write_text(install.manager_config(name, comp, self.ports[f"webhook-{name}"], certs, gates))
            procs.append(self._spawn(name, [op_bins[name], f"--config={cfg}"],
                                     env={"KUBECONFIG": str(self.kubeconfig), "TMPDIR": str(tmpdir)}))
        to_args = [op_bins["training-operator"], "--metrics-bind-address=0", "--health-probe-bind-address=0",
                   f"--webhook-server-port={self.ports['webhook-training-operator']}", "--leader-elect=false",
                   f"--kubeconfig={self.kubeconfig}"]
        to_args += install.training_operator_args(self, self.cluster_file)
        procs.append(self._spawn("training-operator", to_args,
                                 env={"MY_POD_NAMESPACE": install.TRAINING_OPERATOR_NAMESPACE,
                                      "TMPDIR": str(certs_of["training-operator"])}))
        # the configurations first: the Training Operator's rotator injects its CA into its own and waits for it
        install.apply_webhooks(self, trainer, jobset, to)
        self.mark("webhook configurations applied")
        for p in procs:
            port = self.ports[f"webhook-{p.name}"]
            self._wait(f"{p.name}'s webhook server (port {port})", lambda port=port: self._tls_ready(port), 120, p)
        self.mark("webhook servers serving TLS")
        install.wait_webhooks(self)
        self.mark("webhooks answering")
        install.apply_runtimes(self, trainer)
        self.mark("runtimes installed")
        self.notes = install.apply_cluster_objects(self, self.cluster_file)

    # -- stop -------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """SIGTERM to every component (the managers first), SIGKILL to what is left after a short grace: the
        store is the run's own, so nothing needs a graceful shutdown (kube-apiserver's takes 10 s and more)."""
        for p in reversed(self.procs):
            if p.popen.poll() is None:
                try:
                    os.killpg(p.popen.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        end = time.monotonic() + 3
        for p in reversed(self.procs):
            try:
                p.popen.wait(max(0.05, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.popen.wait()
        self.procs.clear()
        if self.owned_folder and os.environ.get("KDT_LIVE_KEEP") != "1":
            shutil.rmtree(self.folder, ignore_errors=True)
        elif self.kubeconfig.exists():
            self.kubeconfig.unlink()      # no stale kubeconfig pointing at a stopped server


"""Local processes for the pods of a target, kept and restarted as the kubelet and the operators would.

Every process of a run carries `KDT_RUN=<run>/<pod>/<incarnation>/<container>` in
its environment, and kdt is the child subreaper of everything it starts, so a
container's processes are found (and killed) even after torchrun forked them into
sessions of their own, and nothing outlives the run.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..findings import Finding
from ..operators.framework import controller as C
from ..operators import gitsync
from ..operators.trainer_v2 import initializers as INIT
from . import gitsync_local, initializer_local, netshim
from .faults import Fault
from .image import APP_TRAINING, FILLERS, facts

image_facts = functools.lru_cache(maxsize=None)(facts)   # a Dockerfile is read once per run, not per container start
from ..operators.framework.pods import Container, EnvError, LocalPod, claim_inputs, container_env, describe_argv, expand_refs, volume_folders
from .timeline import Timeline, read_tagged

PASS_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "LD_LIBRARY_PATH")
# What every container of a local run gets besides its own env: nothing is downloaded (a model id falls
# back as it would offline), and gRPC (TensorFlow) resolves names through getaddrinfo, where the
# run's names are, not with its own DNS client.
LOCAL_ENV = {"HF_HUB_OFFLINE": "1", "GRPC_DNS_RESOLVER": "native"}
# The last line of a Python traceback (`ValueError: ...`), as a worker prints it (torchrun may prefix
# `[rank0]: `): what a crash loop repeats.
_ERROR_LINE = re.compile(r"^(?:\[(?:default)?rank\d+\]:\s*)?((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit)(?::\s.*)?)$")


def set_subreaper() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when kdt dies, even by SIGKILL (PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _nslookup(python: str) -> str:
    """`nslookup NAME` answered from the run's names (the operator's init container waits with it)."""
    code = ("import socket,sys\n"
            "names=[a for a in sys.argv[1:] if not a.startswith('-')]\n"
            "try:\n"
            "    ip=socket.getaddrinfo(names[0],None,socket.AF_INET)[0][4][0]\n"
            "except (IndexError,OSError):\n"
            "    print(f\"** server can't find {names[0] if names else ''}: NXDOMAIN\");sys.exit(1)\n"
            "print(f'Name:\\t{names[0]}\\nAddress: {ip}')\n")
    return f"#!/bin/sh\nexec {python} -c \"$(cat <<'PY'\n{code}PY\n)\" \"$@\"\n"


_GUARDIAN = """
import os, signal, sys, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
key = b"KDT_RUN=" + sys.argv[1].encode() + b"/"
sys.stdin.buffer.read()          # EOF: the kdt that started this is gone, however it ended
for _ in range(200):
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if key in f.read():
                        found.append(int(d))
            except OSError:
                pass
    if not found:
        break
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
"""


def start_guardian(run_id: str):
    """A process that outlives kdt by a moment: when kdt is gone (a crash, SIGKILL: nothing of kdt runs then)
    it kills every process of the run, which PR_SET_PDEATHSIG alone does not reach (a container's
    grandchildren: torchrun's workers). It waits on a pipe only kdt holds; its own session, so Ctrl-C in
    the terminal does not end it first."""
    r, w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-c", _GUARDIAN, run_id], stdin=r, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    os.close(r)
    os.set_inheritable(w, False)
    return proc, w


def marked_pids(prefix: str) -> list[int]:
    """Live processes whose KDT_RUN value starts with `prefix`."""
    key = b"KDT_RUN=" + prefix.encode()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if any(item.startswith(key) for item in env.split(b"\0")):
            out.append(int(d))
    return out


@dataclass
class Proc:
    container: Container
    pid: int
    marker: str
    log: Path
    offset: int = 0
    code: int | None = None
    popen: object = None


@dataclass
class PodRun:
    pod: LocalPod
    incarnation: int = 0
    dir: Path | None = None
    procs: dict[str, Proc] = field(default_factory=dict)      # running container name -> Proc
    exited: dict[str, int] = field(default_factory=dict)      # main containers that ended, not restarting
    init_next: int = 0
    pending_restart: dict[str, float] = field(default_factory=dict)   # container -> when to start it again
    deleting: bool = False
    ended: bool = False
    start_at: float = 0.0
    rank_pids: dict[int, int] = field(default_factory=dict)   # global rank -> worker pid (from [DDP] lines)
    errors: dict[str, list] = field(default_factory=dict)     # error line -> [attempts, last seen, by which pid]


@dataclass
class Options:
    run_dir: Path
    root: Path
    env: dict[str, str] = field(default_factory=dict)        # --env, and the run's knobs
    timeout: float = 900.0
    restart_delay: float = 1.0
    grace: float = 5.0
    success_grace: float = 60.0
    faults: list[Fault] = field(default_factory=list)
    claims: dict[str, Path] = field(default_factory=dict)    # --volume CLAIM=DIR
    crash_loop_limit: int = 3                                 # --crash-loop-limit
    # (document, path) where a container's command/args were written: the source kind's `field_origin`
    # (kdt.kinds), which `kdt run` hands in (the supervisor sits below the registry); the template by default.
    field_origin: Callable[[LocalPod, Container, str], tuple] = \
        lambda pod, c, key: (c.doc, c.path + (key,))
    git_repos: dict[str, Path] = field(default_factory=dict)  # --git-repo URL=PATH
    # a program missing here stops the run before it starts; `kdt run --live` leaves it to the node agent,
    # whose pod fails as on a cluster (ErrImagePull, kdt.live.node)
    check_programs: bool = True
    # env a container gets from a controller kdt stands in for, besides its manifest's (Trainer's TrainJobStatus
    # plugin: the status endpoint's URL, CA and token files of this run; kdt.run.trainer_status)
    pod_env: Callable[[LocalPod, Container], dict] | None = None


class Supervisor:
    """Starts, watches, faults and reaps a run's processes. `kdt run` drives it whole (`run`: its controllers
    decide what an exit means); another driver (the node agent of `kdt run --live`, kdt.live.node) composes its
    public process API: `prepare`, `command`, `start_container`, `scan`, `reap`, `signal_marked`, `delete_pod`,
    `cleanup`, handing in `exited` (what an exit means to it) and `crash_loops=False` (a cluster lives with them)."""

    def __init__(self, pods: list[LocalPod], controllers: list[C.Controller], objects: dict, opts: Options,
                 timeline: Timeline, extra_names: dict[str, list[str]] | None = None,
                 exited: Callable[[PodRun, Proc], None] | None = None, crash_loops: bool = True):
        self.pods = pods
        self.controllers = controllers
        self.by_pod = {p.name: c for c in controllers for p in (s.pod for s in c.pods.values())}
        self.objects = objects
        self.opts = opts
        self.tl = timeline
        self.local_notes: list[str] = []      # what a local run does instead of a pod's image (initializers)
        self.run_id = uuid.uuid4().hex[:12]
        self.runs = {p.name: PodRun(p) for p in pods}
        self.mains: dict[int, tuple[PodRun, Proc]] = {}
        self.max_step = -1
        self.extra_names = extra_names or {}
        self._resolved: dict[tuple, str | None] = {}     # (--git-repo source, ref) -> commit, checked once
        self.exited = exited or self._on_exit             # a container's process ended (not while deleting)
        self.crash_loops = crash_loops                     # read crash loops from the output (offline: yes)

    # ------------------------------------------------------------- preparation
    def prepare(self) -> list[Finding]:
        """Addresses, the hosts table, the python wrappers; every container's command and ports checked."""
        o = self.opts
        for d in ("bin", "logs", "pods", "volumes"):
            (o.run_dir / d).mkdir(parents=True, exist_ok=True)
        for name in ("python3", "python"):
            w = o.run_dir / "bin" / name
            w.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
            w.chmod(0o755)
        w = o.run_dir / "bin" / "nslookup"
        w.write_text(_nslookup(sys.executable))
        w.chmod(0o755)
        names: dict[str, list[str]] = {}
        for p in self.pods:
            names.setdefault(p.ip, []).extend(p.dns_names())
        for ip, extra in self.extra_names.items():
            names.setdefault(ip, []).extend(extra)
        self.hosts = o.run_dir / "hosts"
        netshim.write_hosts(self.hosts, names)
        self.shim = netshim.library()
        problems: list[Finding] = []
        reported: set = set()      # claims already reported (once per run, not per pod)
        for p in self.pods:
            if not p.containers:
                problems.append(p.source.finding("run", f"pod {p.name} has no containers: nothing to start"))
                continue
            for c in [*p.init_containers, *p.containers]:
                try:
                    argv, env, (mounts, _) = self.command(p, c, o.run_dir / "pods" / p.name)
                except EnvError as exc:
                    if gitsync.is_git_sync(c.spec.get("image")):
                        if exc.message in reported:
                            continue       # the same clone of every pod: one line
                        reported.add(exc.message)
                    problems.append(c.doc.finding("run", f"pod {p.name} container {c.name}: {exc.message}", c.path + exc.path))
                    continue
                problems += self._check_command(p, c, argv, env)
                problems += self._check_claims(p, c, mounts, reported)
            problems += self._check_ports(p)
        return problems

    def _check_claims(self, p: LocalPod, c: Container, mounts, reported: set) -> list[Finding]:
        """A claim the command reads from that holds nothing there: one line per claim, before anything starts."""
        out = []
        for ci in claim_inputs(p, c):
            local = Path(mounts.rewrite(ci.path))
            if ci.claim in reported or local.exists():
                continue
            reported.add(ci.claim)
            given = self.opts.claims.get(ci.claim)
            if given is not None:
                how = f"the folder given for it ({given}) has no {ci.path[len(ci.mount):].lstrip('/') or '.'}"
            else:
                script = next((s for s in FILLERS if s in " ".join(map(str, [*(c.spec.get('command') or []),
                                                                            *(c.spec.get('args') or [])]))), None)
                how = (f"a local run makes claim {ci.claim} an empty folder: pass --volume {ci.claim}=DIR with a folder "
                       "that holds it" + (f"; {FILLERS[script]}" if script else ""))
            doc, path = self.opts.field_origin(p, c, "args" if c.spec.get("args") else "command")
            out.append(doc.finding("run", f"pod {p.name} container {c.name} reads {ci.path} ({ci.flag}) from claim "
                                          f"{ci.claim}, which holds nothing there: {how}", path))
        return out

    def _check_command(self, p: LocalPod, c: Container, argv: list[str], env: dict) -> list[Finding]:
        if not argv:
            doc, path = self.opts.field_origin(p, c, "command")
            return [doc.finding("run", f"pod {p.name} container {c.name}: no command, and the image "
                                       f"{c.spec.get('image')!r} gives none a local run knows", path)]
        exe = argv[0]
        if not self.opts.check_programs:
            return []
        found = (os.access(exe, os.X_OK) and os.path.isfile(exe)) if "/" in exe else \
            shutil.which(exe, path=env.get("PATH")) is not None
        if found:
            return []
        key = "command" if c.spec.get("command") else "args"
        doc, path = self.opts.field_origin(p, c, key)
        return [doc.finding("run", f"pod {p.name} container {c.name}: {exe!r} does not exist on this machine "
                                   f"(the image {c.spec.get('image')!r} has it; a local run starts the command as a "
                                   f"program of this machine)", path + (0,))]

    def _check_ports(self, p: LocalPod) -> list[Finding]:
        out = []
        for c in p.containers:
            for j, port in enumerate(c.spec.get("ports") or []):
                if not isinstance(port, dict) or str(port.get("protocol", "TCP")) != "TCP":
                    continue
                try:
                    number = int(port.get("containerPort"))
                except (TypeError, ValueError):
                    continue
                with socket.socket() as s:
                    # As servers bind (SO_REUSEADDR): a listener blocks the port, a closing connection does not.
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    try:
                        s.bind((p.ip, number))
                    except OSError as exc:
                        out.append(c.doc.finding("run", f"pod {p.name}: port {number} is in use on {p.ip} "
                                                        f"({exc.strerror}): another program listens on it; stop it "
                                                        "or free the port", c.path + ("ports", j, "containerPort")))
        return out

    def command(self, p: LocalPod, c: Container, pod_dir: Path) -> tuple[list[str], dict, object]:
        """argv and env of a container as it starts here: image env, the kubelet's env, paths mapped."""
        o = self.opts
        img = image_facts(str(c.spec.get("image", "")), o.root)
        image_paths = {}
        if img.dockerfile is not None:
            image_paths[APP_TRAINING] = o.root / "training"
            home = img.env.get("HOME")
            if home:
                image_paths[home] = pod_dir / "home"
            if img.workdir:
                image_paths.setdefault(img.workdir, pod_dir / "workdir")
        mounts = volume_folders(p, c, o.run_dir, image_paths, pod_dir, o.claims)
        env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
        # The run's wrappers, then the programs beside this Python (torchrun, ...): the local stand-in for
        # the image's Python environment; then this machine's.
        env["PATH"] = os.pathsep.join([str(o.run_dir / "bin"), str(Path(sys.executable).parent),
                                       env.get("PATH", "/usr/bin:/bin")])
        env["HOSTNAME"] = p.hostname
        # A pod on a cluster has cores of its own; here every pod shares this machine's. Without this,
        # each process starts a thread per core and they all contend (the manifest's own value wins).
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // max(1, len(self.pods))))
        env.update(img.env)
        stand_in = not c.spec.get("command") and c.name in INIT.OUTPUT     # a Trainer initializer: _initializer
        env.update(container_env(p, dataclasses.replace(c, spec={k: v for k, v in c.spec.items() if k != "envFrom"})
                                 if stand_in else c, self.objects))
        env.update(LOCAL_ENV)
        if o.pod_env is not None:
            env.update(o.pod_env(p, c))
        env.update(o.env)
        env = {k: mounts.rewrite(v) for k, v in env.items()}
        command = c.spec.get("command")
        args = c.spec.get("args")
        if command:
            argv = list(command) + list(args or [])
        else:
            argv = list(img.entrypoint) + (list(args) if args is not None else list(img.cmd))
        argv = [mounts.rewrite(expand_refs(a, env)) for a in argv]
        if gitsync.is_git_sync(c.spec.get("image")):
            argv = self._git_sync(p, c, argv, env, mounts)
        elif stand_in and INIT.STORAGE_URI_ENV in env:
            argv = self._initializer(p, c, env, mounts)
        cwd = c.spec.get("workingDir") or img.workdir
        return argv, env, (mounts, mounts.rewrite(cwd) if cwd else str(pod_dir / "workdir"))

    def _initializer(self, p: LocalPod, c: Container, env: dict, mounts) -> list[str]:
        """A Trainer initializer (its image's entrypoint, STORAGE_URI set) runs as kdt/run/initializer_local.py:
        nothing downloads here, the folder of its claim is the source, said in one line (its Secret, the
        credentials of a download, is not read)."""
        out = INIT.OUTPUT[c.name]
        mount = next((m for m in c.spec.get("volumeMounts") or [] if isinstance(m, dict)
                      and INIT.written_to(c.name, [m])), {})
        vol = next((v for v in p.spec.get("volumes") or [] if isinstance(v, dict) and v.get("name") == mount.get("name")), {})
        claim = str((vol.get("persistentVolumeClaim") or {}).get("claimName") or "")
        line = (f"{c.name}: {env[INIT.STORAGE_URI_ENV]} is not downloaded by a local run: the trainer reads "
                f"{mounts.rewrite(out)}" + (f" (claim {claim}, --volume {claim}=DIR)" if claim else ""))
        if line not in self.local_notes:
            self.local_notes.append(line)
        return [sys.executable, initializer_local.__file__, "--job", c.name, "--uri", env[INIT.STORAGE_URI_ENV],
                "--output", mounts.rewrite(out), "--claim", claim]

    def _git_sync(self, p: LocalPod, c: Container, argv: list[str], env: dict, mounts) -> list[str]:
        """A git-sync container runs as kdt/run/gitsync_local.py: its repository is the local clone or bundle
        of --git-repo, its ref resolved there when the container starts, into its root's folder. What it
        cannot run is an EnvError located at the field (the repository, the ref, the root, a Secret)."""
        raw = {k: str(v) for k, v in container_env(p, c, self.objects).items()}
        s = gitsync.settings([str(a) for a in [*(c.spec.get("command") or []), *(c.spec.get("args") or [])]], raw)

        def where(key: str) -> tuple:
            src = s.source.get(key, "default")
            for i, e in enumerate(c.spec.get("env") or []):
                if isinstance(e, dict) and e.get("name") == src:
                    return ("env", i, "value")
            return ("image",)
        if gitsync.major(str(c.spec.get("image"))) == 3:
            raise EnvError(("image",), "a local run runs git-sync v4 (the GITSYNC_* names); this is a v3 image")
        if shutil.which("git") is None:
            raise EnvError(("image",), "the git program is not on this machine's PATH: a local run clones with it")
        vols = {str(v.get("name")): v for v in p.spec.get("volumes") or [] if isinstance(v, dict)}
        for i, m in enumerate(c.spec.get("volumeMounts") or []):
            sec = (vols.get(str((m or {}).get("name"))) or {}).get("secret")
            if isinstance(sec, dict) and not sec.get("optional") and ("Secret", str(sec.get("secretName"))) not in self.objects:
                raise EnvError(("volumeMounts", i), f"Secret {sec.get('secretName')!r} (volume {m.get('name')}) is not in "
                                                    "the target: on a cluster the pod never starts; add the Secret to the "
                                                    "target (a local clone needs no credentials: any key will do)")
        url = s.get("repo") or ""
        source = self.opts.git_repos.get(url)
        if source is None:
            given = ", ".join(sorted(self.opts.git_repos)) or "none"
            raise EnvError(where("repo"), f"git-sync clones {url or '(no repository)'}: a local run has no network; pass "
                                          f"--git-repo {url or 'URL'}=PATH (a clone or a bundle of it; given: {given})")
        ref = s.get("ref") or gitsync.V4_DEFAULT_REF
        key = (str(source), ref)
        if key not in self._resolved:
            self._resolved[key] = gitsync_local.resolve(str(source), ref)
        if self._resolved[key] is None:
            raise EnvError(where("ref"), f"ref {ref!r} is not a commit of {source} (--git-repo {url}): nothing to clone")
        root = str(s.get("root"))
        local_root = mounts.rewrite(root)
        if local_root == root:
            raise EnvError(where("root"), f"git-sync's root {root} is on no volume of the container: the clone would be "
                                          f"lost with the container (and land on this machine's {root})")
        return [sys.executable, gitsync_local.__file__, "--repo", url, "--source", str(source), "--ref", ref,
                "--root", local_root, "--link", str(s.get("link") or url.rstrip("/").split("/")[-1])]

    # ------------------------------------------------------------- processes
    def start_container(self, r: PodRun, c: Container) -> None:
        o = self.opts
        argv, env, (mounts, cwd) = self.command(r.pod, c, r.dir)
        marker = f"{self.run_id}/{r.pod.name}/{r.incarnation}/{c.name}"
        env.update({"KDT_RUN": marker, "KDT_RUN_HOSTS": str(self.hosts), "KDT_RUN_POD_IP": r.pod.ip,
                    "KDT_RUN_HOSTNAME": r.pod.hostname,
                    "LD_PRELOAD": os.pathsep.join(filter(None, [str(self.shim), env.get("LD_PRELOAD")]))})
        Path(cwd).mkdir(parents=True, exist_ok=True)
        log = o.run_dir / "logs" / f"{r.pod.name}.{c.name}.log"
        with open(log, "ab") as out:
            out.write(f"----- kdt run: {r.pod.name}/{c.name} starts (pod incarnation {r.incarnation}) -----\n".encode())
            out.flush()
            offset = out.tell()
            popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=cwd, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        proc = Proc(c, popen.pid, marker, log, offset, popen=popen)
        r.procs[c.name] = proc
        self.mains[popen.pid] = (r, proc)
        what = "init container" if c.init else "container"
        self.tl.add("start", r.pod.shown, f"{what} {c.name}: {describe_argv(argv)[:160]}", ip=r.pod.ip,
                    incarnation=r.incarnation)
        if not getattr(self, "_shown_mounts", None):
            self._shown_mounts = True
            self.tl.add("note", "", f"paths: {mounts.show()}")

    def start_pod(self, r: PodRun) -> None:
        r.incarnation += 1
        r.dir = self.opts.run_dir / "pods" / f"{r.pod.name}.{r.incarnation}"
        r.dir.mkdir(parents=True, exist_ok=True)
        r.procs, r.exited, r.init_next, r.pending_restart = {}, {}, 0, {}
        r.deleting, r.ended, r.rank_pids = False, False, {}
        self._advance(r)

    def _advance(self, r: PodRun) -> None:
        """Start the next init container, or the main containers once every init container succeeded."""
        if r.init_next < len(r.pod.init_containers):
            self.start_container(r, r.pod.init_containers[r.init_next])
            return
        for c in r.pod.containers:
            self.start_container(r, c)

    def signal_marked(self, prefix: str, sig: int) -> int:
        n = 0
        for pid in marked_pids(prefix):
            try:
                os.kill(pid, sig)
                n += 1
            except ProcessLookupError:
                pass
        return n

    def delete_pod(self, r: PodRun, grace: float) -> None:
        """Stop every process of the pod: SIGTERM, then SIGKILL after `grace` seconds (0: SIGKILL at once)."""
        r.deleting = True
        prefix = f"{self.run_id}/{r.pod.name}/{r.incarnation}/"
        if grace > 0:
            self.signal_marked(prefix, signal.SIGTERM)
            deadline = time.time() + grace
            while time.time() < deadline and marked_pids(prefix):
                self.reap()
                time.sleep(0.05)
        self.signal_marked(prefix, signal.SIGKILL)
        deadline = time.time() + 10
        while time.time() < deadline and (marked_pids(prefix) or any(p.code is None for p in r.procs.values())):
            self.reap()
            time.sleep(0.02)
        self.reap()
        r.procs = {}
        r.pending_restart = {}
        r.ended = True

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            entry = self.mains.pop(pid, None)
            if entry is None:
                continue      # an orphan that came to us as subreaper
            r, proc = entry
            code = os.waitstatus_to_exitcode(status)
            proc.code = 128 - code if code < 0 else code     # the kubelet reports a signal N as 128+N
            if proc.popen is not None:
                proc.popen.returncode = proc.code
            self.scan(r, proc)
            if not r.deleting:
                self.exited(r, proc)

    def _on_exit(self, r: PodRun, proc: Proc) -> None:
        c, code = proc.container, proc.code
        # The container's PID 1 is gone: so is every other process in it.
        self.signal_marked(proc.marker, signal.SIGKILL)
        r.procs.pop(c.name, None)
        ctl = self.by_pod[r.pod.name]
        self.tl.add("exit", r.pod.shown, f"{'init container' if c.init else 'container'} {c.name} exited with code {code}",
                    code=code)
        policy = r.pod.restart_policy
        if c.init:
            if code == 0:
                r.init_next += 1
                self._advance(r)
            elif C.restarts_in_place(policy, code, init=True):
                self._after(ctl.on_restart(r.pod.name))
                r.pending_restart[c.name] = time.time() + self.opts.restart_delay
            else:
                r.exited[c.name] = code
                self._pod_end(r, False, code)
            return
        if code == 0 and ctl.keep_running_after_zero_exit(r.pod.name):
            r.exited[c.name] = code
            ctl.on_finished(r.pod.name)
            return
        if C.restarts_in_place(policy, code):
            self.tl.add("restart", r.pod.shown, f"container {c.name} restarts in place (restartPolicy {policy})")
            self._restart_in_place(r, c, ctl)
            return
        r.exited[c.name] = code
        if len(r.exited) == len(r.pod.containers):
            failed = [v for v in r.exited.values() if v != 0]
            self._pod_end(r, not failed, failed[0] if failed else 0)

    def _restart_in_place(self, r: PodRun, c: Container, ctl: C.Controller) -> None:
        """The kubelet starts the container again, unless the controller's answer to the restart
        (a failed Job, a JobSet restart, a verdict) already removed the pod."""
        before = r.incarnation
        self._after(ctl.on_restart(r.pod.name))
        if r.incarnation == before and not r.deleting and not ctl.verdict:
            r.pending_restart[c.name] = time.time() + self.opts.restart_delay

    def _pod_end(self, r: PodRun, ok: bool, code: int) -> None:
        r.ended = True
        self.tl.add("pod-" + ("succeeded" if ok else "failed"), r.pod.shown, f"pod {'Succeeded' if ok else 'Failed'}")
        self._after(self.by_pod[r.pod.name].on_pod_end(r.pod.name, ok, code))

    def _after(self, actions: list) -> None:
        for action, arg in actions:
            if action == C.RECREATE:
                r = self.runs[arg]
                if r.procs:
                    self.delete_pod(r, 0)
                self.tl.add("recreate", arg, "the controller creates the pod again")
                self.by_pod[arg].on_recreated(arg)
                r.start_at = time.time() + self.opts.restart_delay
                r.ended = False
                r.deleting = True       # not running until start_at
            elif action == C.RESTART_PODS:
                self.tl.add(arg.event, "", arg.why)
                runs = [self.runs[n] for n in arg.pods]
                for r in runs:
                    if r.procs:
                        self.delete_pod(r, self.opts.grace)
                for r in runs:
                    labels = r.pod.obj.setdefault("metadata", {}).setdefault("labels", {})
                    for key in arg.bump:
                        labels[key] = str(int(labels.get(key) or 0) + 1)
                    self.by_pod[r.pod.name].on_recreated(r.pod.name)
                    r.start_at = time.time() + self.opts.restart_delay
                    r.ended = False
                    r.deleting = True

    # ------------------------------------------------------------- logs and faults
    def scan(self, r: PodRun, proc: Proc) -> None:
        try:
            with open(proc.log, "rb") as f:
                f.seek(proc.offset)
                chunk = f.read()
        except OSError:
            return
        end = chunk.rfind(b"\n")
        if end < 0:
            return
        proc.offset += end + 1
        for raw in chunk[:end].decode("utf-8", "replace").splitlines():
            parsed = read_tagged(raw)
            if not parsed:
                if self.crash_loops:
                    self._error_line(r, proc, raw)
                continue
            tag, f = parsed
            if tag == "DDP" and "rank" in f and "pid" in f:
                r.rank_pids[int(f["rank"])] = int(f["pid"])
            elif tag == "TRAIN" and "step" in f:
                r.errors.clear()       # progress: whatever failed before was not a loop
                step = int(f["step"])
                self.max_step = max(self.max_step, step)
                lowest = min(r.rank_pids) if r.rank_pids else int(f.get("rank", 0))
                if int(f.get("rank", 0)) == lowest:
                    self.tl.add("train", r.pod.shown, f"step {step} loss {f.get('loss')}", step=step,
                                loss=f.get("loss"), rank=f.get("rank"))
            elif tag == "RESUME":
                src = f.get("source", f.get("path", "none"))
                self.tl.add("resume", r.pod.shown, f"rank {f.get('rank')} from {'nothing' if src == 'none' else src} "
                                                  f"(step {f.get('step')})", step=f.get("step"), rank=f.get("rank"))
            elif tag == "HEAL":
                # a torchft replica group received (or served) a peer's live state (trainkit/ft.py)
                self.tl.add("heal", r.pod.shown, f"replica group {f.get('replica_group')} {f.get('role')} the live "
                                                f"state at step {f.get('step')} (weights "
                                                f"{str(f.get('weights_sha256', ''))[:16]})",
                            **{k: f[k] for k in f if k != "ts"})
            elif tag == "FT" and f.get("lighthouse") == "lost":
                self.tl.add("note", r.pod.shown, f"replica group {f.get('replica_group')}: the Lighthouse is lost; "
                                                f"step {f.get('step')} saved, restarting to wait for it")
            elif tag == "DONE":
                self.tl.add("done", r.pod.shown, f"rank {f.get('rank')} step {f.get('step')} weights "
                                                f"{str(f.get('weights_sha256', ''))[:16]}", **{k: f[k] for k in f if k != "ts"})

    def _error_line(self, r: PodRun, proc: Proc, raw: str) -> None:
        """A pod whose processes end with the same error line at every attempt, with no training step in
        between, is crash-looping (on a cluster: restarted with back-off forever): after
        `crash_loop_limit` attempts the run's verdict is CrashLoopBackOff with that line. An attempt is a
        container process; inside one (torchrun restarting its workers), repeats a second apart or more
        (the workers of one attempt fail together)."""
        m = _ERROR_LINE.match(raw.strip())
        if not m:
            return
        line = m.group(1)
        now = time.time()
        seen = r.errors.setdefault(line, [0, 0.0, None])
        if seen[2] != proc.pid or now - seen[1] >= 1.0:
            seen[0] += 1
        seen[1], seen[2] = now, proc.pid
        ctl = self.by_pod[r.pod.name]
        if seen[0] >= self.opts.crash_loop_limit and not ctl.verdict:
            ctl.verdict = C.Verdict(False, "CrashLoopBackOff",
                                    f"pod {r.pod.name} failed the same way {seen[0]} times with no training step "
                                    f"between (--crash-loop-limit {self.opts.crash_loop_limit}): {line}")
            self.tl.add("note", r.pod.shown, f"crash loop: {line}")

    def _fault(self, fault: Fault) -> None:
        fault.done = True
        r = self.runs.get(fault.pod)
        if r is None or r.deleting or not r.procs:
            self.tl.add("note", fault.pod, f"fault {fault.spec}: the pod is not running; nothing to do")
            return
        sig_name = signal.Signals(fault.sig).name
        if fault.action == "lose":
            self.tl.add("lose", r.pod.shown, "the pod is lost (its node is gone): every process killed")
            self.delete_pod(r, 0)
            self._after(self.by_pod[r.pod.name].on_lost(r.pod.name))
            return
        if fault.rank is not None:
            pid = r.rank_pids.get(fault.rank)
            if pid is None or pid not in marked_pids(f"{self.run_id}/{r.pod.name}/{r.incarnation}/"):
                self.tl.add("note", r.pod.shown, f"fault {fault.spec}: no live worker of rank {fault.rank} in this pod")
                return
            self.tl.add("kill", r.pod.shown, f"{sig_name} to the worker of rank {fault.rank} (pid {pid})")
            os.kill(pid, fault.sig)
            return
        proc = next(iter(r.procs.values()))
        self.tl.add("kill", r.pod.shown, f"{sig_name} to container {proc.container.name}'s main process (pid {proc.pid})")
        os.kill(proc.pid, fault.sig)

    # ------------------------------------------------------------- the run
    def run(self) -> C.Verdict:
        set_subreaper()
        self.guardian = start_guardian(self.run_id)
        for c in self.controllers:
            for n in c.notes:
                self.tl.add("note", "", n)
        for n in self.local_notes:
            self.tl.add("note", "", n)
        for r in self.runs.values():
            self.start_pod(r)
        deadline = time.time() + self.opts.timeout
        verdict_at = None
        while True:
            self.reap()
            now = time.time()
            for r in self.runs.values():
                for proc in list(r.procs.values()):
                    self.scan(r, proc)
                for cname, when in list(r.pending_restart.items()):
                    if now >= when:
                        del r.pending_restart[cname]
                        c = next(x for x in [*r.pod.init_containers, *r.pod.containers] if x.name == cname)
                        self.start_container(r, c)
                if r.deleting and r.start_at and now >= r.start_at:
                    r.start_at = 0.0
                    self.start_pod(r)
            for fault in self.opts.faults:
                if fault.due(self.tl.now(), self.max_step):
                    self._fault(fault)
            verdicts = [c.verdict for c in self.controllers if not c.serves]
            if any(v is not None and not v.succeeded for v in verdicts):
                break                  # one job failed: the run has its verdict
            if all(verdicts):
                failed = [v for v in verdicts if not v.succeeded]
                running = [r for r in self.runs.values() if r.procs and not self.by_pod[r.pod.name].serves]
                if failed or not running:
                    break
                verdict_at = verdict_at or now
                if now - verdict_at > self.opts.success_grace:
                    self.tl.add("note", "", f"the job succeeded; pods still running after {self.opts.success_grace:.0f} s "
                                            f"are stopped: {', '.join(r.pod.name for r in running)}")
                    break
            if now > deadline:
                return C.Verdict(False, "Timeout", f"no verdict after {self.opts.timeout:.0f} s (--timeout)")
            time.sleep(0.05)
        failed = [v for v in verdicts if v is not None and not v.succeeded]
        return failed[0] if failed else verdicts[0]

    def cleanup(self) -> int:
        """Kill whatever of this run is still alive; the number of processes that were."""
        for r in self.runs.values():
            r.deleting, r.start_at, r.pending_restart = True, 0.0, {}   # the end of the run: nothing restarts
        n = 0
        for _ in range(50):
            left = marked_pids(f"{self.run_id}/")
            if not left:
                break
            n = max(n, len(left))
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.reap()
            time.sleep(0.05)
        self.reap()
        return n

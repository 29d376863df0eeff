"""cluster: a local control plane, the real API server and operators, for `--live` checks and `kdt run --live`.

    kdt cluster up [--trainer 2.3] [--training-operator 1.9] [--name NAME] [--real-nodes N [--image ARCHIVE]]
    kdt cluster status [--name NAME]
    kdt cluster down [--name NAME]
    kdt cluster build             every binary of every supported release (make test runs it first)

`up` builds what is missing (Go 1.26+; a cold build takes many minutes, the binaries are kept in the user's
cache keyed by their versions), then starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
the managers of Trainer (with the JobSet it ships) and the Training Operator, with their CRDs and webhooks,
on free loopback ports; it prints the kubeconfig the pinned kubectl uses and returns, leaving the control plane
running until `down`. With `--real-nodes N`, N real nodes join it: each its own kubelet, containerd and
runc in a network namespace of its own, with CoreDNS and kube-proxy, every `--image` OCI archive imported
into each node (kdt.live.realnodes, docs/live.md). `status` says what runs and whether the API server is ready. Nothing is left running
after `down`, and a control plane whose owner died is cleaned by the next `up`.
Exit codes: 0 done, 1 a component failed (named, with the end of its log), 2 bad usage or no Go.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from . import Parser, invoke
from .. import versions
from ..errors import UsageError
from ..live import kept
from ..live.kept import alive as _alive


def up(args) -> int:
    import shutil
    from ..live import build, releases as R
    folder = kept.folder(args.name)
    st = kept.state_at(folder)
    if st:
        print(f"live: already up ({st['trainer']=}, {st['training_operator']=}); KUBECONFIG={st['kubeconfig']}")
        return 0
    if kept.daemon_pid(folder):
        raise UsageError(f"a control plane named {args.name!r} is starting (pid {kept.daemon_pid(folder)}); "
                         f"`kdt cluster down --name {args.name}` stops it")
    R.ReleaseSet(args.trainer, args.training_operator).operators()     # bad releases: one line, exit 2
    shutil.rmtree(folder, ignore_errors=True)                          # a crashed run's leftovers: start clean
    folder.mkdir(parents=True)
    # Build in the foreground (its progress is this command's output), start in the daemon.
    build.control_plane()
    if args.real_nodes:
        from ..live import realnodes
        realnodes.preflight()
        for img in args.image:
            if not Path(img).is_file():
                raise UsageError(f"--image {img}: no such OCI archive")
        build.node()
    if not args.control_plane_only:
        for c in R.ReleaseSet(args.trainer, args.training_operator).operators():
            build.operator(c)
    log = folder / "daemon.log"
    with open(log, "ab") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "kdt.live.daemon", str(folder), args.trainer,
                                 args.training_operator, *(["--control-plane-only"] if args.control_plane_only else []),
                                 *(["--real-nodes", str(args.real_nodes)] if args.real_nodes else []),
                                 *(a for img in args.image for a in ("--image", str(Path(img).resolve()))),
                                 ], stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    (folder / "daemon.pid").write_text(str(proc.pid))
    shown = 0
    deadline = time.monotonic() + args.timeout
    while True:
        lines = log.read_text(errors="replace").splitlines()
        for ln in lines[shown:]:
            print(ln, file=sys.stderr, flush=True)
        shown = len(lines)
        st = kept.state_at(folder)
        if st:
            print(f"KUBECONFIG={st['kubeconfig']}")
            print(f"live: up in {st['started_s']} s; `kdt cluster down --name {args.name}` stops it", file=sys.stderr)
            return 0
        if proc.poll() is not None:
            err = next((ln for ln in reversed(lines) if ln.startswith("live: error:")), None)
            print(err or f"live: error: the control plane exited ({proc.returncode}); see {log}", file=sys.stderr)
            return 1
        if time.monotonic() > deadline:
            proc.terminate()
            proc.wait(15)
            print(f"live: error: not ready after {args.timeout} s; see {log}", file=sys.stderr)
            return 1
        time.sleep(0.3)


def down(args) -> int:
    import shutil
    folder = kept.folder(args.name)
    pid = kept.daemon_pid(folder)
    if pid:
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < end:
            time.sleep(0.2)
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
    existed = folder.exists()
    from ..live import realnodes
    record = realnodes.record_of(folder / "run")
    for what in realnodes.teardown(record) if record.is_file() else []:
        print(f"live: removed what real nodes left: {what}", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    print(f"live: {args.name}: " + ("stopped" if pid else "not running" + (" (leftovers removed)" if existed else "")),
          file=sys.stderr)
    return 0


def status(args) -> int:
    folder = kept.folder(args.name)
    st = kept.state_at(folder)
    if not st:
        last = ""
        log = folder / "daemon.log"
        if log.exists():
            last = next((ln for ln in reversed(log.read_text(errors="replace").splitlines()) if ln.startswith("live: error:")), "")
        print(f"live: {args.name}: not running" + (f"; last run: {last}" if last else ""))
        return 1 if last else 0
    dead = [n for n, pid in st["components"].items() if not _alive(pid)]
    print(f"live: {args.name}: up, Trainer {st['trainer']}, Training Operator {st['training_operator']}, "
          f"{st['server']}; KUBECONFIG={st['kubeconfig']}"
          + (f"; real nodes: {', '.join(st['real_nodes'])}" if st.get("real_nodes") else ""))
    for n, pid in st["components"].items():
        print(f"  {n:26} pid {pid:<8} {'running' if _alive(pid) else 'EXITED'}")
    return 1 if dead else 0


def build_all(args) -> int:
    """Every binary of every release set (`make test` runs this first; each is built once, then kept)."""
    from ..live import build, releases as R
    import time as _t
    t0 = _t.monotonic()
    build.control_plane()
    build.node()
    done = set()
    for trainer in versions.TRAINER:
        for to in versions.TRAINING_OPERATOR_RELEASES:
            if to != versions.TRAINING_OPERATOR_DEFAULT and not args.all_operator_releases:
                continue
            for c in R.ReleaseSet(trainer, to).operators():
                if (c.name, c.version) not in done:
                    build.operator(c)
                    done.add((c.name, c.version))
    for c in R.schedulers():       # Kueue, coscheduling, KWOK: `kdt run --live --simulate` (kdt.live.schedulers)
        build.operator(c)
    print(f"live: every binary is built ({_t.monotonic() - t0:.0f} s); in {build.cache_root() / 'bin'}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    p = Parser(prog="cluster", description=__doc__)
    p.add_argument("action", choices=("up", "down", "status", "build"))
    p.add_argument("--all-operator-releases", action="store_true",
                   help="build: also the Training Operator releases other than the default")
    p.add_argument("--name", default="default", help="which control plane (several may run; default: default)")
    p.add_argument("--trainer", default=versions.TRAINER_DEFAULT, choices=list(versions.TRAINER),
                   help=f"the Trainer release (and the JobSet it ships) to run (default {versions.TRAINER_DEFAULT})")
    p.add_argument("--training-operator", default=versions.TRAINING_OPERATOR_DEFAULT,
                   choices=list(versions.TRAINING_OPERATOR_RELEASES),
                   help=f"the Training Operator release (default {versions.TRAINING_OPERATOR_DEFAULT})")
    p.add_argument("--control-plane-only", action="store_true",
                   help="start etcd, kube-apiserver, kube-controller-manager and kube-scheduler only (no operator)")
    p.add_argument("--real-nodes", type=int, default=0, metavar="N",
                   help="up: N real nodes (the kubelet, containerd and runc; root, overlayfs and cgroups needed)")
    p.add_argument("--image", action="append", default=[], metavar="ARCHIVE",
                   help="up --real-nodes: an OCI image archive imported into every node (repeatable)")
    p.add_argument("--timeout", type=float, default=300, help="seconds `up` waits for the start, builds excluded")
    args = p.parse_args(argv)
    return {"up": up, "down": down, "status": status, "build": build_all}[args.action](args)


if __name__ == "__main__":
    sys.exit(invoke(main))

"""run: start a target's pods as local processes, as the operator would, on this machine's CPUs.

    kdt run overlays/ddp --nproc-per-node 1 --max-steps 20
    kdt run charts/trainer/ci/scale-512-trainjob.yaml --set nodes=2 --set gpusPerNode=1 --max-steps 10
    kdt run overlays/elastic --kill mnist-elastic-worker-1@step=8 --timeline run.png

The target (an overlay, a chart values file, YAML files or `-`) is expanded by the
merge preview; each pod's containers start with their `command`/`args` as
rendered, the env the operator and the kubelet give them (downward API, the
target's Secrets and ConfigMaps, `$(VAR)`), each pod on a loopback address of its
own that its DNS names resolve to (a preloaded library; see kdt/run/netshim.py),
and its volumes as folders of the run (`/app/training` of the project's image is
the repository's training/). The operators' rules decide what a failure means:
PyTorchJob restartPolicy and backoffLimit, Job backoffLimit and JobSet
failurePolicy, StatefulSet restartPolicy Always.

Knobs act on the object, not on a second command line: --set (chart values),
--nproc-per-node (the job's processes per node), --max-steps and --step-sleep
(TRAINKIT_MAX_STEPS / TRAINKIT_STEP_SLEEP, which the samples read).

Faults: --kill POD[/rank=N]@SECONDS|step=N[:SIGKILL|SIGTERM] and --lose POD@SECONDS|step=N.

Exit: 0 when the job Succeeded, 1 when it Failed (the reason is printed), 2 when the
target cannot be run (one located line each; nothing is started).
"""
from __future__ import annotations

import contextlib
import copy
import re
import sys
import tempfile
from pathlib import Path

from . import Parser, add_trainer_version_arg, invoke
from .. import findings as F
from .. import kinds as K
from .. import targets as T
from ..errors import UsageError
from ..merge_preview import Limit, expand_documents
from ..paths import ROOT
from ..render import render
from ..report import text as text_report


def _env_pair(value: str) -> tuple[str, str]:
    name, sep, val = value.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
        raise UsageError(f"--env {value!r}: expected NAME=VALUE")
    return name, val


def _volume_pair(value: str) -> tuple[str, Path]:
    claim, sep, folder = value.partition("=")
    if not sep or not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", claim) or not folder:
        raise UsageError(f"--volume {value!r}: expected CLAIM=DIR (a PersistentVolumeClaim's name and a folder)")
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise UsageError(f"--volume {value}: {folder} is not a folder")
    return claim, path.resolve()


def _git_repo_pair(value: str) -> tuple[str, Path]:
    """`URL=PATH`: the local clone (a folder) or bundle (a file) a git-sync container's URL clones from."""
    url, sep, path = value.rpartition("=")
    if not sep or not url or not path:
        raise UsageError(f"--git-repo {value!r}: expected URL=PATH (the repository a git-sync container clones, and a "
                         "local clone or bundle of it)")
    p = Path(path).expanduser()
    if not p.exists():
        raise UsageError(f"--git-repo {value}: {path} does not exist")
    import subprocess
    probe = (["git", "-C", str(p), "rev-parse", "--git-dir"] if p.is_dir() else ["git", "bundle", "list-heads", str(p)])
    try:
        ok = subprocess.run(probe, capture_output=True, text=True).returncode == 0
    except OSError:
        raise UsageError(f"--git-repo {value}: the git program is not on this machine's PATH") from None
    if not ok:
        raise UsageError(f"--git-repo {value}: {path} is neither a git repository nor a git bundle")
    return url, p.resolve()


def _gates(text: str) -> dict[str, bool]:
    """`RestartJob=true,InPlaceRestart=false` (the controller's --feature-gates syntax)."""
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise UsageError(f"--jobset-feature-gates {item!r}: expected GATE=true or GATE=false")
        out[name] = value.lower() == "true"
    return out


def _override_nproc(docs, nproc: int) -> list:
    """Processes per node, set where the operator reads it (the job object, by its kind's `set_nproc`),
    never on a command line."""
    out = []
    for d in docs:
        k = K.of(d)
        if k is not None and isinstance(d.data, dict):
            data = copy.deepcopy(d.data)
            if k.set_nproc(data, nproc):
                d = copy.copy(d)
                d.data = data
        out.append(d)
    return out


def _parser() -> Parser:
    p = Parser(prog="run.py", description=__doc__)
    p.add_argument("target", help="an overlay folder, a chart values file, YAML files' folder or file, or -")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a chart value (chart targets)")
    p.add_argument("--nproc-per-node", type=int, metavar="N", help="processes per node, set on the PyTorchJob or TrainJob")
    p.add_argument("--max-steps", type=int, metavar="N", help="stop training after N steps (TRAINKIT_MAX_STEPS)")
    p.add_argument("--step-sleep", type=float, metavar="S", help="sleep S seconds after each step (TRAINKIT_STEP_SLEEP)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="extra env for every container")
    p.add_argument("--volume", action="append", default=[], metavar="CLAIM=DIR",
                   help="the PersistentVolumeClaim CLAIM is this folder (its data: a dataset, a model), not a new empty one")
    p.add_argument("--git-repo", action="append", default=[], metavar="URL=PATH",
                   help="a git-sync container's repository URL is this local clone or bundle (no network): cloned "
                        "at the pod's ref into its volume when the pod starts")
    p.add_argument("--kill", action="append", default=[], metavar="POD[/rank=N]@WHEN[:SIG]", help="signal a pod's container or one worker")
    p.add_argument("--lose", action="append", default=[], metavar="POD@WHEN", help="lose a whole pod (its node is gone)")
    p.add_argument("--timeout", type=float, default=900.0, help="give up (Failed: Timeout) after this many seconds")
    p.add_argument("--max-pod-restarts", type=int, default=10, help="StatefulSet: restarts of one pod before the run gives up")
    p.add_argument("--crash-loop-limit", type=int, default=3, metavar="N",
                   help="a pod failing N times with the same error line and no training step between is "
                        "CrashLoopBackOff: the run ends, exit 1 (default 3)")
    p.add_argument("--restart-delay", type=float, default=1.0, help="seconds before a restarted container or recreated pod starts")
    p.add_argument("--workdir", metavar="DIR", help="the run's folder (volumes, logs, timeline); default: a new temporary folder")
    p.add_argument("--timeline", metavar="FILE.png", help="draw the timeline (loss, pods, faults) into this PNG")
    p.add_argument("--events", metavar="FILE.jsonl", help="write the timeline's events as JSON lines")
    add_trainer_version_arg(p, "(default: inferred per TrainJob)")
    p.add_argument("--jobset-feature-gates", metavar="GATE=true,...", default="",
                   help="feature gates the JobSet controller runs with (RestartJob, InPlaceRestart: alpha, off by "
                        "default; .kdt-cluster.yaml featureGates.jobset, then these)")
    p.add_argument("--quiet", action="store_true", help="print the verdict only")
    p.add_argument("--live", action="store_true",
                   help="run on the real controllers: a local control plane (API server, Job controller, scheduler, the "
                        "target's operators; built and cached on first use, needs Go) and a node agent that runs the "
                        "pods they create as processes; the verdict is the job's own status")
    p.add_argument("--node-size", metavar="RES=QTY,...", default="",
                   help="--live: each node's capacity (cpu=8,memory=64Gi,nvidia.com/gpu=8); default: what the "
                        "largest pod asks")
    p.add_argument("--cluster", metavar="NAME", default=None,
                   help="--live: run on the control plane `kdt cluster up --name NAME` keeps (its releases must be the "
                        "target's); default: that one named default when it is up with the target's releases, else one "
                        "started for this run")
    p.add_argument("--node-labels", metavar="KEY=VALUE,...", default=None,
                   help="--live: every node's labels; default: each node carries what its pod's nodeSelector and "
                        "required node affinity ask")
    p.add_argument("--simulate", metavar="NODESxGPUS", default=None,
                   help="--live: admit and place the target with the real Kueue, kube-scheduler and coscheduling on "
                        "this many simulated nodes (KWOK), e.g. 64x8; no process runs: prints the admission, the "
                        "placement and the time to all pods bound and Running (docs/scale.md)")
    p.add_argument("--block", type=int, metavar="N", default=None,
                   help="--simulate: nodes per topology block (default 64)")
    p.add_argument("--dry-run", action="store_true",
                   help="check everything a run checks (target, claims, commands, ports), print each pod's "
                        "address and commands, start nothing")
    return p


class _Stop(Exception):
    """The target cannot run: these located findings, exit 2, nothing started."""

    def __init__(self, findings: list):
        super().__init__()
        self.findings = findings


def _expanded(args) -> tuple[str, list, list]:
    """(the target's name, its documents, the merge preview's objects) or _Stop."""
    targets = T.resolve([args.target])
    non_files = [t for t in targets if t.kind != T.FILE]
    if len(non_files) > 1 or (non_files and len(targets) > 1):
        raise UsageError(f"{args.target}: {len(targets)} targets; kdt run takes one (an overlay, a values file, or YAML files)")
    if args.set and (not non_files or non_files[0].kind != T.HELM):
        raise UsageError("--set applies to a chart values file target")
    results = [render(t, tuple(args.set)) for t in targets]
    docs = [d for r in results for d in r.documents]
    problems = [f for r in results for f in r.findings]
    name = targets[0].name if len(targets) == 1 else f"{len(targets)} files"
    if any(f.level == F.ERROR for f in problems):
        raise _Stop(problems)   # a document that does not render or read is a target that cannot run
    if args.nproc_per_node is not None:
        if args.nproc_per_node < 1:
            raise UsageError("--nproc-per-node must be at least 1")
        docs = _override_nproc(docs, args.nproc_per_node)
    version = args.trainer_version
    # every pod, however many (the preview's default shows the first and last past a limit)
    expanded, efs = expand_documents(docs, trainer_version=version, options={"limit": Limit(None)})
    errors = [f for f in efs if f.level == F.ERROR]
    if errors:
        raise _Stop(errors)
    return name, docs, expanded


def _check_names(pods: list, name: str, claims: dict, faults: list) -> None:
    known = {pod.name for pod in pods}
    used = {str(((v.get("persistentVolumeClaim") or {}).get("claimName")))
            for pod in pods for v in pod.spec.get("volumes") or [] if isinstance(v, dict)}
    for claim in claims:
        if claim not in used:
            raise UsageError(f"--volume {claim}=...: no pod of {name} mounts a claim {claim!r} "
                             f"(claims: {', '.join(sorted(used - {'None'})) or 'none'})")
    for fault in faults:
        if fault.pod not in known:
            raise UsageError(f"{fault.spec}: no pod {fault.pod!r} in {name} (pods: {', '.join(sorted(known))})")


def _controllers(pods: list, args) -> list:
    """One controller per owner (its kind's `controller`); what their webhooks refuse is _Stop."""
    by_owner: dict[tuple, list] = {}
    for pod in pods:
        by_owner.setdefault((pod.owner.id, pod.owner_name), []).append(pod)
    from .. import cluster_file
    gates = {**cluster_file.load().feature_gates.get("jobset", {}), **_gates(args.jobset_feature_gates)}
    ctx = {"max_pod_restarts": args.max_pod_restarts, "jobset_feature_gates": gates}
    ctls = [group[0].owner.controller(group, ctx) for group in by_owner.values()]
    refused = [group[0].source.finding("run", f"the {group[0].owner.kind} webhook refuses this: {msg}")
               for group, ctl in zip(by_owner.values(), ctls) for msg in ctl.problems()]
    if refused:
        raise _Stop(refused)
    return ctls


def _supervisor(pods: list, ctls: list, docs: list, opts, tl):
    """The supervisor on a loopback network of the run's own (one whose ports another run holds is traded
    for another); the problems of its preparation are _Stop."""
    import random
    from ..run import netshim
    from ..operators.framework.pods import service_names
    from ..run.supervisor import Supervisor
    objects = {(d.kind, d.name): d.data for d in docs
               if (K.SECRET.matches(d) or K.CONFIGMAP.matches(d)) and isinstance(d.data, dict)}
    svc_docs = [d for d in docs if K.SERVICE.matches(d)]
    for _ in range(5):
        net = random.choice(netshim.NETS)
        for k, pod in enumerate(pods):
            pod.ip = netshim.pod_ip(k, net)
        # a Service's names resolve to the address of a pod it selects: known once the pods have theirs
        sup = Supervisor(pods, ctls, objects, opts, tl, service_names(svc_docs, pods))
        problems = sup.prepare()
        if not problems or not all(" is in use on " in f.message for f in problems):
            break
    if problems:
        raise _Stop(problems)
    return sup


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.simulate is not None:
        if not args.live:
            raise UsageError("--simulate needs --live (the real Kueue and schedulers place the target)")
        return _run_simulated(args)
    if args.crash_loop_limit < 1:
        raise UsageError("--crash-loop-limit must be at least 1")
    from ..run import faults as FAULTS
    from ..run.supervisor import Options
    from ..run.timeline import Timeline
    faults = [FAULTS.parse(s, "kill") for s in args.kill] + [FAULTS.parse(s, "lose") for s in args.lose]
    extra_env = _extra_env(args)
    claims = dict(_volume_pair(v) for v in args.volume)
    git_repos = dict(_git_repo_pair(v) for v in args.git_repo)
    for path in (args.timeline, args.events):
        if path and not Path(path).resolve().parent.is_dir():
            raise UsageError(f"{path}: folder {Path(path).parent} does not exist")
    try:
        name, docs, expanded = _expanded(args)
        pods = K.local_pods(expanded)
        if not pods:
            print(f"{name}: error [run]: nothing to run: no PyTorchJob, TrainJob or StatefulSet whose pods "
                  "the merge preview can build", file=sys.stderr)
            return 2
        # servers the job needs beside it (a torchft Lighthouse): the target's Deployments, started first
        pods = [p for d in docs if K.DEPLOYMENT.matches(d) for p in K.DEPLOYMENT.run_pods(d)] + pods
        _check_names(pods, name, claims, faults)
        # --live: the real operators' webhooks judge the target when it is applied, not kdt's model of them
        ctls = [] if args.live else _controllers(pods, args)
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")[-40:]
        run_dir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix=f"kdt-run-{slug}-"))
        run_dir.mkdir(parents=True, exist_ok=True)
        tl = Timeline(out=None if args.quiet else sys.stdout)
        opts = Options(run_dir=run_dir.resolve(), root=ROOT, env=extra_env, timeout=args.timeout,
                       restart_delay=args.restart_delay, faults=faults, claims=claims,
                       crash_loop_limit=args.crash_loop_limit, git_repos=git_repos, check_programs=not args.live,
                       field_origin=lambda pod, c, key: K.of(pod.source).field_origin(pod, c, key))
        endpoint = None if args.live or args.dry_run else _trainer_status(pods, run_dir, tl, opts)
        sup = _supervisor(pods, ctls, docs, opts, tl)
    except _Stop as stop:
        for f in sorted(stop.findings, key=F.sort_key):
            print(text_report.line(f), file=sys.stderr)
        return 2
    if args.dry_run:
        return _plan(sup, pods, name)
    if args.live:
        return _run_live(args, name, docs, pods, opts, tl, faults, run_dir)
    if not args.quiet:
        print(f"# kdt run {name} (offline: kdt's rules of the operators; --live runs the real ones): {len(pods)} pod(s) "
              f"({', '.join(f'{q.name}={q.ip}' for q in pods[:6])}{', ...' if len(pods) > 6 else ''}); "
              f"folder {run_dir}", flush=True)
    try:
        return _run(sup, tl, args, name, run_dir)
    finally:
        if endpoint is not None:
            endpoint.stop()


def _extra_env(args) -> dict:
    """--env, and the run's knobs the training loop reads (trainkit: TRAINKIT_MAX_STEPS, TRAINKIT_STEP_SLEEP)."""
    env = dict(_env_pair(e) for e in args.env)
    if args.max_steps is not None:
        env["TRAINKIT_MAX_STEPS"] = str(args.max_steps)
    if args.step_sleep is not None:
        env["TRAINKIT_STEP_SLEEP"] = str(args.step_sleep)
    return env


def _trainer_status(pods: list, run_dir: Path, tl, opts):
    """Trainer 2.2+'s status endpoint for the run's TrainJobs (kdt.run.trainer_status): served here, its URL, CA and
    token files given to the trainer's containers as Trainer's TrainJobStatus plugin gives them, each report shown
    as a progress bar. None when the run has no TrainJob of 2.2+ (2.1 has no such endpoint)."""
    from ..operators.jobset import facts as JSF
    from ..operators.trainer_v2 import facts as TV2
    from ..run import trainer_status as TS
    jobs = {(p.source.namespace or "default", p.source.name) for p in pods
            if K.TRAINJOB.matches(p.source) and p.facts.get("version") not in (None, "2.1")}
    if not jobs:
        return None
    folder = run_dir / "trainer-status"
    cert, key = TS.make_certificate(folder)
    ep = TS.Endpoint(folder, cert, on_update=lambda job, st: tl.add(
        "progress", f"TrainJob/{job.name}", TS.bar(st), status=st))
    for ns, name in sorted(jobs):
        ep.add(ns, name)
    ep.start(cert, key)

    def pod_env(pod, c) -> dict:
        job = ep.jobs.get((pod.source.namespace or "default", pod.source.name))
        labels = (pod.obj.get("metadata") or {}).get("labels") or {}
        trainer = labels.get(JSF.LABEL_REPLICATED_JOB) == pod.facts.get("trainer_job", TV2.NODE)
        return ep.env(job) if job is not None and trainer and not c.init else {}
    opts.pod_env = pod_env
    tl.add("note", "", f"Trainer's status endpoint (TrainJobStatus) served at {ep.url(next(iter(ep.jobs.values())))}: "
                       "the trainer's containers get its URL, CA and token; each report is a progress line")
    return ep


def _plan(sup, pods: list, name: str) -> int:
    """--dry-run: what would start, where; nothing is started."""
    from ..operators.framework.pods import describe_argv
    print(f"# kdt run {name} --dry-run: {len(pods)} pod(s); nothing started")
    for pod in pods:
        for c in [*pod.init_containers, *pod.containers]:
            argv, _, _ = sup.command(pod, c, sup.opts.run_dir / "pods" / pod.name)
            print(f"{pod.name} ({pod.ip}) {'init ' if c.init else ''}{c.name}: {describe_argv(argv)[:300]}")
    return 0


def _node_size(text: str) -> dict:
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise UsageError(f"--node-size {text!r}: expected RESOURCE=QUANTITY,... (cpu=8,memory=64Gi,nvidia.com/gpu=8)")
        from ..quantity import QuantityError, parse_quantity
        try:
            parse_quantity(value)
        except QuantityError as e:
            raise UsageError(f"--node-size {key}={value}: {e}") from None
        out[key] = value
    return out


def _kept_cluster(name: str | None, rs):
    """The control plane `kdt cluster up --name NAME` keeps, attached, when its releases are `rs`'s."""
    from ..live.controlplane import attach
    from ..live import kept
    st = kept.state(name or "default")
    if st and st.get("trainer") == rs.trainer and st.get("training_operator") == rs.training_operator:
        return attach(st)
    if name:
        have = f"Trainer {st.get('trainer')}, Training Operator {st.get('training_operator')}" if st else "not up"
        raise UsageError(f"--cluster {name}: the target needs {rs.name}; that control plane is {have} "
                         f"(`kdt cluster up --name {name} --trainer {rs.trainer}`)")
    return None


def _run_live(args, name: str, docs: list, pods: list, opts, tl, faults: list, run_dir: Path) -> int:
    """--live: the target on the local control plane, its pods run by the node agent (kdt.live.liverun)."""
    import signal
    from .. import cluster_file
    from ..live import liverun, releases as R
    from ..live.controlplane import Cluster
    from ..versions import TRAINER_DEFAULT
    size = _node_size(args.node_size)
    trainer = next((str(p.facts["version"]) for p in pods if p.facts.get("version")), None) \
        or args.trainer_version or TRAINER_DEFAULT
    rs = R.ReleaseSet(trainer=trainer)
    labels = None
    if args.node_labels is not None:
        labels = {}
        for item in filter(None, (x.strip() for x in args.node_labels.split(","))):
            key, sep, value = item.partition("=")
            if not key:
                raise UsageError(f"--node-labels {args.node_labels!r}: expected KEY=VALUE,...")
            labels[key] = value
    lopts = liverun.Options(nodes_extra=sum(f.action == "lose" for f in faults), node_size=size, node_labels=labels)

    def stop(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    if not args.quiet:
        print(f"# kdt run {name} --live: {len(pods)} pod(s) on the real controllers ({rs.name}); folder {run_dir}",
              flush=True)
    lr = None
    kept = _kept_cluster(args.cluster, rs)
    try:
        with (contextlib.nullcontext(kept) if kept else
              Cluster.start(rs, folder=run_dir / "control-plane", stream=sys.stderr, cluster_file=cluster_file.load())) as c:
            if kept:
                tl.add("note", "", f"live: on the control plane `kdt cluster up` keeps ({rs.name}; {c.kubeconfig})")
            else:
                tl.add("note", "", f"live: control plane ready in {c.started_s:.1f} s ({rs.name})")
            lr = liverun.LiveRun(c, docs, pods, opts, tl, faults, lopts, "default", shared=bool(kept))
            try:
                verdict, stops = lr.run(args.timeout)
            finally:
                stray = lr.cleanup()
    except KeyboardInterrupt:
        if lr is not None:
            lr.agent.cleanup()
        print(f"kdt run: interrupted; every process of the run was stopped (folder {run_dir})", file=sys.stderr)
        return 130
    if stops:
        for f in sorted(stops, key=F.sort_key):
            print(text_report.line(f), file=sys.stderr)
        return 2
    tl.add("verdict", "", verdict.line(), succeeded=verdict.succeeded, reason=verdict.reason, stray_killed=stray,
           path="live")
    if args.quiet:
        print(verdict.line())
    if args.events:
        tl.write_jsonl(Path(args.events))
    if args.timeline:
        tl.png(Path(args.timeline), name)
    return 0 if verdict.succeeded else 1


def _run(sup, tl, args, name: str, run_dir: Path) -> int:
    """Start, watch and reap; the verdict as exit code (0 Succeeded, 1 Failed, 130 interrupted)."""
    import signal

    def stop(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    try:
        verdict = sup.run()
    except KeyboardInterrupt:
        sup.cleanup()
        print(f"kdt run: interrupted; every process of the run was stopped (folder {run_dir})", file=sys.stderr)
        return 130
    finally:
        stray = sup.cleanup()
    tl.add("verdict", "", verdict.line(), succeeded=verdict.succeeded, reason=verdict.reason, stray_killed=stray,
           path="offline")
    if args.quiet:
        print(verdict.line())
    if args.events:
        tl.write_jsonl(Path(args.events))
    if args.timeline:
        tl.png(Path(args.timeline), name)
    return 0 if verdict.succeeded else 1


if __name__ == "__main__":
    sys.exit(invoke(main))


def _run_simulated(args) -> int:
    """--live --simulate NxG: the target admitted by Kueue and placed on simulated nodes (kdt.live.scalerun)."""
    from ..live import scalerun as SR
    from ..live import schedulers as S
    shape = S.parse_shape(args.simulate, args.block)
    S.check_fits(shape)
    name, docs = SR.target_documents(args.target)   # a target that does not render stops before anything starts
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, flush=True))
    operators, gang = SR.needs(docs)
    if args.dry_run:        # what would start, nothing started
        print(f"{name}: would run on {shape.name} simulated nodes (blocks of {shape.block}) with Kueue"
              + (", coscheduling" if gang else "") + (", the operators' managers" if operators else ""))
        return 0
    cluster = SR.start_cluster(shape, sys.stderr, coscheduling=gang, operators=operators)
    try:
        obs, docs, applied, findings = SR.submit(cluster, args.target, say=say, timeout=args.timeout)
        for line in SR.report(name, obs, shape):
            print(line)
        for f in findings:
            print(text_report.line(f), file=sys.stderr)
        refused = [f for f in findings if "refuses" in f.message]
        SR.delete(cluster, applied, SR.NAMESPACE, getattr(cluster, "scale_pvs", []))
    finally:
        cluster.stop()
    if refused or findings:
        return 2 if refused else 1
    return 0 if SR.running(obs) else 1

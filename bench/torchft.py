#!/usr/bin/env python3
"""torchft replica groups against today's restart-everything recovery, side by side, on CPU.

Both paths train the same sample with the same global batch on N "pods" of one process each (127.0.0.1),
launched as the manifests launch them (`python -m trainkit.torchrun`), under the same fault schedule: every
`--kill-every` seconds the last pod is lost (its torchrun agent and worker SIGKILLed: a failed container)
and started again after `--restart-delay` seconds (the kubelet's restart; `kdt run` uses 1 s).

  torchft   components/torchft: a Lighthouse (`torchft_lighthouse`, the manifests' flags) and N replica
            groups (`--standalone --nnodes=1`, TRAINKIT_FAULT_TOLERANCE=torchft); a lost group drops out
            of the quorum, the others step on; the returning group heals from a live peer.
  restart   today's recipe (overlays/ddp: `--nnodes=N`, c10d, the settings of bench/recovery.py): one
            rendezvous over N agents, pod 0 hosts the store (so the lost pod is never pod 0); a lost pod
            makes torchrun restart every worker, which wait for it and resume from the last checkpoint
            (`--checkpoint-every`).

Per path it prints: steps lost by the healthy pods (how far their step counter went back; goal 0), their
longest pause (the longest gap between two of their steps; goal < 1 s on CPU), the time from a kill until
the lost pod trains again, and the goodput: useful group-steps (each committed step counts the groups in
it, and a step counts once however often it was redone) over the possible group-steps (N x the
uninterrupted restart path's steps per second x the duration). Then the final loss against an
uninterrupted run at the same step: the mean training loss of the last `--loss-window` steps, within
`--loss-tolerance` (relative). Not bit-identical: a step taken while a group was away averages fewer
samples, and a healed group's data and dropout draws differ from an uninterrupted run's.

    .venv/bin/python bench/torchft.py                          # 10 minutes per path, a kill every 60 s
    .venv/bin/python bench/torchft.py --duration 120 --kill-every 30   # a short run

Prints every figure and writes out/bench-torchft/torchft.json (and each run's logs with --keep-logs).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
TRAINING = REPO / "training"
sys.path.insert(0, str(TRAINING))
from trainkit.log import parse_line  # noqa: E402

from procs import descendants, free_port  # noqa: E402  (bench/procs.py)
from recovery import SAMPLES, TUNED_RDZV, Node  # noqa: E402  (today's recipe: its samples, settings and agents)

LIGHTHOUSE = Path(sys.executable).parent / "torchft_lighthouse"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--duration", type=float, default=600, help="seconds each path trains under faults (default 600)")
    p.add_argument("--kill-every", type=float, default=60, help="seconds between two kills (default 60)")
    p.add_argument("--first-kill", type=float, default=None, help="seconds before the first kill (default: --kill-every / 2)")
    p.add_argument("--restart-delay", type=float, default=1.0, help="seconds before a lost pod starts again (default 1)")
    p.add_argument("--fault", choices=("pod", "worker"), default="pod",
                   help="pod: the pod's container dies (agent and worker; it starts again, cold, after "
                        "--restart-delay); worker: its training process dies (its torchrun starts it again, warm)")
    p.add_argument("--pods", type=int, default=2, help="pods (replica groups) per job (default 2)")
    p.add_argument("--sample", choices=sorted(SAMPLES), default="mnist", help="sample to train (default mnist)")
    p.add_argument("--checkpoint-every", type=int, default=20, help="checkpoint interval of both paths (default 20)")
    p.add_argument("--step-sleep", type=float, default=0.02, help="extra seconds per step (default 0.02)")
    p.add_argument("--heartbeat-timeout-ms", type=int, default=1000,
                   help="the Lighthouse's --heartbeat_timeout_ms (default 1000, as components/torchft)")
    p.add_argument("--loss-window", type=int, default=100, help="steps the final loss is averaged over (default 100)")
    p.add_argument("--loss-tolerance", type=float, default=0.10,
                   help="relative difference allowed between the final losses (default 0.10)")
    p.add_argument("--paths", default="torchft,restart", help="paths to run, in order (default torchft,restart)")
    p.add_argument("--keep-logs", action="store_true", help="copy every run's logs to --out")
    p.add_argument("--out", default="out/bench-torchft", help="folder for the JSON and the logs")
    return p.parse_args(argv)


def kill(pod: Node) -> None:
    """A lost pod: its agent and every process it started, SIGKILLed; reaped."""
    pod.kill_all(signal.SIGKILL)
    try:
        pod.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def events(log: Path, tag: str) -> list[dict]:
    return Node.events(SimpleNamespace(log_path=log), tag)


def base_env() -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRAINKIT_PG_TIMEOUT="60",
               TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1", RUST_LOG="warn", PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = os.pathsep.join([str(TRAINING), *filter(None, [env.get("PYTHONPATH")])])
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    return env


def sample_args(args, work: Path) -> list[str]:
    script, extra, _ = SAMPLES[args.sample]
    extra = [a for a in extra]
    if "--epochs" in extra:
        extra[extra.index("--epochs") + 1] = "100000"       # bounded by time, not epochs
    out = [str(TRAINING / script), *extra, "--checkpoint-dir", str(work / "ckpt"),
           "--checkpoint-every", str(args.checkpoint_every), "--log-every", "1", "--seed", "1",
           "--step-sleep", str(args.step_sleep)]
    if args.sample == "mnist":
        out += ["--cache-dir", str(work.parent / "cache"), "--test-limit", "200"]
    return out


class Job:
    """N pods of one path; pod k can be lost and started again."""

    def __init__(self, path: str, args, work: Path):
        self.path, self.args, self.work = path, args, work
        self.env = base_env()
        self.pods: dict[int, Node] = {}
        self.lighthouse = None
        self.port = free_port()
        if path == "torchft":
            lh = [str(LIGHTHOUSE), "--min_replicas", "1", "--bind", f"127.0.0.1:{self.port}",
                  f"--heartbeat_timeout_ms={args.heartbeat_timeout_ms}", "--join_timeout_ms=60000",
                  "--quorum_tick_ms=100"]
            self.lighthouse = Node("lighthouse", lh, self.env, work / "lighthouse.log", work)

    def log(self, k: int) -> Path:
        return self.work / f"pod{k}.log"

    def start(self, k: int):
        a = self.args
        launcher = [sys.executable, "-m", "trainkit.torchrun", "--nproc-per-node=1", "--monitor-interval=0.1"]
        env = dict(self.env)
        if self.path == "torchft":
            cmd = [*launcher, "--standalone", "--nnodes=1", "--max-restarts=3"]
            env.update(TRAINKIT_FAULT_TOLERANCE="torchft", REPLICA_GROUP_ID=str(k), NUM_REPLICA_GROUPS=str(a.pods),
                       TORCHFT_LIGHTHOUSE=f"http://127.0.0.1:{self.port}")
        else:
            host = "true" if k == 0 else "false"
            cmd = [*launcher, f"--nnodes={a.pods}", "--max-restarts=100", "--rdzv-backend=c10d",
                   f"--rdzv-endpoint=127.0.0.1:{self.port}", "--rdzv-id=bench",
                   f"--rdzv-conf=is_host={host},{TUNED_RDZV}", "--local-addr=127.0.0.1"]
        self.pods[k] = Node(f"pod{k}", [*cmd, *sample_args(a, self.work)], env, self.log(k), self.work,
                            append=True)

    def track(self):
        for p in self.pods.values():
            p.track()

    def stop(self):
        for p in self.pods.values():
            kill(p)
        if self.lighthouse is not None:
            kill(self.lighthouse)

    def trains(self, k: int) -> list[dict]:
        return events(self.log(k), "TRAIN")


def run_path(path: str, args, work: Path, duration: float, faults: bool, until_step: int | None = None) -> dict:
    """Train `duration` seconds (or until `until_step`), losing the last pod on the schedule."""
    work.mkdir(parents=True)
    job = Job(path, args, work)
    if job.lighthouse is not None:
        time.sleep(0.5)
    for k in range(args.pods):
        job.start(k)
    victim = args.pods - 1
    kills = []
    restarting: dict[int, float] = {}
    kubelet_restarts = 0
    # the clock starts at the first step of the job, not at the launch (imports are not training time)
    t0 = None
    next_kill = None
    first = args.kill_every / 2 if args.first_kill is None else args.first_kill
    try:
        while True:
            job.track()
            now = time.time()
            if t0 is None:
                steps = [float(e["ts"]) for k in range(args.pods) for e in job.trains(k)[:1]]
                if steps:
                    t0 = min(steps)
                    next_kill = t0 + first
            elif until_step is not None:
                if any(int(e["step"]) >= until_step for e in job.trains(0)[-3:]):
                    break
                if now - t0 > max(duration, 60) * 3:
                    break
            elif now - t0 >= duration:
                break
            for k, pod in list(job.pods.items()):
                # the kubelet (restartPolicy OnFailure): an agent that gave up (its --max-restarts used up)
                # fails the container, which starts again
                code = pod.proc.poll()
                if code not in (None, 0) and k not in restarting:
                    restarting[k] = now + args.restart_delay
                if k in restarting and now >= restarting[k]:
                    del restarting[k]
                    kubelet_restarts += 1
                    job.start(k)
            if faults and t0 is not None and now >= next_kill:
                if args.fault == "worker":
                    pids = [int(e["pid"]) for e in events(job.log(victim), "DDP")]
                    kills.append({"t": time.time(), "pod": victim})
                    try:
                        os.kill(pids[-1], signal.SIGKILL)
                    except (IndexError, ProcessLookupError):
                        kills.pop()
                else:
                    kill(job.pods[victim])
                    kills.append({"t": time.time(), "pod": victim})
                    time.sleep(args.restart_delay)
                    job.start(victim)
                next_kill += args.kill_every
            time.sleep(0.05)
    finally:
        t_end = time.time()
        job.stop()
    if args.keep_logs:
        dest = Path(args.out) / work.name
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(work, dest, ignore=shutil.ignore_patterns("ckpt", "cache"))
    out = analyse(path, args, job, kills, t0 or t_end, t_end)
    out["container_restarts"] = kubelet_restarts
    return out


def analyse(path: str, args, job: Job, kills: list[dict], t0: float, t_end: float) -> dict:
    n = args.pods
    victim = n - 1
    rows = {k: [(int(e["step"]), float(e["ts"]), float(e["loss"]),
                 int(e["participants"]) if "participants" in e else int(e["world_size"]))
                for e in job.trains(k) if float(e["ts"]) <= t_end] for k in range(n)}
    job_rows = sorted((r for k in range(n) for r in rows[k]), key=lambda r: r[1])
    if path == "torchft":
        healthy = {k: rows[k] for k in range(n) if k != victim}       # each group logs its own steps
    else:
        healthy = {0: job_rows}        # one job: every pod at the job's step (global rank 0 logs it)
    lost, pauses, back = [], [], []
    for kill in kills:
        t = kill["t"]
        for series in healthy.values():
            before = [s for s, ts, *_ in series if ts <= t]
            after = [s for s, ts, *_ in series if ts > t]
            if before and after:
                lost.append(max(0, max(before) - min(after) + 1))     # how far the step counter went back
            ts = [ts for _, ts, *_ in series if t - 2 <= ts <= t + args.kill_every * 0.9]
            gaps = [b - a for a, b in zip(ts, ts[1:])]
            if gaps:
                pauses.append(max(gaps))
        # the lost pod trains again: torchft, its group's first committed step; restart, the job's first
        # step after the resume with every pod in it
        # (after the lost pod's new worker started: a line its dying worker wrote is not it)
        started = [float(e["ts"]) for e in events(job.log(victim), "DDP") if float(e["ts"]) > t]
        mine = rows[victim] if path == "torchft" else [r for r in job_rows if r[3] == n]
        again = [ts for _, ts, *_ in mine if started and ts > started[0]]
        if again:
            back.append(again[0] - t)
    # useful group-steps: the final timeline's steps, each once, times the groups (ranks) that took it
    taken: dict[int, int] = {}
    loss: dict[int, float] = {}
    for s, ts, l, parts in job_rows:
        taken[s] = parts            # a step taken again after a rollback replaces the first
        loss[s] = l
    last_step = job_rows[-1][0] if job_rows else 0
    useful = sum(v for s, v in taken.items() if s <= last_step)
    # the run's own pace with every group in: the median time between two such steps of one series
    series = next(iter(healthy.values())) if healthy else []
    full = [b[1] - a[1] for a, b in zip(series, series[1:]) if a[3] == b[3] == n and b[0] == a[0] + 1]
    return {"path": path, "kills": len(kills), "steps_lost": lost, "pauses_s": pauses, "back_s": back,
            "useful_group_steps": useful, "last_step": last_step, "train_s": t_end - t0,
            "step_s_all_in": statistics.median(full) if full else None,
            "loss_by_step": {s: v for s, v in loss.items() if s <= last_step},
            "uncommitted": sum(1 for k in range(n) for e in events(job.log(k), "FT") if e.get("committed") == "false"),
            "restarts": sum(1 for k in range(n) for e in events(job.log(k), "DDP") if e.get("restart") not in (None, "0"))}


def window_loss(series: dict, end: int, width: int) -> float | None:
    vals = [series[s] for s in range(end - width + 1, end + 1) if s in series]
    return statistics.mean(vals) if len(vals) >= width // 2 else None


def fmt(values, unit="", digits=2) -> str:
    if not values:
        return "n/a"
    v = sorted(values)
    return (f"min {v[0]:.{digits}f}{unit}  median {statistics.median(v):.{digits}f}{unit}  "
            f"max {v[-1]:.{digits}f}{unit}  (n={len(v)})")


def main(argv=None) -> int:
    args = parse_args(argv)
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    for p in paths:
        if p not in ("torchft", "restart"):
            raise SystemExit(f"--paths: unknown path {p!r} (torchft, restart)")
    if not LIGHTHOUSE.is_file():
        raise SystemExit(f"{LIGHTHOUSE} not found: install torchft (requirements.txt)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-torchft-") as tmp:
        tmp = Path(tmp)
        for p in paths:
            print(f"{p}: {args.duration:.0f} s, {args.pods} pods, losing pod {args.pods - 1} every "
                  f"{args.kill_every:.0f} s ...", flush=True)
            results[p] = run_path(p, args, tmp / p, args.duration, faults=True)
        target = max(max(r["last_step"], round(r["useful_group_steps"] / args.pods)) for r in results.values())
        print(f"reference: the restart path uninterrupted, to step {target} ...", flush=True)
        ref = run_path("restart", args, tmp / "reference", args.duration, faults=False, until_step=target)
        ft_ref = None
        if "torchft" in paths:
            print("torchft uninterrupted, 60 s (its own step rate) ...", flush=True)
            ft_ref = run_path("torchft", args, tmp / "torchft-reference", min(60.0, args.duration), faults=False)
    rate = ref["last_step"] / ref["train_s"]                # steps per second of the uninterrupted job
    lines = [f"bench/torchft.py: sample={args.sample} pods={args.pods} duration={args.duration:.0f}s "
             f"a {args.fault} lost every {args.kill_every:.0f}s"
             f"{f' (restart after {args.restart_delay:.0f}s)' if args.fault == 'pod' else ''} "
             f"checkpoint_every={args.checkpoint_every} heartbeat_timeout={args.heartbeat_timeout_ms}ms "
             f"({time.time() - t_start:.0f} s in all; this machine: {os.cpu_count()} cores, shared)",
             f"  uninterrupted restart path: {rate:.2f} steps/s"
             + (f", torchft uninterrupted: {ft_ref['last_step'] / ft_ref['train_s']:.2f} steps/s" if ft_ref else "")]
    if ft_ref:
        e, same = ft_ref["last_step"], round(ft_ref["useful_group_steps"] / args.pods)
        a, b = window_loss(ft_ref["loss_by_step"], e, args.loss_window), window_loss(ref["loss_by_step"], same, args.loss_window)
        if a and b:
            lines.append(f"  torchft uninterrupted (to step {e}) vs the restart path at the same samples seen (step {same}):"
                         f" {a:.4f} vs {b:.4f} ({abs(a - b) / b:.1%})")
    for p, r in results.items():
        # possible: every group at the run's own pace with all groups in (the machine is shared: a rate
        # measured in another run would fold its load into the figure)
        possible = args.pods * r["train_s"] / r["step_s_all_in"] if r["step_s_all_in"] else 0
        r["goodput"] = r["useful_group_steps"] / possible if possible else None
        # compared at the same training progress: the samples seen (useful group-steps x batch), which is
        # the uninterrupted job's step useful / pods (a torchft step without a group takes fewer samples)
        w_end = r["last_step"]
        r_end = round(r["useful_group_steps"] / args.pods)
        mine, theirs = window_loss(r["loss_by_step"], w_end, args.loss_window), \
            window_loss(ref["loss_by_step"], r_end, args.loss_window)
        r["final_loss"], r["reference_loss"] = mine, theirs
        r["loss_rel_diff"] = abs(mine - theirs) / theirs if mine is not None and theirs else None
        ok = r["loss_rel_diff"] is not None and r["loss_rel_diff"] <= args.loss_tolerance
        lines += [f"  {p}:",
                  f"    kills: {r['kills']}, worker restarts: {r['restarts']}, containers restarted after their torchrun gave "
                  f"up: {r['container_restarts']}, uncommitted step attempts: {r['uncommitted']}",
                  f"    steps lost by the healthy pods: {fmt(r['steps_lost'], '', 0)}",
                  f"    longest pause of a healthy pod: {fmt(r['pauses_s'], ' s')}",
                  f"    kill -> the lost pod trains again: {fmt(r['back_s'], ' s')}",
                  f"    goodput: {r['useful_group_steps']} useful group-steps of {possible:.0f} possible "
                  f"({args.pods} x {r['train_s']:.0f} s / {r['step_s_all_in'] or 0:.3f} s a step with every group) "
                  f"= {r['goodput']:.1%} (last step {r['last_step']} in {r['train_s']:.0f} s)",
                  f"    final loss (mean of its last {args.loss_window} steps, to step {w_end}; uninterrupted: to step "
                  f"{r_end}, the same samples seen): "
                  + (f"{mine:.4f} vs uninterrupted {theirs:.4f}: {r['loss_rel_diff']:.1%} "
                     f"{'within' if ok else 'OUTSIDE'} {args.loss_tolerance:.0%}" if mine and theirs else "n/a")]
    print("\n".join(lines))
    report = {"args": vars(args), "results": {p: {k: v for k, v in r.items() if k != "loss_by_step"}
                                              for p, r in results.items()},
              "reference": {"steps_per_s": rate, "last_step": ref["last_step"], "train_s": ref["train_s"]},
              "summary": lines}
    (out / "torchft.json").write_text(json.dumps(report, indent=1, default=str))
    print(f"  wrote {out / 'torchft.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

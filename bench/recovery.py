#!/usr/bin/env python3
"""Recovery benchmark: a 2-node elastic torchrun job on CPU, killed at chosen steps, repeated.

Each trial starts two torchrun agents on 127.0.0.1 (``--nnodes=1:2``, one worker
each, c10d rendezvous, ``--max-restarts``), trains a sample (MNIST by default)
and injects the faults of ``--kills`` in order, each when training reaches its
step:

  worker@N   SIGKILL the rank-1 worker (a crashed process / OOM-killed container)
  term@N     SIGTERM the rank-1 worker (preemption, pod deletion)
  node@N     SIGKILL the non-host agent and its worker (a lost node)

and reports, over all trials: time from each kill to the first step trained
after the resume, steps lost (last step trained before the kill minus the
step resumed from), checkpoint blocking time as a share of step time (at the
run's interval and at the sample's default interval), and hangs (trials that
did not finish within ``--trial-timeout``). A PNG timeline shows loss against
step and wall time with kills and resumes marked; a JSON file has every figure.

    .venv/bin/python bench/recovery.py                       # 20 trials, the manifests' launcher and settings
    .venv/bin/python bench/recovery.py --launcher torchrun   # same settings, torch's own launcher
    .venv/bin/python bench/recovery.py --trials 5 --untuned  # plain torchrun defaults, for comparison
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAINING = REPO / "training"
sys.path.insert(0, str(TRAINING))
from trainkit.log import parse_line  # noqa: E402

from procs import descendants, free_port  # noqa: E402  (bench/procs.py)

# The launch settings every recipe of the project carries (docs/training.md says why).
TUNED_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
TUNED_RDZV = "last_call_timeout=2,keep_alive_interval=1,keep_alive_max_attempt=2"
SAMPLES = {
    # sample: (script, args, its default --checkpoint-every)
    "mnist": ("mnist_ddp.py", ["--data-dir", "/nonexistent-mnist", "--batch-size", "32", "--epochs", "2"], 100),
    "smoke": ("smoke.py", ["--samples", "4096", "--batch", "32", "--epochs", "2"], 50),
    "t5": ("t5_fsdp.py", ["--tiny", "--samples", "1600", "--batch-size", "8", "--epochs", "1"], 100),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--trials", type=int, default=20, help="repetitions (default 20)")
    p.add_argument("--sample", choices=sorted(SAMPLES), default="mnist", help="sample to train (default mnist)")
    p.add_argument("--kills", default="worker@30,node@75",
                   help="faults in order, KIND@STEP with KIND in worker, term, node (default worker@30,node@75)")
    p.add_argument("--checkpoint-every", type=int, default=20, help="checkpoint interval of the runs (default 20)")
    p.add_argument("--step-sleep", type=float, default=0.02,
                   help="extra seconds per step so kills land mid-run (not counted in step time; default 0.02)")
    p.add_argument("--max-restarts", type=int, default=5)
    p.add_argument("--trial-timeout", type=float, default=150, help="a trial running longer is a hang (default 150 s)")
    p.add_argument("--launcher", choices=["trainkit", "torchrun"], default="trainkit",
                   help="trainkit: python -m trainkit.torchrun, the launcher the manifests use (warm worker "
                        "restarts); torchrun: torch's own, fresh python workers (default trainkit)")
    p.add_argument("--rdzv-poll", type=float, default=None,
                   help="TRAINKIT_RDZV_POLL for the trainkit launcher: poll the rendezvous store every "
                        "RDZV_POLL s instead of torch's hard-coded 1 s (default: off)")
    p.add_argument("--untuned", action="store_true",
                   help="plain torchrun with its defaults: its own launcher, shared rendezvous store, default "
                        "rdzv timeouts (to compare)")
    p.add_argument("--keep-logs", action="store_true", help="copy every trial's agent logs to --out")
    p.add_argument("--out", default="out/bench-recovery", help="folder for the PNG, the JSON and the logs")
    return p.parse_args(argv)


class Node:
    """A torchrun agent (a node, a pod) and its log; `append`: a restarted one adds to the same log."""

    def __init__(self, name, cmd, env, log_path, cwd, append=False):
        self.name, self.log_path = name, log_path
        with open(log_path, "ab" if append else "wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                         start_new_session=True)
        self.tracked: set[int] = set()

    def track(self):
        if self.proc.poll() is None:
            self.tracked |= descendants(self.proc.pid)
        for e in self.events("DDP"):
            self.tracked.add(int(e["pid"]))

    def events(self, tag=None):
        out = []
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return out
        for line in text.splitlines():
            parsed = parse_line(line)
            if parsed and (tag is None or parsed[0] == tag):
                e = dict(parsed[1])
                e["_tag"] = parsed[0]
                out.append(e)
        return out

    def kill_all(self, sig=signal.SIGKILL):
        self.track()
        for pid in [self.proc.pid, *self.tracked]:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def events(nodes, tag):
    return sorted((e for n in nodes for e in n.events(tag)), key=lambda e: float(e["ts"]))


def run_trial(i: int, args, workdir: Path) -> dict:
    script, sample_args, _ = SAMPLES[args.sample]
    ckpt = workdir / "ckpt"
    port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1",
               TRAINKIT_PG_TIMEOUT="60")
    env["PYTHONPATH"] = os.pathsep.join([str(TRAINING), *filter(None, [env.get("PYTHONPATH")])])
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    if args.rdzv_poll is not None:
        env["TRAINKIT_RDZV_POLL"] = str(args.rdzv_poll)
    if args.untuned:
        env.pop("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", None)
    else:
        env.update(TUNED_ENV)
    nodes = []
    for name, host in (("nodeA", True), ("nodeB", False)):
        conf = [f"is_host={'true' if host else 'false'}"] + ([] if args.untuned else [TUNED_RDZV])
        # The project's launcher (python -m trainkit.torchrun, as every recipe runs it) or torch's.
        launcher = ["-m", "trainkit.torchrun"] if args.launcher == "trainkit" else ["-m", "torch.distributed.run"]
        if args.untuned:
            launcher = ["-m", "torch.distributed.run"]
        cmd = [sys.executable, *launcher, "--nnodes=1:2", "--nproc-per-node=1",
               f"--max-restarts={args.max_restarts}", "--monitor-interval=0.1", "--rdzv-backend=c10d",
               f"--rdzv-endpoint=127.0.0.1:{port}", f"--rdzv-id=bench{i}", f"--rdzv-conf={','.join(conf)}",
               "--local-addr=127.0.0.1", str(TRAINING / script), *sample_args,
               "--checkpoint-dir", str(ckpt), "--checkpoint-every", str(args.checkpoint_every),
               "--log-every", "1", "--seed", "1", "--step-sleep", str(args.step_sleep),
               "--cache-dir" if args.sample == "mnist" else "--seed", str(workdir.parent / "cache") if args.sample == "mnist" else "1"]
        nodes.append(Node(name, cmd, env, workdir / f"{name}.log", workdir))
    a, b = nodes
    kills = []
    deadline = time.time() + args.trial_timeout
    hang = False
    try:
        for spec in args.kills.split(","):
            kind, step = spec.split("@")
            step = int(step)
            while True:
                for n in nodes:
                    n.track()
                trained = [e for e in events(nodes, "TRAIN") if int(e["step"]) >= step]
                if trained:
                    break
                if time.time() > deadline:
                    raise TimeoutError(f"step {step} not reached")
                if all(n.proc.poll() is not None for n in nodes):
                    raise RuntimeError("agents exited before the kill")
                time.sleep(0.02)
            if kind == "node":
                t = time.time()
                b.kill_all(signal.SIGKILL)
            else:
                ddp = [e for e in events(nodes, "DDP") if e["rank"] == "1"]
                pid = int(ddp[-1]["pid"])
                t = time.time()
                os.kill(pid, signal.SIGKILL if kind == "worker" else signal.SIGTERM)
            kills.append({"kind": kind, "at_step_target": step, "t": t})
            time.sleep(0.05)
        survivors = [a] if any(k["kind"] == "node" for k in kills) else nodes
        for n in survivors:
            while n.proc.poll() is None:
                if time.time() > deadline:
                    raise TimeoutError("did not finish")
                n.track()
                time.sleep(0.05)
        ok = all(n.proc.returncode == 0 for n in survivors)
    except TimeoutError:
        hang, ok = True, False
    finally:
        for n in nodes:
            n.kill_all(signal.SIGKILL)
            try:
                n.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    train = events(nodes, "TRAIN")
    resumes = [e for e in events(nodes, "RESUME") if e.get("source", "none") != "none"]
    ckpts = [e for e in events(nodes, "CKPT") if e.get("phase") == "complete"]
    done = events(nodes, "DONE")
    for k in kills:
        before = [int(e["step"]) for e in train if float(e["ts"]) <= k["t"]]
        k["killed_at_step"] = max(before) if before else 0
        res = [e for e in resumes if float(e["ts"]) > k["t"]]
        if res:
            k["resumed_step"] = int(res[0]["step"])
            k["resume_ts"] = float(res[0]["ts"])
            k["steps_lost"] = k["killed_at_step"] - k["resumed_step"]
            first = [e for e in train if float(e["ts"]) > k["resume_ts"]]
            if first:
                k["recovery_s"] = float(first[0]["ts"]) - k["t"]
                k["world_size_after"] = int(first[0]["world_size"])
    step_s = [float(e["step_s"]) for e in train if int(e["step"]) > 1]
    return {"trial": i, "ok": ok, "hang": hang, "kills": kills,
            "train": [(int(e["step"]), float(e["ts"]), float(e["loss"]), int(e["world_size"])) for e in train],
            "resumes": [(int(e["step"]), float(e["ts"])) for e in resumes if e["rank"] == "0"],
            "ckpt_blocking_s": [float(e["blocking_s"]) for e in ckpts],
            "ckpt_write_s": [float(e["write_s"]) for e in ckpts],
            "step_s_median": statistics.median(step_s) if step_s else None,
            "done": done[-1] if done else None}


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def plot(trials, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 8))
    for t in trials:
        if not t["train"]:
            continue
        t0 = t["train"][0][1]
        alpha, lw = (1.0, 1.2) if t is trials[0] else (0.25, 0.6)
        steps = [s for s, *_ in t["train"]]
        wall = [ts - t0 for _, ts, *_ in t["train"]]
        loss = [x for *_, x, _ in t["train"]]
        ax1.plot(steps, loss, ".", ms=2, alpha=alpha)
        ax2.plot(wall, loss, ".", ms=2, alpha=alpha)
        if t is trials[0]:
            for k in t["kills"]:
                ax1.axvline(k["killed_at_step"], color="red", ls="--", lw=1)
                ax2.axvline(k["t"] - t0, color="red", ls="--", lw=1)
                ax2.text(k["t"] - t0, max(loss), f" {k['kind']} kill", color="red", va="top", fontsize=8)
                if "resumed_step" in k:
                    ax1.axvline(k["resumed_step"], color="green", ls=":", lw=1)
                    ax2.axvline(k["t"] - t0 + k.get("recovery_s", 0), color="green", ls=":", lw=1)
                    ax2.text(k["t"] - t0 + k.get("recovery_s", 0), max(loss) * 0.9,
                             f" resumed @ step {k['resumed_step']}", color="green", va="top", fontsize=8)
    ax1.set_xlabel("step")
    ax1.set_ylabel("loss")
    ax1.set_title("loss against step (trial 1 bold, others faint); red: kill, green: resumed-from step")
    ax2.set_xlabel("wall time since first step (s)")
    ax2.set_ylabel("loss")
    ax2.set_title("loss against wall time (trial 1); red: kill, green: first step after the resume")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _, _, default_every = SAMPLES[args.sample]
    trials = []
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-recovery-") as tmp:
        for i in range(args.trials):
            work = Path(tmp) / f"trial{i}"
            work.mkdir()
            t0 = time.time()
            r = run_trial(i, args, work)
            r["wall_s"] = time.time() - t0
            if not r["ok"] or args.keep_logs:
                for log in work.glob("*.log"):
                    (out / f"trial{i}-{log.name}").write_bytes(log.read_bytes())
            trials.append(r)
            ks = " ".join(f"{k['kind']}:{k.get('recovery_s', float('nan')):.2f}s/lost{k.get('steps_lost', '?')}"
                          for k in r["kills"])
            print(f"trial {i + 1}/{args.trials}: {'ok' if r['ok'] else 'HANG' if r['hang'] else 'FAILED'} "
                  f"{r['wall_s']:.1f}s  {ks}", flush=True)
    total = time.time() - t_start
    report = {"args": vars(args), "total_s": total, "trials": trials, "summary": {}}
    lines = [f"recovery benchmark: sample={args.sample} trials={args.trials} kills={args.kills} "
             f"checkpoint_every={args.checkpoint_every} launcher={'torchrun' if args.untuned else args.launcher} {'UNTUNED' if args.untuned else 'tuned'}"
             f"{'' if args.rdzv_poll is None else f' rdzv_poll={args.rdzv_poll}s'} "
             f"({total:.0f} s)"]
    for kind in dict.fromkeys(k["kind"] for t in trials for k in t["kills"]):
        rec = [k["recovery_s"] for t in trials for k in t["kills"] if k["kind"] == kind and "recovery_s" in k]
        lost = [k["steps_lost"] for t in trials for k in t["kills"] if k["kind"] == kind and "steps_lost" in k]
        n = sum(1 for t in trials for k in t["kills"] if k["kind"] == kind)
        report["summary"][kind] = {"n": n, "recovered": len(rec), "recovery_s": rec, "steps_lost": lost}
        if rec:
            lines.append(f"  {kind:6s} kill -> first resumed step: min {min(rec):.2f}  median {statistics.median(rec):.2f}"
                         f"  p90 {pct(rec, 0.9):.2f}  max {max(rec):.2f} s   ({len(rec)}/{n} recovered)")
            lines.append(f"  {kind:6s} steps lost: max {max(lost)}  median {statistics.median(lost)}"
                         f"  (interval {args.checkpoint_every})")
    blocking = [b for t in trials for b in t["ckpt_blocking_s"]]
    step_med = statistics.median([t["step_s_median"] for t in trials if t["step_s_median"]] or [float("nan")])
    if blocking:
        bmean = statistics.mean(blocking)
        share_run = bmean / (args.checkpoint_every * step_med)
        share_default = bmean / (default_every * step_med)
        report["summary"]["checkpoint"] = {"blocking_mean_s": bmean, "step_s_median": step_med,
                                           "share_at_run_interval": share_run,
                                           "share_at_default_interval": share_default,
                                           "write_mean_s": statistics.mean(t for tr in trials for t in tr["ckpt_write_s"])}
        lines.append(f"  checkpoint: blocking {bmean * 1000:.1f} ms (background write "
                     f"{report['summary']['checkpoint']['write_mean_s'] * 1000:.0f} ms), step {step_med * 1000:.1f} ms"
                     f" -> {share_run:.2%} of step time every {args.checkpoint_every} steps, "
                     f"{share_default:.2%} at the default interval ({default_every})")
    hangs = sum(t["hang"] for t in trials)
    failed = sum(1 for t in trials if not t["ok"] and not t["hang"])
    report["summary"]["hangs"], report["summary"]["failed"] = hangs, failed
    lines.append(f"  hangs: {hangs}/{len(trials)}   failed: {failed}/{len(trials)}   "
                 f"completed: {len(trials) - hangs - failed}/{len(trials)}")
    print("\n".join(lines))
    (out / "recovery.json").write_text(json.dumps(report, indent=1, default=str))
    plot(trials, out / "recovery_timeline.png")
    print(f"  wrote {out / 'recovery_timeline.png'} and {out / 'recovery.json'}")
    return 0 if hangs == 0 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Rendezvous at scale: N local torchrun agents forming one c10d group, and re-forming after a kill.

Each trial starts N agents on 127.0.0.1 at once, exactly as the manifests start
them (``python -m trainkit.torchrun``, c10d rendezvous hosted by agent 0, the
``--rdzv-conf`` of ``base/pytorchjob.yaml`` and the env it sets), one small
worker each (bench/rdzv_worker.py: joins the gloo group, all-reduces, then
all-reduces every 0.2 s). It measures

  form     seconds from starting the agents until all N workers are in one group
  re-form  seconds from SIGKILLing one non-host agent with its worker (a lost pod)
           and starting its replacement at once (the kubelet restarting the pod)
           until all N workers are in one new group
  hang     a trial whose group did not form (or re-form) within --timeout

and prints a table of agents x seconds (median and worst over the trials) for
each launcher, with the rendezvous settings used and the machine's cores:

  trainkit   python -m trainkit.torchrun, the launcher the manifests run (warm
             workers forked from a fork server that imported torch once)
  torchrun   torch's own launcher: the same agent and c10d rendezvous code, a
             fresh Python for every worker

On this machine all N agents share its cores and memory, so the figures include
starting N Pythons with torch on them (an upper bound of what N real nodes, each
with its own cores, spend), and a count that would not fit in the memory left
(estimated from the smaller counts) is reported as not run instead of started.
"extra rounds" counts groups that formed more often than once per phase: a
node declared dead by the keep-alive while it was only slow.

    .venv/bin/python bench/rendezvous.py                          # 8, 16, 32, 64 agents, 3 trials each
    .venv/bin/python bench/rendezvous.py --agents 8,16 --trials 5
    .venv/bin/python bench/rendezvous.py --rdzv-conf join_timeout=900,last_call_timeout=30
    .venv/bin/python bench/rendezvous.py --launcher torchrun      # torch's own launcher only

Reads only this repository (no fetched snapshot needed). Writes
``<out>/rendezvous.json`` with every trial and, with --keep-logs, the agents' logs.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from procs import descendants, free_port  # bench/procs.py

REPO = Path(__file__).resolve().parents[1]
TRAINING = REPO / "training"
WORKER = Path(__file__).resolve().parent / "rdzv_worker.py"
MANIFEST = REPO / "base" / "pytorchjob.yaml"


def manifest_launch() -> tuple[str, dict[str, str]]:
    """The --rdzv-conf (without is_host) and the literal env of the base PyTorchJob's container."""
    doc = yaml.safe_load(MANIFEST.read_text())
    pod = doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    container = next(c for c in pod["containers"] if c["name"] == "pytorch")
    conf = next(a.split("=", 1)[1] for a in container["command"] if a.startswith("--rdzv-conf="))
    conf = ",".join(kv for kv in conf.split(",") if not kv.startswith("is_host="))
    env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
    return conf, env


def mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


class Agent:
    def __init__(self, index: int, cmd: list[str], env: dict, log: Path):
        self.index = index
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, start_new_session=True)

    def kill(self) -> None:
        """SIGKILL the agent and every process under it, as losing its pod does.

        torch's launcher starts each worker in a session of its own, so the agent's
        process group alone would leave the worker running (and the old group working)."""
        tree = descendants(self.proc.pid) if self.proc.poll() is None else set()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def groups(out: Path) -> list[dict]:
    records = []
    for p in out.glob("ready-*.json"):
        try:
            records.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue
    return records


def group_count(out: Path, after: float, until: float) -> int:
    """How many distinct groups formed between two instants (1 when the rendezvous formed once)."""
    return len({r["group"] for r in groups(out) if after < r["ts"] <= until})


def wait_group(out: Path, n: int, after: float, deadline: float, agents: list[Agent], lowest_mem: list[int]):
    """Seconds-stamp at which one group of n workers, all ready after ``after``, is complete; None on timeout."""
    while time.time() < deadline:
        lowest_mem[0] = min(lowest_mem[0], mem_available())
        by_group: dict[int, list[dict]] = {}
        for r in groups(out):
            if r["ts"] > after and r["world"] == n:
                by_group.setdefault(r["group"], []).append(r)
        for members in by_group.values():
            if len({m["rank"] for m in members}) == n:
                return max(m["ts"] for m in members)
        if all(a.proc.poll() is not None for a in agents):
            return None
        time.sleep(0.05)
    return None


def run_trial(n: int, trial: int, launcher_name: str, args, conf: str, env: dict, workdir: Path) -> dict:
    out = workdir / f"{launcher_name}-n{n}-t{trial}"
    out.mkdir(parents=True)
    port = free_port()
    launcher = ["-m", "trainkit.torchrun"] if launcher_name == "trainkit" else ["-m", "torch.distributed.run"]

    def start(i: int) -> Agent:
        cmd = [sys.executable, *launcher, f"--nnodes={n}", "--nproc-per-node=1", f"--max-restarts={args.max_restarts}",
               "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", f"--rdzv-id=bench-{n}-{trial}",
               f"--rdzv-conf=is_host={'true' if i == 0 else 'false'},{conf}", "--local-addr=127.0.0.1",
               "--monitor-interval=0.1", str(WORKER), str(out)]
        return Agent(i, cmd, env, out / f"agent-{i}.log")

    lowest = [mem_available()]
    before = lowest[0]
    result = {"launcher": launcher_name, "agents": n, "trial": trial, "form_s": None, "reform_s": None,
              "hang": False}
    agents: list[Agent] = []
    try:
        t0 = time.time()
        agents = [start(i) for i in range(n)]
        formed = wait_group(out, n, t0, t0 + args.timeout, agents, lowest)
        if formed is None:
            result["hang"] = True
            result["stage"] = "form"
            return result
        result["form_s"] = round(formed - t0, 2)
        time.sleep(args.settle)
        result["groups_form"] = group_count(out, t0, time.time())
        victim = random.Random(trial * 1000 + n).randrange(1, n)
        t1 = time.time()
        agents[victim].kill()
        agents[victim] = start(victim)
        reformed = wait_group(out, n, t1, t1 + args.timeout, agents, lowest)
        if reformed is None:
            result["hang"] = True
            result["stage"] = "re-form"
            return result
        result["reform_s"] = round(reformed - t1, 2)
        result["killed_agent"] = victim
        time.sleep(args.settle)
        result["groups_reform"] = group_count(out, t1, time.time())
        return result
    finally:
        (out / "stop").touch()
        for a in agents:
            a.kill()
        result["peak_mem_gib"] = round((before - lowest[0]) / 2**30, 1)
        if args.keep_logs:
            dest = Path(args.out) / "logs" / out.name
            dest.mkdir(parents=True, exist_ok=True)
            for log in out.glob("agent-*.log"):
                shutil.copy(log, dest / log.name)


def summary(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} / {max(values):.1f}"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--agents", default="8,16,32,64", help="comma-separated agent counts (default 8,16,32,64)")
    p.add_argument("--trials", type=int, default=3, help="trials per agent count (default 3)")
    p.add_argument("--rdzv-conf", default=None,
                   help="c10d settings without is_host (default: the --rdzv-conf of base/pytorchjob.yaml)")
    p.add_argument("--launcher", default="trainkit,torchrun",
                   help="comma-separated, each of: trainkit (python -m trainkit.torchrun, as the manifests run it), "
                        "torchrun (torch's own; the same agent and rendezvous, fresh worker processes) "
                        "(default trainkit,torchrun)")
    p.add_argument("--max-restarts", type=int, default=3, help="torchrun --max-restarts (default 3, the manifests')")
    p.add_argument("--timeout", type=float, default=300,
                   help="a group not formed (or re-formed) within this many seconds is a hang (default 300)")
    p.add_argument("--settle", type=float, default=2.0, help="seconds between forming and the kill (default 2)")
    p.add_argument("--keep-logs", action="store_true", help="copy the agents' logs to --out/logs")
    p.add_argument("--out", default="out/bench-rendezvous", help="folder for rendezvous.json (and logs)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        counts = [int(x) for x in args.agents.split(",") if x.strip()]
    except ValueError:
        print(f"rendezvous: error: --agents: not a list of numbers: {args.agents!r}", file=sys.stderr)
        return 2
    if not counts or min(counts) < 2:
        print("rendezvous: error: --agents: every count must be 2 or more", file=sys.stderr)
        return 2
    launchers = [x.strip() for x in args.launcher.split(",") if x.strip()]
    if not launchers or any(x not in ("trainkit", "torchrun") for x in launchers):
        print(f"rendezvous: error: --launcher: each of trainkit, torchrun, not {args.launcher!r}", file=sys.stderr)
        return 2
    conf, manifest_env = manifest_launch()
    if args.rdzv_conf is not None:
        conf = args.rdzv_conf
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", **manifest_env)
    env["PYTHONPATH"] = os.pathsep.join([str(TRAINING), *filter(None, [env.get("PYTHONPATH")])])
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"):
        env.pop(k, None)
    print(f"launchers: {', '.join(launchers)}; --rdzv-conf=is_host=...,{conf}; env: "
          f"{' '.join(f'{k}={v}' for k, v in sorted(manifest_env.items()))}; {os.cpu_count()} cores, "
          f"{mem_available() / 2**30:.1f} GiB available", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kdt-rdzv-") as tmp:
        for launcher in launchers:
            per_agent = 0.0          # GiB one agent took in the largest trial so far
            for n in counts:
                for t in range(args.trials):
                    need, have = per_agent * n * 1.1, mem_available() / 2**30
                    if per_agent and need > have:
                        rows.append({"launcher": launcher, "agents": n, "trial": t, "skipped": True,
                                     "need_gib": round(need, 1), "have_gib": round(have, 1)})
                        print(f"  {launcher} {n:3d} agents: not run: needs ~{need:.0f} GiB "
                              f"({per_agent * 1024:.0f} MiB an agent), {have:.0f} GiB available", flush=True)
                        break
                    r = run_trial(n, t, launcher, args, conf, env, Path(tmp))
                    rows.append(r)
                    per_agent = max(per_agent, r["peak_mem_gib"] / n)
                    state = ("HANG at " + r["stage"] if r["hang"] else
                             f"form {r['form_s']} s ({r.get('groups_form')} group), re-form {r['reform_s']} s "
                             f"({r.get('groups_reform')} group)")
                    print(f"  {launcher} {n:3d} agents, trial {t + 1}: {state} (memory {r['peak_mem_gib']} GiB)",
                          flush=True)
    print()
    print("| launcher | agents | form s (median / worst) | re-form after a lost agent s (median / worst) "
          "| hangs | extra rounds | memory GiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for launcher in launchers:
        for n in counts:
            every = [r for r in rows if r["agents"] == n and r["launcher"] == launcher]
            rs = [r for r in every if not r.get("skipped")]
            if not rs:
                if every:
                    print(f"| {launcher} | {n} | not run: needs ~{every[0]['need_gib']:.0f} GiB of "
                          f"{every[0]['have_gib']:.0f} | | | | |")
                continue
            extra = sum(max(0, (r.get("groups_form") or 1) - 1) + max(0, (r.get("groups_reform") or 1) - 1)
                        for r in rs)
            print(f"| {launcher} | {n} | {summary([r['form_s'] for r in rs if r['form_s'] is not None])} | "
                  f"{summary([r['reform_s'] for r in rs if r['reform_s'] is not None])} | "
                  f"{sum(r['hang'] for r in rs)} of {len(rs)} | {extra} | {max(r['peak_mem_gib'] for r in rs)} |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rendezvous.json").write_text(json.dumps(
        {"launchers": launchers, "rdzv_conf": conf, "env": manifest_env, "cores": os.cpu_count(),
         "trials": rows}, indent=1))
    return 1 if any(r.get("hang") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

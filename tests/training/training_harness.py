"""Harness for the training tests (imported by name: a module of its own, not conftest): real torchrun agents, bounded in time, never orphaned.

Every agent runs in its own session (process group); torchrun starts each
worker in a session of its own too, so the harness records every descendant
it sees (and every worker pid the workers log) and SIGKILLs whatever is still
alive when a test ends, passes or fails.
"""
from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAINING = REPO / "training"
sys.path.insert(0, str(TRAINING))

from trainkit.log import parse_line  # noqa: E402

PYTHON = sys.executable

# Configurations shared by the sample tests, the recovery tests and their uninterrupted baselines.
# --step-sleep slows steps down so that a test can kill a process mid-run at a chosen step.
SMOKE_ARGS = ["--samples", "1024", "--batch", "16", "--epochs", "2", "--checkpoint-every", "8",
              "--deterministic", "--log-every", "1", "--audit-samples", "--step-sleep", "0.03"]
MNIST_ARGS = ["--data-dir", "/nonexistent-mnist", "--train-limit", "384", "--test-limit", "200",
              "--batch-size", "16", "--epochs", "2", "--checkpoint-every", "4", "--deterministic",
              "--log-every", "1", "--audit-samples", "--step-sleep", "0.05"]
T5_ARGS = ["--tiny", "--samples", "192", "--batch-size", "8", "--epochs", "2", "--checkpoint-every", "4",
           "--deterministic", "--log-every", "1", "--audit-samples", "--step-sleep", "0.05"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(**extra) -> dict:
    env = dict(os.environ)
    env.update({
        "PYTHONUNBUFFERED": "1",
        # pytorch/pytorch#135712: restarts must not reuse the previous round's store address.
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_VERBOSITY": "error",
        "TRAINKIT_PG_TIMEOUT": "60",
        "OMP_NUM_THREADS": "1",
        "PYTHONWARNINGS": "ignore",
    })
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    # As in the image (PYTHONPATH=/app/training): `python -m trainkit.torchrun` finds the launcher.
    env["PYTHONPATH"] = os.pathsep.join([str(TRAINING), *filter(None, [env.get("PYTHONPATH")])])
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _children_map() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(d))
    return out


def descendants(pid: int, cmap: dict[int, list[int]] | None = None) -> set[int]:
    cmap = _children_map() if cmap is None else cmap
    seen, todo = set(), [pid]
    while todo:
        for c in cmap.get(todo.pop(), []):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class Agent:
    """One torchrun agent (a "node"), its log file and every process it started."""
    name: str
    proc: subprocess.Popen
    log_path: Path
    tracked: set = field(default_factory=set)
    started: float = field(default_factory=time.time)
    # The log as read so far, and its tagged lines parsed once: the wait loops read it 20 times a second.
    _raw: bytes = b""
    _parsed: list = field(default_factory=list)
    _parsed_upto: int = 0
    _tracked_at: float = 0.0

    def track(self, children: dict[int, list[int]] | None = None, every: float = 0.0) -> None:
        """Record the agent's descendants (a scan of /proc, at most once per ``every`` seconds) and the
        worker pids its log names."""
        now = time.time()
        if self.proc.poll() is None and now - self._tracked_at >= every:
            self._tracked_at = now
            self.tracked |= descendants(self.proc.pid, children)
        for f in self.events("DDP"):
            self.tracked.add(int(f["pid"]))

    def text(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(len(self._raw))
                self._raw += f.read()
        except FileNotFoundError:
            pass
        return self._raw.decode(errors="replace")

    def events(self, tag: str | None = None) -> list[dict]:
        text = self.text()
        end = text.rfind("\n") + 1                # complete lines only; a partial one waits for its end
        if end > self._parsed_upto:
            for line in text[self._parsed_upto:end].splitlines():
                parsed = parse_line(line)
                if parsed:
                    ev = dict(parsed[1])
                    ev["_tag"] = parsed[0]
                    self._parsed.append(ev)
            self._parsed_upto = end
        return [dict(e) for e in self._parsed if tag is None or e["_tag"] == tag]

    def worker_pid(self, rank: int) -> int:
        """The pid of the newest worker of this rank that logged on this node."""
        pids = [int(f["pid"]) for f in self.events("DDP") if int(f["rank"]) == rank]
        if not pids:
            raise AssertionError(f"{self.name}: no worker of rank {rank} yet\n{self.text()[-3000:]}")
        return pids[-1]

    def local_worker_pids(self) -> list[int]:
        return [int(f["pid"]) for f in self.events("DDP")]

    def kill_all(self, sig=signal.SIGKILL) -> None:
        self.track()
        for pid in [self.proc.pid, *self.tracked]:
            if alive(pid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass


class Cluster:
    """Starts agents; on teardown, kills every process any of them started."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.agents: list[Agent] = []

    def start(self, name: str, sample: str, args: list[str], *, nnodes: str = "1", nproc: int = 2,
              rdzv_port: int | None = None, rdzv_id: str = "job", host: bool = True,
              rdzv_conf: str = "", max_restarts: int = 0, env: dict | None = None,
              launcher: str = "trainkit", pet_env: dict | None = None) -> Agent:
        # trainkit: python -m trainkit.torchrun, as every recipe of the project launches (warm workers);
        # torchrun: torch's own launcher, which the samples support as well.
        launcher_cmd = {"trainkit": ["-m", "trainkit.torchrun"], "torchrun": ["-m", "torch.distributed.run"]}[launcher]
        cmd = [PYTHON, *launcher_cmd, f"--nnodes={nnodes}", f"--nproc-per-node={nproc}",
               f"--max-restarts={max_restarts}", "--monitor-interval=0.1"]
        if pet_env is not None:
            # As Trainer v2 launches: the node count, rank and master only in PET_* (torchrun's flag
            # defaults), static rendezvous, no --nnodes/--nproc-per-node on the command line.
            cmd = [PYTHON, *launcher_cmd, f"--max-restarts={max_restarts}", "--monitor-interval=0.1"]
            env = {**(env or {}), **pet_env}
        elif rdzv_port is None:
            cmd += ["--standalone"]
        else:
            conf = ",".join(x for x in [f"is_host={'true' if host else 'false'}", rdzv_conf] if x)
            cmd += ["--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{rdzv_port}", f"--rdzv-id={rdzv_id}",
                    f"--rdzv-conf={conf}", "--local-addr=127.0.0.1"]
        cmd += [str(TRAINING / sample), *args]
        log_path = self.tmp / f"{name}.log"
        with open(log_path, "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.tmp,
                                    env=base_env(**(env or {})), start_new_session=True)
        agent = Agent(name, proc, log_path)
        self.agents.append(agent)
        return agent

    def track_all(self, every: float = 0.5) -> None:
        """Every agent's descendants, from one scan of /proc at most every ``every`` seconds (a worker the
        agent starts lives for seconds; the workers' own pids come from their [DDP] lines at once)."""
        if any(a.proc.poll() is None and time.time() - a._tracked_at >= every for a in self.agents):
            cmap = _children_map()
            for a in self.agents:
                a.track(cmap, every)
        else:
            for a in self.agents:
                a.track(every=float("inf"))

    def wait_for(self, predicate, timeout: float, what: str):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.track_all()
            value = predicate()
            if value:
                return value
            if all(a.proc.poll() is not None for a in self.agents):
                value = predicate()
                if value:
                    return value
                raise AssertionError(f"every agent exited while waiting for {what}\n{self.dump()}")
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{self.dump()}")

    def wait_all(self, timeout: float, agents: list[Agent] | None = None) -> list[int]:
        agents = agents or self.agents
        deadline = time.time() + timeout
        for a in agents:
            while a.proc.poll() is None:
                if time.time() > deadline:
                    raise AssertionError(f"agents still running after {timeout}s\n{self.dump()}")
                self.track_all()
                time.sleep(0.05)
        return [a.proc.returncode for a in agents]

    def dump(self) -> str:
        return "\n".join(f"===== {a.name} (rc={a.proc.poll()}) =====\n{a.text()[-6000:]}" for a in self.agents)

    def cleanup(self) -> None:
        for a in self.agents:
            if a.proc.poll() is None:
                a.kill_all(signal.SIGTERM)
        time.sleep(0.2)
        for a in self.agents:
            a.kill_all(signal.SIGKILL)
            try:
                a.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


# -- results ------------------------------------------------------------------
def done_lines(agents) -> list[dict]:
    return [e for a in agents for e in a.events("DONE")]


def final_result(agents, world_size: int | None = None) -> dict:
    """The [DONE] lines of the last worker group: one per rank, all agreeing."""
    done = done_lines(agents)
    assert done, "no [DONE] line"
    ws = int(done[-1]["world_size"]) if world_size is None else world_size
    last = {}
    for e in done:
        last[int(e["rank"])] = e
    assert sorted(last) == list(range(ws)), f"[DONE] from ranks {sorted(last)}, expected {ws}"
    digests = {e["weights_sha256"] for e in last.values()}
    losses = {e["final_loss"] for e in last.values()}
    assert len(digests) == 1, f"ranks disagree on the final weights: {digests}"
    assert len(losses) == 1, f"ranks disagree on the final loss: {losses}"
    d = last[0]
    assert len(d["weights_sha256"]) == 64 and float(d["final_loss"]) == float(d["final_loss"])
    return d


def assert_resumes_were_complete(agents) -> list[dict]:
    """Every [RESUME] from a checkpoint names one whose publication was logged before it."""
    events = sorted((e for a in agents for e in a.events() if e["_tag"] in ("CKPT", "RESUME")),
                    key=lambda e: float(e["ts"]))
    published: set[int] = set()
    resumes = []
    for e in events:
        if e["_tag"] == "CKPT" and e.get("phase") == "complete":
            published.add(int(e["step"]))
        elif e["_tag"] == "RESUME" and e.get("source", "none") != "none":
            step = int(e["step"])
            assert step in published, f"resumed from step {step}, never published (published: {sorted(published)})"
            assert Path(e["source"]).name == f"step_{step:09d}"
            assert ".tmp-" not in e["source"] and ".trash-" not in e["source"]
            resumes.append(e)
    return resumes


# -- baselines: one uninterrupted run per configuration, shared by the xdist workers -----
def _source_hash() -> str:
    h = hashlib.sha256()
    for p in sorted(TRAINING.rglob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]



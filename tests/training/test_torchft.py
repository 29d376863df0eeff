"""Per-step fault tolerance (``--fault-tolerance torchft``, trainkit/ft.py): real Lighthouse, real torchrun
agents, one replica group each, on CPU with gloo. A group is killed mid-run: the healthy group's step
counter never goes back, and the returning group heals from it (its weights after the transfer equal
its peer's, digest against digest). The Lighthouse itself killed and started again (every group saves its
step, restarts, waits for it and loses nothing) runs as the shipped target runs, with the Lighthouse pod
the manifests make: tests/run/test_run_targets.py, test_torchft_groups_heal_and_ride_out_a_lighthouse_restart."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from training_harness import SMOKE_ARGS, T5_ARGS, base_env, free_port

pytestmark = pytest.mark.timeout(180)

# The Lighthouse as the bench and the manifests start it, with a heartbeat timeout short enough that a dead
# group is declared dead in half a second (torchft's default is 5 s).
LIGHTHOUSE = [str(Path(sys.executable).parent / "torchft_lighthouse"), "--min_replicas", "1",
              "--quorum_tick_ms", "100", "--heartbeat_timeout_ms", "500", "--join_timeout_ms", "5000"]
FT_SMOKE = [a for a in SMOKE_ARGS if a != "--audit-samples"] + ["--step-sleep", "0.05"]
# Paced at 0.2 s a step (T5_ARGS' 0.05 replaced): at 0.05 the surviving group's 16 steps took 4.6 s on a fresh
# clone's loaded make test, and it finished alone before the killed group was back to heal from it.
FT_T5 = [a for a in T5_ARGS if a != "--audit-samples"] + ["--max-steps", "16", "--step-sleep", "0.2"]


class Lighthouse:
    def __init__(self, tmp: Path):
        self.port = free_port()
        self.tmp = tmp
        self.proc = None
        self.starts = 0

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.starts += 1
        with open(self.tmp / f"lighthouse{self.starts}.log", "wb") as out:
            self.proc = subprocess.Popen([*LIGHTHOUSE, "--bind", f"127.0.0.1:{self.port}"], stdout=out,
                                         stderr=subprocess.STDOUT, env=base_env(RUST_LOG="warn"),
                                         start_new_session=True)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def lighthouse(tmp_path):
    lh = Lighthouse(tmp_path)
    lh.start()
    yield lh
    lh.kill()


def start_groups(cluster, lighthouse, sample, args, ckpt, n=2):
    ckpt = ckpt if isinstance(ckpt, list) else ["--checkpoint-dir", str(ckpt)]
    return [cluster.start(f"group{g}", sample, [*args, *ckpt], nproc=1, max_restarts=3,
                          env={"TRAINKIT_FAULT_TOLERANCE": "torchft", "REPLICA_GROUP_ID": g,
                               "NUM_REPLICA_GROUPS": n, "TORCHFT_LIGHTHOUSE": lighthouse.address,
                               "RUST_LOG": "warn"})
            for g in range(n)]


def trains(agent) -> list[tuple[int, float, int]]:
    """(step, ts, participants) of every [TRAIN] line of a group."""
    return [(int(e["step"]), float(e["ts"]), int(e["participants"])) for e in agent.events("TRAIN")]


def newest_worker_pid(agent) -> int:
    return int(agent.events("DDP")[-1]["pid"])


def assert_never_back(agent):
    steps = [s for s, _, _ in trains(agent)]
    assert steps == sorted(steps) and len(set(steps)) == len(steps), f"{agent.name} stepped back: {steps}"


def heal_pairs(healthy, returning, after: float) -> list[tuple[dict, dict]]:
    """([HEAL] received by the returning group after ``after``, the healthy group's [HEAL] sent at that step)."""
    received = [e for e in returning.events("HEAL") if e["role"] == "received" and float(e["ts"]) > after]
    sent = {e["step"]: e for e in healthy.events("HEAL") if e["role"] == "sent"}
    return [(r, sent.get(r["step"])) for r in received]


def kill_a_group_and_check_it_heals(cluster, lighthouse, sample, args, tmp_path, min_steps):
    ck = ["--checkpoint-dir", str(tmp_path / "ck")] if "--output-dir" not in args else []
    g0, g1 = start_groups(cluster, lighthouse, sample, args, ck)
    # both groups train together, and group 1 has published a checkpoint of its own and trained two steps past
    # it: killed now, it comes back behind its peer and must heal
    def ready():
        ck = [int(e["step"]) for e in g1.events("CKPT") if e.get("phase") == "complete"]
        together = [s for s, _, p in trains(g1) if p == 2]
        return len(together) >= min_steps and ck and together[-1] >= max(ck) + 2
    cluster.wait_for(ready, 120, f"group1 training {min_steps} steps with group0, 2 past a checkpoint of its own")
    t_kill = time.time()
    os.kill(newest_worker_pid(g1), signal.SIGKILL)   # group 1's worker; its torchrun starts it again
    assert cluster.wait_all(150) == [0, 0], cluster.dump()
    assert_never_back(g0)
    before = [s for s in trains(g1) if s[1] <= t_kill]
    after = [s for s in trains(g1) if s[1] > t_kill]
    assert after and [s for s, _, _ in after] == sorted({s for s, _, _ in after})
    # group 0 never restarted (it trained on, alone while group 1 was away when that took longer than the
    # Lighthouse's heartbeat timeout)
    assert len(g0.events("DDP")) == 1
    # group 1 came back (torchrun restarted its worker), resumed from its own checkpoint, then received the
    # live state from group 0: the same weights, digest for digest, at the same step
    assert len(g1.events("DDP")) == 2 and g1.events("DDP")[1]["restart"] == "1"
    resume = [e for e in g1.events("RESUME") if float(e["ts"]) > t_kill]
    assert len(resume) == 1 and resume[0]["source"] != "none" and int(resume[0]["step"]) <= before[-1][0]
    pairs = heal_pairs(g0, g1, t_kill)
    assert len(pairs) == 1, cluster.dump()
    received, sent = pairs[0]
    assert sent is not None, (received, g0.events("HEAL"))
    assert received["weights_sha256"] == sent["weights_sha256"]
    assert int(received["step"]) > int(resume[0]["step"]) and int(received["step"]) == after[0][0]
    # and from then on both train together, to the same end
    d0, d1 = g0.events("DONE")[-1], g1.events("DONE")[-1]
    assert d0["step"] == d1["step"] and d0["weights_sha256"] == d1["weights_sha256"]
    assert d0["final_loss"] == d1["final_loss"]
    together = [s for s in trains(g0) if s[0] > int(received["step"])]
    assert together and all(p == 2 for _, _, p in together)
    return g0, t_kill


def test_ddp_group_killed_heals_from_its_peer(cluster, lighthouse, tmp_path):
    g0, t_kill = kill_a_group_and_check_it_heals(cluster, lighthouse, "smoke.py", FT_SMOKE, tmp_path, min_steps=4)
    # the healthy group's pauses: between two of its steps, at most the Lighthouse's heartbeat timeout
    # plus the step and a quorum, here about a second; bounded loosely for a loaded machine
    ts = [t for _, t, _ in trains(g0)]
    assert max(b - a for a, b in zip(ts, ts[1:])) < 10


def test_fsdp_group_killed_heals_sharded_state(cluster, lighthouse, tmp_path):
    kill_a_group_and_check_it_heals(cluster, lighthouse, "t5_fsdp.py", FT_T5, tmp_path, min_steps=2)


def test_llm_fsdp_group_killed_heals_and_one_group_writes_the_outputs(cluster, lighthouse, tiny_llm, tmp_path):
    data = tiny_llm["data"]["chat"]
    out = tmp_path / "out"
    args = ["--model-local-dir", str(tiny_llm["model"]), "--local-files-only", "--train-file",
            str(data / "train.jsonl"), "--val-file", str(data / "val.jsonl"), "--deterministic", "--log-every", "1",
            "--parallel", "fsdp", "--finetune", "full", "--seq-len", "32", "--batch-size", "2", "--max-steps", "40",
            "--checkpoint-every", "4", "--eval-every", "8", "--lr", "1e-2", "--step-sleep", "0.1",
            "--output-dir", str(out)]
    g0, _ = kill_a_group_and_check_it_heals(cluster, lighthouse, "llm_finetune.py", args, tmp_path, min_steps=2)
    report = __import__("json").loads((out / "report.json").read_text())
    assert report["steps"] == 40 and report["weights_sha256"] == g0.events("DONE")[-1]["weights_sha256"]
    assert (out / "final" / "final.json").is_file() and (out / "best").is_symlink()
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]

"""trainkit.torchrun, the launcher every recipe uses: torchrun whose workers fork warm.

Real agents and workers: warm workers come from the fork server with torch
preloaded and train bit-identically to torchrun's fresh ones; failures and exit
codes reach the agent as under torchrun; whatever cannot run warm runs cold and
says why.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from training_harness import PYTHON, SMOKE_ARGS, TRAINING, base_env, final_result

pytestmark = pytest.mark.timeout(240)

sys.path.insert(0, str(TRAINING))
from trainkit import torchrun as launcher  # noqa: E402
from trainkit.log import parse_line  # noqa: E402


def events(text: str, tag: str) -> list[dict]:
    return [p[1] for p in map(parse_line, text.splitlines()) if p and p[0] == tag]


# `python -m trainkit.torchrun`, plus one line at the agent's exit: whether the agent imported torch._dynamo.
PROBED_AGENT = ("import atexit, runpy, sys; "
                "atexit.register(lambda: print('[PROBE] dynamo=' + str('torch._dynamo' in sys.modules), file=sys.stderr)); "
                "sys.argv[0] = 'trainkit.torchrun'; runpy.run_module('trainkit.torchrun', run_name='__main__')")


def launch(tmp_path: Path, script, *script_args, nproc=1, env=None, timeout=150, flags=(), probe=False):
    env = base_env(**(env or {}))
    env.pop("OMP_NUM_THREADS", None)          # torchrun's own rule decides (nproc > 1 -> 1)
    agent = ["-c", PROBED_AGENT] if probe else ["-m", "trainkit.torchrun"]
    cmd = [PYTHON, *agent, "--standalone", f"--nproc-per-node={nproc}",
           "--monitor-interval=0.1", *flags, str(script), *script_args]
    return subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


def test_warm_workers_train_bit_identically_to_torchruns_fresh_ones(cluster, baseline, tmp_path):
    warm = baseline("smoke.py", SMOKE_ARGS)                     # python -m trainkit.torchrun, nproc 2
    assert "[LAUNCH] workers=warm" in warm["_log"]
    ddp = events(warm["_log"], "DDP")
    assert {e["start"] for e in ddp} == {"warm"} and {e["threads"] for e in ddp} == {"1"}
    agent = cluster.start("cold", "smoke.py", [*SMOKE_ARGS, "--checkpoint-dir", str(tmp_path / "ck")],
                          nproc=2, launcher="torchrun")
    assert cluster.wait_all(200) == [0], cluster.dump()
    assert {e["start"] for e in agent.events("DDP")} == {"cold"}
    cold = final_result([agent], world_size=2)
    assert cold["weights_sha256"] == warm["weights_sha256"] and cold["final_loss"] == warm["final_loss"]


@pytest.fixture(scope="session")
def two_warm_workers(session_folder, computed_once):
    """One ``python -m trainkit.torchrun --standalone --nproc-per-node=2`` (OMP_NUM_THREADS unset) of a script
    that prints its [W] line (SCRIPT), then joins its process group as the samples do (trainkit's
    init_distributed: the [DDP] line with the worker's threads, start and age); (exit code, stdout, stderr,
    the script). Read by the two tests below: one agent, fork server and pair of workers for both."""
    def run():
        folder = session_folder("launcher-two-warm-workers")
        script = write_script(folder, "from trainkit.dist import cleanup, init_distributed; "
                                      "init_distributed('cpu'); cleanup(); return 0")
        out = launch(folder, script, "--flag", "x y", nproc=2)
        return out.returncode, out.stdout, out.stderr, script
    return computed_once("launcher-two-warm-workers", run)


def test_nproc2_without_omp_setting_gets_torchruns_one_thread_per_worker(two_warm_workers):
    code, stdout, stderr, _ = two_warm_workers
    assert code == 0, stdout + stderr
    ddp = events(stdout, "DDP")
    # OpenMP reads OMP_NUM_THREADS once, in the fork server: it must be set before that starts.
    assert len(ddp) == 2 and {e["threads"] for e in ddp} == {"1"} and {e["start"] for e in ddp} == {"warm"}
    assert all(float(e["startup_s"]) < 5 for e in ddp)
    # the agent loaded torch without it, so its fork could not be the server: a fresh one was spawned
    (launched,) = events(stdout, "LAUNCH")
    assert launched["fork_server"] == "spawned (OMP_NUM_THREADS set after the agent started)"


@pytest.mark.parametrize("started,now,why", [
    ({"OMP_NUM_THREADS": None, "PYTHONUNBUFFERED": "1"}, {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"},
     "OMP_NUM_THREADS set after the agent started"),
    ({"OMP_NUM_THREADS": "4", "PYTHONUNBUFFERED": None}, {"OMP_NUM_THREADS": "4", "PYTHONUNBUFFERED": "1"},
     "PYTHONUNBUFFERED set after the agent started"),
    ({"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}, {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
                                                          launcher.FORK_ENV: "0"}, f"{launcher.FORK_ENV}=0"),
])
def test_the_fork_server_is_spawned_where_a_fork_of_the_agent_would_differ(monkeypatch, started, now, why):
    for k in (*launcher.STARTUP_ENV, launcher.FORK_ENV):
        monkeypatch.delenv(k, raising=False)
    for k, v in now.items():
        monkeypatch.setenv(k, v)
    assert launcher.fork_refusal(started) == why


def test_the_fork_server_is_spawned_where_the_agent_loaded_a_gpu_driver(monkeypatch, tmp_path):
    started = {k: os.environ.get(k) for k in launcher.STARTUP_ENV}
    monkeypatch.delenv(launcher.FORK_ENV, raising=False)
    maps = tmp_path / "maps"
    maps.write_text(Path("/proc/self/maps").read_text()
                    + "7f0000000000-7f0000001000 r-xp 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/libcuda.so.570.1\n")
    monkeypatch.setattr(launcher, "MAPS", str(maps))
    assert launcher.fork_refusal(started) == "the agent loaded libcuda.so"
    monkeypatch.setattr(launcher, "MAPS", str(tmp_path / "none"))
    assert launcher.fork_refusal(started) == f"no {tmp_path / 'none'} to check for a GPU driver"


SCRIPT = textwrap.dedent("""\
    import os, sys
    {top}
    def main():
        rank = int(os.environ["RANK"])
        # one write per line: print() writes text and newline separately, and two workers share the pipe
        sys.stdout.write(f"[W] rank={{rank}} name={{__name__}} restart={{os.environ['TORCHELASTIC_RESTART_COUNT']}}"
                         f" warm={{'trainkit.warm' in sys.modules}} argv={{sys.argv[1:]}} cwd_first={{sys.path[0]}}\\n")
        sys.stdout.flush()
        {body}
    if __name__ == "__main__":
        sys.exit(main())
    """)


def write_script(tmp_path: Path, body: str, top: str = "") -> Path:
    path = tmp_path / "job" / "work.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(SCRIPT.format(top=top, body=body))
    return path


def test_script_runs_as_main_with_its_args_and_folder_on_sys_path(two_warm_workers):
    code, stdout, stderr, script = two_warm_workers
    assert code == 0, stdout + stderr
    lines = sorted(line for line in stdout.splitlines() if line.startswith("[W]"))
    assert lines == [f"[W] rank={r} name=__main__ restart=0 warm=True argv=['--flag', 'x y'] "
                     f"cwd_first={script.parent}" for r in (0, 1)], stdout


def test_nonzero_exit_fails_the_group_and_restarts_it_warm(tmp_path):
    """A worker that exits 3 every time, one restart allowed: the group restarts warm, fails again, and the agent
    exits non-zero. (A group that succeeds after its warm restart: test_training_recovery.py's
    test_worker_sigterm_then_sigkill_resume_bit_identical, with the same launcher.)"""
    script = write_script(tmp_path, "return 3")
    out = launch(tmp_path, script, flags=["--max-restarts=1"], probe=True)
    assert out.returncode != 0, out.stdout + out.stderr
    assert out.stdout.count("[W] rank=0") == 2 and "[W] rank=0 name=__main__ restart=1 warm=True" in out.stdout
    assert "exitcode: 3" in out.stderr
    # the agent logged the failure with its traceback, in torch's log format, and never imported torch._dynamo
    failed = [line for line in out.stderr.splitlines() if "multiprocessing/api.py" in line]
    assert any("failed (exitcode: 3)" in line for line in failed), out.stderr
    assert any(line.endswith("] Traceback (most recent call last):") for line in failed), out.stderr
    assert any("ProcessExitedException: process 0 terminated with exit code 3" in line for line in failed)
    assert "[PROBE] dynamo=False" in out.stderr, out.stderr


def test_tracebacks_reach_torchs_log_as_torch_formats_them(tmp_path):
    """The agent's filter gives torch's formatter the traceback text it would have made itself: the same lines."""
    code = textwrap.dedent("""\
        import logging, sys
        import torch
        from trainkit import torchrun
        log = logging.getLogger("torch.distributed.elastic.multiprocessing.api")
        def fail():
            try:
                raise ValueError("worker failed")
            except ValueError:
                log.exception("failed")
        fail()                                   # torch's own formatting (imports torch._dynamo)
        assert "torch._dynamo" in sys.modules
        print("----", file=sys.stderr)
        assert torchrun.format_tracebacks_without_dynamo()
        fail()
        """)
    out = subprocess.run([PYTHON, "-c", code], env=base_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    strip = lambda text: [line.split("] ", 1)[1] for line in text.strip().splitlines()]   # noqa: E731
    torch_own, filtered = out.stderr.split("----\n")
    assert strip(torch_own) == strip(filtered) and any("ValueError: worker failed" in x for x in strip(filtered))
    # the agent's own use of it, a worker failing at every restart: test_nonzero_exit_fails_the_group_and_restarts_it_warm


def test_a_script_that_cannot_be_preloaded_is_reported_and_fails_cleanly(tmp_path):
    script = write_script(tmp_path, "return 0", top="import trainkit_no_such_module")
    out = launch(tmp_path, script, timeout=60)
    assert out.returncode != 0
    assert "[WARN] trainkit.warm: preloading" in out.stderr and "ModuleNotFoundError" in out.stderr


def test_cold_when_asked_and_says_why(tmp_path):
    script = write_script(tmp_path, "return 0")
    out = launch(tmp_path, script, env={"TRAINKIT_WARM": "0"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert events(out.stdout, "LAUNCH")[0] == {"workers": "cold", "reason": "TRAINKIT_WARM=0",
                                                 "ts": events(out.stdout, "LAUNCH")[0]["ts"]}
    assert "[W] rank=0 name=__main__ restart=0 warm=False" in out.stdout


@pytest.mark.parametrize("argv,why", [
    (["-m", "trainkit.something"], "-m/--no-python entrypoint"),
    (["--no-python", "/bin/echo"], "-m/--no-python entrypoint"),
    (["--start-method=spawn", "SCRIPT"], "--start-method=spawn asked for"),
    (["/nonexistent/train.py"], "/nonexistent/train.py is not a .py file"),
    (["SCRIPT"], None),
    (["--start-method=forkserver", "SCRIPT"], None),
])
def test_which_entrypoints_run_warm(tmp_path, monkeypatch, argv, why):
    from torch.distributed import run as torchrun
    script = write_script(tmp_path, "return 0")
    monkeypatch.delenv("TRAINKIT_WARM", raising=False)
    monkeypatch.delenv("PET_START_METHOD", raising=False)
    argv = ["--standalone", *[str(script) if a == "SCRIPT" else a for a in argv]]
    assert launcher.warm_eligible(torchrun.parse_args(argv), argv) == why


def test_bad_poll_setting_is_one_clear_line(tmp_path):
    """The real agent: a non-zero exit with one line and no traceback (the values main() refuses, below)."""
    out = launch(tmp_path, write_script(tmp_path, "return 0"), env={"TRAINKIT_RDZV_POLL": "fast"}, timeout=60)
    assert out.returncode != 0
    assert "TRAINKIT_RDZV_POLL='fast': expected seconds in (0, 1], or off" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("value", ["fast", "0", "2"])
def test_a_poll_setting_outside_0_1_is_refused_before_anything_starts(tmp_path, monkeypatch, capsys, value):
    """main(), what `python -m trainkit.torchrun` runs, in this process: it ends with the one line (SystemExit
    with a message: what the interpreter prints, exit 1, as the real agent above shows) before it parses
    torchrun's flags or logs [LAUNCH]."""
    monkeypatch.setenv(launcher.POLL_ENV, value)
    with pytest.raises(SystemExit) as done:
        launcher.main(["--standalone", "--nproc-per-node=1", str(write_script(tmp_path, "return 0"))])
    assert done.value.code == f"trainkit.torchrun: TRAINKIT_RDZV_POLL={value!r}: expected seconds in (0, 1], or off"
    assert "[LAUNCH]" not in capsys.readouterr().out


def _stat(pid: int) -> tuple[str, int]:
    """(state, parent pid) of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def test_sigterm_to_the_agent_saves_on_every_worker_and_leaves_no_process(cluster, tmp_path):
    """Pod deletion: the kubelet SIGTERMs the agent (PID 1); the fork server must not outlive it."""
    import signal
    import time

    from training_harness import alive

    ck = tmp_path / "ck"
    agent = cluster.start("agent", "smoke.py", [*SMOKE_ARGS, "--checkpoint-dir", str(ck)], nproc=2)
    cluster.wait_for(lambda: any(int(e["step"]) >= 5 for e in agent.events("TRAIN")), 120, "step 5")
    agent.track()
    started = set(agent.tracked)                    # fork server, workers (and torch's helpers)
    assert len([e for e in agent.events("DDP")]) == 2 and len(started) >= 3, started
    # The harness sets OMP_NUM_THREADS and PYTHONUNBUFFERED, as kdt run does: the fork server is a fork of the
    # agent, no program of its own (the workers' parent, the agent's child, runs the agent's command line).
    (launched,) = agent.events("LAUNCH")
    assert launched["fork_server"] == "forked"
    servers = {_stat(int(e["pid"]))[1] for e in agent.events("DDP")}
    assert len(servers) == 1 and _stat(servers.copy().pop())[1] == agent.proc.pid
    assert Path(f"/proc/{servers.pop()}/cmdline").read_bytes() == Path(f"/proc/{agent.proc.pid}/cmdline").read_bytes()
    agent.proc.send_signal(signal.SIGTERM)
    assert agent.proc.wait(timeout=60) != 0
    stops = [e for e in agent.events("STOP") if e.get("action") == "exit"]
    assert sorted(e["rank"] for e in stops) == ["0", "1"] and {e["saved"] for e in stops} == {"true"}
    saved = [e for e in agent.events("CKPT") if e.get("reason") == "sigterm" and e.get("phase") == "complete"]
    assert len(saved) == 1 and (Path(saved[0]["path"]) / "COMPLETE").is_file()
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(p) for p in started):
        time.sleep(0.1)
    assert not [p for p in started if alive(p)], "processes outlived the agent"


PRELOADED = ["smoke.py", "mnist_ddp.py", "t5_fsdp.py"]      # the one that imports transformers last


def _preload_each_sample() -> dict[str, tuple[str, str]]:
    """One fork server's preload, probed after each sample: the first named by TRAINKIT_WARM_SCRIPT, as
    trainkit.torchrun starts its server, the next ones through the same trainkit.warm.preload. Per sample:
    (its probe line: native threads, Python threads, CUDA initialised, numpy/transformers loaded; the stderr of
    its preload). One interpreter and one import of torch and torch._dynamo for the three."""
    code = ("import os, sys, threading\n"
            f"import {', '.join(launcher.PRELOAD[:-1])}\n"
            "import trainkit.warm\n"
            "import torch\n"
            "for i, script in enumerate(sys.argv[1:]):\n"
            "    if i:\n"
            "        print(f'[PRELOAD] {script}', file=sys.stderr, flush=True)\n"
            "        trainkit.warm.preload(script)\n"
            "    else:\n"
            "        assert trainkit.warm._script == script, 'nothing preloaded'\n"
            "    print(len(os.listdir('/proc/self/task')), threading.active_count(), torch.cuda.is_initialized(),"
            " sorted(m for m in ('numpy', 'transformers') if m in sys.modules), flush=True)\n")
    scripts = [str(TRAINING / s) for s in PRELOADED]
    env = base_env(TRAINKIT_WARM_SCRIPT=scripts[0], PYTORCH_NVML_BASED_CUDA_CHECK="1")
    out = subprocess.run([PYTHON, "-c", code, *scripts], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    errs = out.stderr.split("[PRELOAD] ")
    assert len(lines) == len(errs) == len(PRELOADED), (out.stdout, out.stderr)
    return {s: (line, err) for s, line, err in zip(PRELOADED, lines, errs)}


@pytest.mark.parametrize("sample", PRELOADED)
def test_fork_server_stays_single_threaded_after_preloading_each_sample(sample, computed_once):
    """fork() copies only the calling thread: a helper thread started by an import in the fork server
    (holding a lock at fork time) would deadlock workers at random. The preload must leave one thread,
    and no CUDA context."""
    line, err = computed_once("fork-server-preload", _preload_each_sample)[sample]
    assert "[WARN]" not in err, err
    native, py, cuda, loaded = line.split(" ", 3)
    assert (native, py, cuda) == ("1", "1", "False")
    assert "numpy" in loaded and ("transformers" in loaded) == (sample == "t5_fsdp.py")


def test_a_missing_script_is_one_line_before_any_rendezvous(tmp_path, monkeypatch, capsys):
    """main() in this process, as above: the one line, before torchrun's agent (and its rendezvous) starts."""
    monkeypatch.delenv(launcher.POLL_ENV, raising=False)
    with pytest.raises(SystemExit) as done:
        launcher.main(["--standalone", "--nproc-per-node=1", str(tmp_path / "nope.py")])
    assert done.value.code == f"trainkit.torchrun: training script {tmp_path / 'nope.py'}: no such file"
    assert "[LAUNCH]" not in capsys.readouterr().out


@pytest.mark.parametrize("argv,warns", [
    (["--nnodes=2", "--max-restarts=3", "--master-addr=h", "SCRIPT"], True),        # Trainer v2's shape
    (["--nnodes=2", "--max-restarts=0", "--master-addr=h", "SCRIPT"], False),
    (["--nnodes=2", "--max-restarts=3", "--rdzv-backend=c10d", "--rdzv-endpoint=h:1", "SCRIPT"], False),
    (["--nnodes=1", "--max-restarts=3", "SCRIPT"], False),                          # becomes standalone c10d
    (["--standalone", "--max-restarts=3", "SCRIPT"], False),
])
def test_static_rendezvous_restarts_are_warned_about(tmp_path, argv, warns):
    from torch.distributed import run as torchrun
    script = write_script(tmp_path, "return 0")
    argv = [str(script) if a == "SCRIPT" else a for a in argv]
    warning = launcher.static_restart_warning(torchrun.parse_args(argv))
    assert (warning is not None) == warns
    if warns:
        assert "static rendezvous" in warning and "--rdzv-backend=c10d" in warning

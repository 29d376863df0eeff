"""`kdt run --live`: the real controllers drive the run, the node agent (kdt.live.node) runs the pods.

One control plane for the module (`kdt cluster up`, Trainer 2.3.0 with JobSet v0.12.0, the Training Operator
v1.9.4), every run attached to it with `--cluster`. Each fault scenario that runs here runs offline too, and
the two verdicts (success, the operator's reason) and restart counts are held equal: where they differed, the
offline rules were fixed (kdt.operators.framework.controller: the reasons are the operators' own).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KDT = [sys.executable, "-m", "kdt"]
NAME = f"pytest-run-{os.getpid()}"

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def cluster():
    env = {**os.environ, "KDT_LIVE_OWNER_PID": str(os.getpid())}
    up = subprocess.run([*KDT, "cluster", "up", "--name", NAME], capture_output=True, text=True, env=env, timeout=900)
    assert up.returncode == 0, up.stderr[-2000:]
    kubeconfig = up.stdout.strip().splitlines()[-1].removeprefix("KUBECONFIG=")
    yield kubeconfig
    subprocess.run([*KDT, "cluster", "down", "--name", NAME], capture_output=True, timeout=120)


def run(workdir: Path, *args, live: bool = True, timeout: float = 400):
    """`kdt run ARGS [--live --cluster NAME]`: (code, stdout, stderr, events)."""
    workdir.mkdir(parents=True, exist_ok=True)
    events = workdir / "events.jsonl"
    cmd = [*KDT, "run", *map(str, args), "--workdir", str(workdir / "run"), "--events", str(events)]
    if live:
        cmd += ["--live", "--cluster", NAME]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    evs = [json.loads(x) for x in events.read_text().splitlines()] if events.exists() else []
    return p.returncode, p.stdout, p.stderr, evs


def of(events, kind):
    return [e for e in events if e["kind"] == kind]


def kubectl(kubeconfig: str, *args) -> str:
    return subprocess.run([str(ROOT / ".venv" / "bin" / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
                          capture_output=True, text=True, check=True, timeout=60).stdout


def left_behind(kubeconfig: str, folder: Path) -> list[str]:
    """What a run may leave: its processes, nodes, PersistentVolumes, namespaces."""
    out = []
    key = str(folder).encode()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if key in Path(f"/proc/{d}/environ").read_bytes():
                    out.append(f"process {d}")
            except OSError:
                pass
    nodes = json.loads(kubectl(kubeconfig, "get", "nodes", "-l", "kdt.dev/run", "-o", "json"))["items"]
    pvs = json.loads(kubectl(kubeconfig, "get", "pv", "-l", "kdt.dev/run", "-o", "json"))["items"]
    out += [f"node {n['metadata']['name']}" for n in nodes] + [f"pv {p['metadata']['name']}" for p in pvs]
    ns = json.loads(kubectl(kubeconfig, "get", "namespaces", "-o", "json"))["items"]
    out += [f"namespace {n['metadata']['name']}" for n in ns if n["metadata"]["name"].startswith("kdt-run-")
            and not n["metadata"].get("deletionTimestamp")]
    return out


def _backoff_job(tmp_path: Path) -> Path:
    rendered = subprocess.run([str(ROOT / ".venv" / "bin" / "kubectl"), "kustomize", str(ROOT / "overlays" / "ddp")],
                              capture_output=True, text=True, check=True).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    for d in docs:
        if d["kind"] == "PyTorchJob":
            d["spec"]["runPolicy"]["backoffLimit"] = 1
    f = tmp_path / "job.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    return f


def test_pytorchjob_runs_to_success_on_the_real_training_operator(cluster, tmp_path):
    code, out, err, events = run(tmp_path, "overlays/ddp", "--nproc-per-node", "1", "--max-steps", "4", "--quiet")
    assert code == 0, out + err[-3000:]
    assert out.startswith("Succeeded (PyTorchJobSucceeded): PyTorchJob mnist-ddp"), out
    # the pods are the operator's, placed by the scheduler one per node, and its events are the timeline's
    scheduled = of(events, "scheduled")
    assert {e["pod"] for e in scheduled} == {"mnist-ddp-master-0", "mnist-ddp-worker-0"}
    assert len({e["text"].split("bound to node ")[1].split(";")[0] for e in scheduled}) == 2
    reasons = {e["data"].get("reason") for e in of(events, "event")}
    assert {"SuccessfulCreatePod", "SuccessfulCreateService", "Scheduled", "PyTorchJobSucceeded"} <= reasons, reasons
    done = of(events, "done")
    assert {e["data"]["step"] for e in done} == {"4"} and len({e["data"]["weights_sha256"] for e in done}) == 1
    assert of(events, "verdict")[0]["data"]["path"] == "live"
    assert not left_behind(cluster, tmp_path)


def test_trainjob_runs_on_the_real_trainer_jobset_and_job_controller(cluster, tmp_path):
    code, out, err, events = run(tmp_path, "overlays/fsdp-trainer-2.3", "--nproc-per-node", "1", "--max-steps", "3",
                                 "--quiet")
    assert code == 0, out + err[-3000:]
    assert out.startswith("Succeeded (AllJobsCompleted): TrainJob t5-fsdp: jobset completed successfully"), out
    # a Job's pod is shown by its completion index, as offline (its real name has the Job controller's suffix)
    assert {e["pod"] for e in of(events, "scheduled")} == {"t5-fsdp-node-0-0", "t5-fsdp-node-0-1"}
    reasons = {e["data"].get("reason") for e in of(events, "event")}
    assert {"SuccessfulCreate", "Completed", "AllJobsCompleted"} <= reasons, reasons
    assert not left_behind(cluster, tmp_path)


def test_backoff_limit_gives_the_same_verdict_and_restarts_on_both_paths(cluster, tmp_path):
    job = _backoff_job(tmp_path)
    args = (job, "--nproc-per-node", "1", "--max-steps", "400", "--quiet", "--kill", "mnist-ddp-worker-0@step=3")
    live = run(tmp_path / "live", *args)
    offline = run(tmp_path / "offline", *args, live=False)
    for code, out, err, events in (live, offline):
        assert code == 1, out + err[-3000:]
        assert out.startswith("Failed (PyTorchJobFailed): "), out
        assert "has failed because it has reached the specified backoff limit" in out
        assert [e["pod"] for e in of(events, "restart")] == ["mnist-ddp-worker-0"]
    assert not left_behind(cluster, tmp_path)


def test_a_trainjob_group_restart_gives_the_same_verdict_and_restarts_on_both_paths(cluster, tmp_path):
    """The TensorFlow TrainJob: a worker killed at step 60; its runtime's failurePolicy restarts the JobSet
    once (JobSet's controller deletes and creates every Job), the group resumes from its checkpoint."""
    args = ("overlays/tensorflow", "--max-steps", "70", "--quiet", "--kill", "tf-mnist-node-0-1@step=60")
    results = {"live": run(tmp_path / "live", *args), "offline": run(tmp_path / "offline", *args, live=False)}
    for path, (code, out, err, events) in results.items():
        assert code == 0, (path, out + err[-3000:])
        assert out.startswith("Succeeded (AllJobsCompleted): ") and "1 restart(s))" in out, (path, out)
        kill = of(events, "kill")[0]
        steps = {int(e["data"]["step"]) for e in of(events, "resume") if e["t"] > kill["t"]}
        assert steps and all(50 <= s < 70 for s in steps), (path, steps)
    live_events = results["live"][3]
    # every pod of the group was created again by the controllers: the Jobs' new pods
    assert {e["pod"] for e in of(live_events, "recreate")} == {"tf-mnist-node-0-0", "tf-mnist-node-0-1"}
    assert not left_behind(cluster, tmp_path)


def test_torchft_groups_heal_from_a_live_peer_and_ride_out_a_lighthouse_restart(cluster, tmp_path):
    """The offline scenario of tests/run/test_run_targets.py on the real controllers: a replica group's worker
    killed heals from its peer's live state; the Lighthouse (a Deployment's pod, restarted in place by the
    agent as a kubelet would) killed: both groups save, restart, resume from that step, end alike."""
    code, out, err, events = run(tmp_path, "overlays/torchft-pytorchjob", "--nproc-per-node", "1", "--max-steps", "90",
                                 "--step-sleep", "0.05", "--kill", "mnist-ft-worker-1/rank=0@step=20",
                                 "--kill", "torchft-lighthouse-0@step=50", "--quiet")
    assert code == 0, out + err[-3000:]
    assert out.startswith("Succeeded (PyTorchJobSucceeded)"), out
    assert {e["pod"] for e in of(events, "scheduled")} == {"torchft-lighthouse-0", "mnist-ft-worker-0", "mnist-ft-worker-1"}
    killed = next(e for e in of(events, "kill") if e["pod"] == "mnist-ft-worker-1")
    heals = [e for e in of(events, "heal") if e["t"] > killed["t"]]
    got = next(e for e in heals if e["pod"] == "mnist-ft-worker-1" and e["data"]["role"] == "received")
    sent = next(e for e in heals if e["pod"] == "mnist-ft-worker-0" and e["data"]["role"] == "sent"
                and e["data"]["step"] == got["data"]["step"])
    assert got["data"]["weights_sha256"] == sent["data"]["weights_sha256"]
    lh = next(e for e in of(events, "kill") if e["pod"] == "torchft-lighthouse-0")
    assert [e["pod"] for e in of(events, "restart")] == ["torchft-lighthouse-0"]
    lost = [e for e in of(events, "note") if "the Lighthouse is lost" in e["text"] and e["t"] > lh["t"]]
    saved = {int(e["text"].split("step ")[1].split(" ")[0]) for e in lost}
    assert {e["pod"] for e in lost} == {"mnist-ft-worker-0", "mnist-ft-worker-1"} and len(saved) == 1
    assert {int(e["data"]["step"]) for e in of(events, "resume") if e["t"] > lh["t"]} == saved
    done = of(events, "done")
    assert {int(e["data"]["step"]) for e in done} == {90} and len({e["data"]["weights_sha256"] for e in done}) == 1
    assert not left_behind(cluster, tmp_path)


def test_a_lost_node_recreates_the_pod_on_another_and_the_job_resumes(cluster, tmp_path):
    args = ("overlays/elastic", "--nproc-per-node", "1", "--max-steps", "70", "--quiet",
            "--lose", "mnist-elastic-worker-1@step=60")
    results = {"live": run(tmp_path / "live", *args), "offline": run(tmp_path / "offline", *args, live=False)}
    for path, (code, out, err, events) in results.items():
        assert code == 0, (path, out + err[-3000:])
        assert out.startswith("Succeeded (PyTorchJobSucceeded)"), (path, out)
        (lost,) = of(events, "lose")
        # the same pod is created again on both paths, and the job resumes from the step-50 checkpoint or later
        assert [e["pod"] for e in of(events, "recreate")] == ["mnist-elastic-worker-1"], path
        resumed = [int(e["data"]["step"]) for e in of(events, "resume") if e["t"] > lost["t"]]
        assert resumed and min(resumed) >= 50, (path, resumed)
        assert {int(e["data"]["step"]) for e in of(events, "done") if e["t"] > lost["t"]} == {70}, path
    events = results["live"][3]
    nodes = [e["text"].split("bound to node ")[1].split(";")[0] for e in of(events, "scheduled")
             if e["pod"] == "mnist-elastic-worker-1"]
    lost = of(events, "lose")[0]
    assert len(nodes) == 2 and nodes[0] != nodes[1] and nodes[0] in lost["text"]     # on the spare node
    assert not left_behind(cluster, tmp_path)


def test_a_pod_no_node_can_hold_ends_the_run_with_the_schedulers_reason_located(cluster, tmp_path):
    code, out, err, _ = run(tmp_path, "overlays/ddp", "--nproc-per-node", "1", "--node-size", "cpu=1")
    assert code == 2, out + err[-3000:]
    lines = [ln for ln in err.splitlines() if "[live-schedule]" in ln]
    assert lines and "Traceback" not in err
    assert all("Insufficient cpu" in ln and "resources.requests.cpu" in ln and "(doc 1, source base/pytorchjob.yaml)" in ln
               for ln in lines), lines
    assert not left_behind(cluster, tmp_path)


def test_a_program_that_is_not_here_fails_like_an_image_pull(cluster, tmp_path):
    f = tmp_path / "job.yaml"
    f.write_text(yaml.safe_dump({
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "missing"},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
            "containers": [{"name": "pytorch", "image": "example.com/none:1",
                            "command": ["kdt-no-such-program"]}]}}}}}}))
    code, out, err, _ = run(tmp_path, f, "--quiet")
    assert code == 2, out + err[-3000:]
    (line,) = [ln for ln in err.splitlines() if "ErrImagePull" in ln]
    assert line.startswith(f"{f}:") and "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].command" in line
    assert "kdt-no-such-program" in line and "Traceback" not in err
    assert not left_behind(cluster, tmp_path)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGKILL"])
def test_ctrl_c_or_a_killed_kdt_leaves_nothing_behind(cluster, tmp_path, sig):
    """Ctrl-C: the run stops its processes and removes its namespace, nodes and volumes itself (exit 130).
    kdt killed: the kernel kills its processes (PR_SET_PDEATHSIG), and what it left in the kept control plane
    (its nodes, volumes, namespace) is removed by `kdt cluster up`'s daemon, which finds the owner gone."""
    import signal
    import time
    cmd = [*KDT, "run", "overlays/ddp", "--nproc-per-node", "1", "--max-steps", "100000", "--step-sleep", "0.2",
           "--live", "--cluster", NAME, "--workdir", str(tmp_path / "run")]
    # SIGINT as a terminal gives it, even when this test runs where it is ignored (a background job of a shell
    # without job control inherits SIG_IGN, which Python keeps)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    for line in p.stdout:
        seen.append(line)
        if " train: step " in line:
            break
    assert any(" train: step " in ln for ln in seen), "".join(seen)
    p.send_signal(getattr(signal, sig))
    code = p.wait(120)
    assert code == (130 if sig == "SIGINT" else -9), (code, p.stderr.read()[-2000:])
    end = time.monotonic() + 30
    while time.monotonic() < end and left_behind(cluster, tmp_path):
        time.sleep(1)
    assert not left_behind(cluster, tmp_path)

"""The TensorFlow sample as overlays/tensorflow runs it: TF_CONFIG from the runtime's mechanism, two CPU workers.

Each pod's environment is the merge preview's JobSet container env with the
downward-API fields resolved to what JobSet and the Job controller put on pod i
(jobset-name, replicatedjob-name, job-index labels; the completion index). The
command is the rendered TrainJob's, with /app/training and /checkpoints mapped
to folders here; TFKIT_ADDRESS_MAP points the pods' DNS names at loopback ports.
"""
from __future__ import annotations

import copy
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from training_harness import REPO, TRAINING, base_env, free_port
from trainkit.log import parse_line
from tfkit import cluster as tfcluster

from kdt import targets as T
from kdt.merge_preview import expand_documents
from kdt.operators import jobset as JS
from kdt.operators import tensorflow as KTF
from kdt.render import render

pytest.importorskip("tensorflow", reason="tensorflow-cpu is in requirements.lock; the bootstrap installs it")

FIELD = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")


def expanded_tf_jobset(overlay="tensorflow", patch=None):
    t = T.Target(f"overlays/{overlay}", T.KUSTOMIZE, REPO / "overlays" / overlay)
    r = render(t)
    assert r.ok, r.findings
    docs = r.documents
    if patch:
        docs = copy.deepcopy(docs)       # render() memoizes its documents: patch a copy
        patch(docs)
    expanded, findings = expand_documents(docs)
    assert not [f for f in findings if f.level == "error"], findings
    (js,) = [e for e in expanded if e.kind == "JobSet"]
    return js


def pod_envs(js) -> list[dict]:
    """The env of each pod of the trainer job, valueFrom resolved as JobSet and the Job controller would."""
    rjob = js.obj["spec"]["replicatedJobs"][0]
    container = rjob["template"]["spec"]["template"]["spec"]["containers"][0]
    pods = rjob["template"]["spec"]["parallelism"]
    out = []
    for i in range(pods):
        meta = {JS.LABEL_JOBSET_NAME: js.name, JS.LABEL_REPLICATED_JOB: rjob["name"], JS.LABEL_JOB_INDEX: "0",
                "batch.kubernetes.io/job-completion-index": str(i)}
        env = {}
        for e in container["env"]:
            if "valueFrom" in e:
                m = FIELD.fullmatch(e["valueFrom"]["fieldRef"]["fieldPath"])
                env[e["name"]] = meta[m.group(2)]
            else:
                env[e["name"]] = e["value"]
        out.append(env)
    return out


def test_the_tensorflow_sample_imports_no_torch():
    """Its image has no torch: tfkit, trainkit.log and trainkit.mnist_data must not import it."""
    code = ("import sys, tf_mnist, trainkit.log, trainkit.mnist_data; from trainkit import log; "
            "assert callable(log), log; assert 'torch' not in sys.modules, 'torch imported'; "
            "from trainkit import Trainer; assert 'torch' in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code], cwd=TRAINING, env=base_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_kdt_and_tfkit_share_the_convention():
    assert KTF.CONVENTION_ENV == tfcluster.REQUIRED
    assert (KTF.ENV_SUBDOMAIN, KTF.ENV_NUM_WORKERS, KTF.ENV_PORT) == (
        tfcluster.ENV_SUBDOMAIN, tfcluster.ENV_NUM_WORKERS, tfcluster.ENV_PORT)
    assert KTF.worker_hosts("j", "node", 0, 3, 2222) == tfcluster.worker_hosts("j", "node", 0, 3, 2222)


def test_each_pod_builds_the_tf_config_the_merge_preview_shows():
    js = expanded_tf_jobset()
    envs = pod_envs(js)
    assert len(envs) == 2 and envs[0][KTF.ENV_NUM_WORKERS] == "2"       # copied from numNodes by kustomize
    built = [tfcluster.build(e) for e in envs]
    assert built == js.facts["tf_config"]
    assert built[1] == {"cluster": {"worker": ["tf-mnist-node-0-0.tf-mnist:2222", "tf-mnist-node-0-1.tf-mnist:2222"]},
                        "task": {"type": "worker", "index": 1}}


def test_changing_num_nodes_changes_every_pod_and_nothing_is_left_stale():
    def three(docs):
        (tj,) = [d for d in docs if d.kind == "TrainJob"]
        tj.data["spec"]["trainer"]["numNodes"] = 3
        tj.data["spec"]["trainer"]["env"][0]["value"] = "3"     # what the kustomize replacement writes
    envs = pod_envs(expanded_tf_jobset(patch=three))
    assert [tfcluster.build(e)["task"]["index"] for e in envs] == [0, 1, 2]
    assert all(len(tfcluster.build(e)["cluster"]["worker"]) == 3 for e in envs)


def test_a_pod_past_the_count_stops_with_one_line():
    env = pod_envs(expanded_tf_jobset())[1]
    env[KTF.ENV_NUM_WORKERS] = "1"            # numNodes patched to 2 by another tool, the env left at 1
    proc = subprocess.run([sys.executable, str(TRAINING / "tf_mnist.py")], env={**base_env(), **env},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "tf_mnist: this pod is worker 1 but TF_NUM_WORKERS=1: the TrainJob's numNodes was changed without "
        "TF_NUM_WORKERS (they must be equal; the overlay and the chart copy one into the other)"]


def test_a_peer_that_never_appears_is_named():
    cfg = {"cluster": {"worker": ["127.0.0.1:1", "tf-x-node-0-9.nowhere.invalid:2222"]}, "task": {"type": "worker", "index": 0}}
    with pytest.raises(tfcluster.ClusterError, match=r"tf-x-node-0-9\.nowhere\.invalid:2222 did not appear"):
        tfcluster.wait_for_peers(cfg, timeout=0.2, poll=0.05)


@pytest.mark.parametrize("env, message", [
    ({}, "TF_JOBSET_NAME, TF_REPLICATED_JOB, TF_JOB_INDEX, TF_TASK_INDEX, TF_NUM_WORKERS, TF_PORT not set"),
    ({"TF_CONFIG": "{not json"}, "TF_CONFIG is not JSON"),
    ({"TF_CONFIG": '{"cluster": {"worker": ["a"]}, "task": {"type": "worker", "index": 0}}'}, "has no port"),
    ({"TF_CONFIG": '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}'}, "task.index 3"),
])
def test_bad_cluster_input_is_one_line(env, message):
    with pytest.raises(tfcluster.ClusterError, match=re.escape(message)):
        tfcluster.build(env)


# ---------------------------------------------------------------- real runs

class Group:
    """The pods of one JobSet attempt, as local processes."""

    def __init__(self, js, tmp_path, extra_args=()):
        container = js.obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
        self.command = [a.replace("/app/training", str(TRAINING)).replace("/checkpoints", str(tmp_path / "checkpoints"))
                        for a in container["command"]] + list(extra_args)
        assert self.command[0] == "python3"
        self.command[0] = sys.executable
        self.envs = pod_envs(js)
        hosts = tfcluster.build(self.envs[0])["cluster"]["worker"]
        self.address_map = json.dumps({h: f"127.0.0.1:{free_port()}" for h in hosts})
        self.procs: list[subprocess.Popen] = []
        self.logs: list[list[str]] = []

    def start(self):
        self.procs, self.logs = [], []
        for env in self.envs:
            full = {**base_env(), **env, "TFKIT_ADDRESS_MAP": self.address_map, "TF_CPP_MIN_LOG_LEVEL": "3"}
            self.procs.append(subprocess.Popen(self.command, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                               text=True, start_new_session=True))
            self.logs.append([])
        for p, log in zip(self.procs, self.logs):
            os.set_blocking(p.stdout.fileno(), False)

    def pump(self):
        for p, log in zip(self.procs, self.logs):
            while True:
                line = p.stdout.readline()
                if not line:
                    break
                log.append(line.rstrip("\n"))

    def lines(self, index, tag):
        return [f for t, f in (parse_line(x) or (None, None) for x in self.logs[index]) if t == tag]

    def wait(self, timeout=240):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(p.poll() is None for p in self.procs):
            self.pump()
            time.sleep(0.05)
        self.pump()
        return [p.poll() for p in self.procs]

    def kill_all(self):
        """JobSet's failurePolicy: one pod failed, so every job of the group is recreated (all pods go)."""
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        for p in self.procs:
            p.wait(timeout=30)
        self.pump()


def done_digest(g: Group, index: int) -> str:
    (done,) = g.lines(index, "DONE")
    return done["weights_sha256"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """One uninterrupted run of the group as rendered: the first test checks it, the killed group's test
    compares its end with it (each TensorFlow process costs about 5 s of CPU to import: run it once)."""
    g = Group(expanded_tf_jobset(), tmp_path_factory.mktemp("uninterrupted"), ())
    try:
        g.start()
        codes = g.wait()
    finally:
        g.kill_all()
    return g, codes


def test_two_workers_train_as_rendered_and_agree(uninterrupted):
    g, codes = uninterrupted
    assert codes == [0, 0], "\n".join(g.logs[0][-20:] + g.logs[1][-20:])
    assert done_digest(g, 0) == done_digest(g, 1)
    setup = g.lines(0, "SETUP")[0]
    assert setup["workers"] == "2" and setup["replicas"] == "2" and setup["chief"] == "true"
    assert g.lines(0, "DONE")[0]["step"] == str(3 * (4000 // 64))      # --epochs=3 --batch-size=64 as rendered
    assert g.lines(1, "CKPT") == []                                       # worker 1 writes no checkpoint


def test_killed_worker_group_resumes_and_ends_bit_identical(uninterrupted, tmp_path_factory):
    slow = ("--step-sleep=0.02",)    # the same math, slower, so the kill lands mid-run
    baseline, codes = uninterrupted
    assert codes == [0, 0]
    want = done_digest(baseline, 0)

    g = Group(expanded_tf_jobset(), tmp_path_factory.mktemp("interrupted"), slow)
    try:
        g.start()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not g.lines(0, "CKPT"):
            g.pump()
            time.sleep(0.02)
        assert g.lines(0, "CKPT"), "\n".join(g.logs[0][-20:])
        os.killpg(g.procs[1].pid, signal.SIGKILL)      # a worker dies mid-run
        g.kill_all()                                    # and JobSet recreates the group
        killed_at = max(int(f["step"]) for f in g.lines(0, "TRAIN"))
        assert killed_at < 3 * (4000 // 64)
        g.start()                                       # the recreated pods
        assert g.wait() == [0, 0], "\n".join(g.logs[0][-20:] + g.logs[1][-20:])
        resumed = [int(f["step"]) for i in (0, 1) for f in g.lines(i, "RESUME")]
        assert resumed and resumed[0] > 0 and len(set(resumed)) == 1
        assert done_digest(g, 0) == done_digest(g, 1) == want
    finally:
        g.kill_all()

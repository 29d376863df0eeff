"""The TensorFlow sample as overlays/tensorflow runs it: TF_CONFIG from the runtime's mechanism, two CPU workers.

Each pod's environment is the merge preview's JobSet container env with the
downward-API fields resolved to what JobSet and the Job controller put on pod i
(jobset-name, replicatedjob-name, job-index labels; the completion index), and
tfkit builds each pod's TF_CONFIG from it. The real runs are kdt run's
(tests/run/test_run_targets.py): the target to completion, its pods' TF_CONFIG
and chief, and a killed worker's group restarted by the JobSet's failurePolicy
ending with the uninterrupted run's weights.
"""
from __future__ import annotations

import copy
import re
import subprocess
import sys

import pytest

from training_harness import REPO, TRAINING, base_env
from tfkit import cluster as tfcluster

from kdt import targets as T
from kdt.merge_preview import expand_documents
from kdt.operators.jobset import facts as JS
from kdt.operators import tensorflow as KTF
from kdt.render import render

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

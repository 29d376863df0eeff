"""kdt run's parts without processes: env and paths as the kubelet gives them, the lifecycle rules, faults, names."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kdt.errors import UsageError
from kdt.expand import jobset as XJ
from kdt.run import controllers as C
from kdt.run import faults, netshim
from kdt.run.image import facts
from kdt.run.pods import Container, LocalPod, Mounts, container_env, expand_refs

ROOT = Path(__file__).resolve().parents[2]


class _Doc:
    def __init__(self, data, kind="PyTorchJob", name="j"):
        self.data, self.kind, self.name, self.namespace = data, kind, name, ""


def _pod(name, group="Worker", index=0, policy="OnFailure", owner="PyTorchJob", data=None, job_spec=None, labels=None):
    obj = {"metadata": {"name": name, "labels": labels or {}}, "spec": {"restartPolicy": policy}}
    return LocalPod(name, obj, owner, "j", group, index, _Doc(data or {"spec": {}}), job_spec=job_spec or {})


def test_refs_expand_like_the_kubelet():
    env = {"A": "x", "B": "y"}
    assert expand_refs("$(A):$(B)/$(C) $$(A)", env) == "x:y/$(C) $(A)"


def test_env_downward_api_secrets_and_order():
    pod = _pod("p-0", labels={"jobset.sigs.k8s.io/job-index": "3"})
    pod.ip = "127.77.0.9"
    pod.obj["metadata"]["annotations"] = {"batch.kubernetes.io/job-completion-index": "1"}
    spec = {"env": [{"name": "A", "value": "a"}, {"name": "B", "value": "$(A)-b"},
                    {"name": "IDX", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
                    {"name": "JI", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/job-index']"}}},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "TOK", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t", "optional": True}}},
                    {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
            "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "X_"}]}
    env = container_env(pod, Container("c", spec, (), pod.source), {("ConfigMap", "cm"): {"data": {"k": "v"}}})
    assert env == {"X_k": "v", "A": "a", "B": "a-b", "IDX": "1", "JI": "3", "IP": "127.77.0.9", "CM": "v"}


def test_env_missing_secret_is_located():
    from kdt.run.pods import EnvError
    pod = _pod("p-0")
    spec = {"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}
    with pytest.raises(EnvError) as exc:
        container_env(pod, Container("c", spec, (), pod.source), {})
    assert exc.value.path == ("env", 0, "valueFrom", "secretKeyRef") and "--env" in exc.value.message


def test_mounts_rewrite_paths_at_boundaries_only(tmp_path):
    m = Mounts([("/app/training", tmp_path / "t"), ("/out", tmp_path / "o"), ("/app", tmp_path / "a")])
    text = "python3 /app/training/x.py --dir=/out/run --o=/outside /app /data/out"
    assert m.rewrite(text) == (f"python3 {tmp_path}/t/x.py --dir={tmp_path}/o/run --o=/outside {tmp_path}/a /data/out")


def test_image_facts_come_from_the_dockerfile():
    f = facts("ghcr.io/torch-k8s/trainer:0.1.0", ROOT)
    assert f.env["PYTHONPATH"] == "/app/training" and f.workdir == "/app" and f.cmd[:3] == ["python3", "-m", "trainkit.torchrun"]
    assert facts("ghcr.io/torch-k8s/trainer:0.1.0-tensorflow", ROOT).env["TF_CPP_MIN_LOG_LEVEL"] == "2"
    assert facts("busybox:1.36", ROOT).dockerfile is None


def test_jobset_pods_indexed_with_labels_and_onfailure():
    js = {"metadata": {"name": "tj"}, "spec": {"replicatedJobs": [
        {"name": "node", "replicas": 1, "template": {"spec": {"parallelism": 3, "completions": 3,
                                                              "template": {"spec": {"containers": [{"name": "node"}]}}}}}]}}
    pods = XJ.pods(js)
    assert [p.name for p in pods] == ["tj-node-0-0", "tj-node-0-1", "tj-node-0-2"]
    p = pods[2]
    assert p.obj["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "2"
    assert p.obj["spec"]["subdomain"] == "tj" and p.obj["spec"]["restartPolicy"] == "OnFailure"
    assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}} in p.obj["spec"]["containers"][0]["env"]


def test_pytorchjob_backoff_limit_counts_restarts():
    data = {"spec": {"runPolicy": {"backoffLimit": 2}, "pytorchReplicaSpecs": {"Master": {"restartPolicy": "OnFailure"},
                                                                               "Worker": {"restartPolicy": "OnFailure"}}}}
    m, w = _pod("j-master-0", "Master", data=data), _pod("j-worker-0", "Worker", data=data)
    ctl = C.PyTorchJobController([m, w])
    for s in ctl.pods.values():
        s.phase = "Running"
    ctl.on_restart("j-worker-0")
    assert ctl.verdict is None
    ctl.on_restart("j-master-0")
    assert ctl.verdict and not ctl.verdict.succeeded and ctl.verdict.reason == "BackoffLimitExceeded"


def test_pytorchjob_exitcode_and_success_rules():
    data = {"spec": {"pytorchReplicaSpecs": {"Worker": {"restartPolicy": "ExitCode"}}}}
    a, b = _pod("j-worker-0", data=data, policy="Never"), _pod("j-worker-1", data=data, policy="Never")
    ctl = C.PyTorchJobController([a, b])
    assert ctl.on_pod_end("j-worker-0", False, 137) == [(C.RECREATE, "j-worker-0")]
    assert ctl.verdict is None
    ctl.on_pod_end("j-worker-0", True, 0)
    assert ctl.verdict is None                 # without a Master every Worker must succeed
    ctl.on_pod_end("j-worker-1", True, 0)
    assert ctl.verdict.succeeded
    ctl2 = C.PyTorchJobController([_pod("j-worker-0", data=data, policy="Never")])
    ctl2.on_pod_end("j-worker-0", False, 1)
    assert not ctl2.verdict.succeeded and "permanent" in ctl2.verdict.message


def _jobset(max_restarts=None, rules=None):
    fp = {} if max_restarts is None else {"failurePolicy": {"maxRestarts": max_restarts, **({"rules": rules} if rules else {})}}
    return {"metadata": {"name": "tj"}, "spec": {**fp, "replicatedJobs": [{"name": "node", "template": {"spec": {
        "parallelism": 2, "completions": 2, "backoffLimit": 0, "template": {"spec": {"containers": [{"name": "node"}]}}}}}]}}


def _jobset_ctl(js):
    pods = []
    for jp in XJ.pods(js):
        pods.append(LocalPod(jp.name, jp.obj, "JobSet", "tj", jp.job, jp.completion_index, _Doc({}, "TrainJob", "tj"),
                             job_spec=jp.job_spec))
    return C.JobSetController(pods, js)


def test_jobset_restarts_the_group_until_max_restarts():
    ctl = _jobset_ctl(_jobset(1))
    assert ctl.on_pod_end("tj-node-0-1", False, 137)[0][0] == C.RESTART_ALL
    assert ctl.verdict is None
    assert ctl.on_lost("tj-node-0-0") == []
    assert ctl.verdict.reason == "ReachedMaxRestarts"
    ctl = _jobset_ctl(_jobset(3))
    ctl.on_pod_end("tj-node-0-0", True, 0)
    ctl.on_pod_end("tj-node-0-1", True, 0)
    assert ctl.verdict.succeeded and ctl.verdict.reason == "Completed"


def test_jobset_without_policy_and_with_failjobset_rule():
    ctl = _jobset_ctl(_jobset())
    ctl.on_restart("tj-node-0-0")              # OnFailure restart in place = a failure; backoffLimit 0
    assert ctl.verdict.reason == "FailedJobs"
    ctl = _jobset_ctl(_jobset(5, [{"name": "r", "action": "FailJobSet", "onJobFailureReasons": ["BackoffLimitExceeded"]}]))
    ctl.on_pod_end("tj-node-0-0", False, 1)
    assert ctl.verdict and ctl.verdict.reason == "FailedJobs"


def test_statefulset_finishes_and_gives_up_on_crashloop():
    a, b = _pod("s-0", "s", 0, "Always", "StatefulSet"), _pod("s-1", "s", 1, "Always", "StatefulSet")
    ctl = C.StatefulSetController([a, b], max_restarts=1)
    ctl.on_finished("s-0")
    assert ctl.verdict is None
    ctl.on_finished("s-1")
    assert ctl.verdict.succeeded
    ctl = C.StatefulSetController([a], max_restarts=1)
    ctl.on_restart("s-0")
    ctl.on_restart("s-0")
    assert ctl.verdict.reason == "CrashLoopBackOff"


@pytest.mark.parametrize("spec,ok", [("p-0@12", True), ("p-0/rank=1@step=5:SIGTERM", True), ("p-0@step=3", True),
                                     ("p-0", False), ("p-0@soon", False), ("p-0@1:SIGFOO", False)])
def test_fault_specs(spec, ok):
    if ok:
        f = faults.parse(spec, "kill")
        assert f.pod == "p-0"
    else:
        with pytest.raises(UsageError):
            faults.parse(spec, "kill")
    with pytest.raises(UsageError):
        faults.parse("p-0/rank=1@3", "lose")


def test_netshim_names_hostname_and_binds(tmp_path):
    """Through the shim a process sees its pod's hostname, pod names resolve to their addresses,
    and a wildcard bind lands on the pod's own address (so two pods may use one port)."""
    hosts = tmp_path / "hosts"
    netshim.write_hosts(hosts, {"127.77.0.1": ["a-0", "a-0.svc"], "127.77.0.2": ["b-0"]})
    code = ("import socket\n"
            "s=socket.socket(); s.bind(('', 0)); t=socket.socket(socket.AF_INET6); t.bind(('::', 0))\n"
            "print(socket.gethostname(), socket.getaddrinfo('a-0.svc', 1, socket.AF_INET)[0][4][0], "
            "socket.getaddrinfo('B-0', 1)[0][4][0], s.getsockname()[0], t.getsockname()[0])\n")
    env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": str(netshim.library()), "KDT_RUN_HOSTS": str(hosts),
           "KDT_RUN_POD_IP": "127.77.0.2", "KDT_RUN_HOSTNAME": "b-0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["b-0", "127.77.0.1", "127.77.0.2", "127.77.0.2", "::ffff:127.77.0.2"], out.stderr

"""kdt run's parts without processes: env and paths as the kubelet gives them, the lifecycle rules, faults, names."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kdt.errors import UsageError
from kdt.operators.jobset import expand as XJ
from kdt.operators.framework import controller as C
from kdt.operators.jobset.controller import JobSetController
from kdt.operators.statefulset.controller import StatefulSetController
from kdt.operators.training_operator_v1.controller import PyTorchJobController
from kdt.run import faults, netshim
from kdt.run.image import facts
from kdt.operators.framework.pods import Container, LocalPod, Mounts, container_env, expand_refs

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
    from kdt.operators.framework.pods import EnvError
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
        "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}} in p.obj["spec"]["containers"][0]["env"]


def test_pytorchjob_backoff_limit_counts_restarts():
    data = {"spec": {"runPolicy": {"backoffLimit": 2}, "pytorchReplicaSpecs": {"Master": {"restartPolicy": "OnFailure"},
                                                                               "Worker": {"restartPolicy": "OnFailure"}}}}
    m, w = _pod("j-master-0", "Master", data=data), _pod("j-worker-0", "Worker", data=data)
    ctl = PyTorchJobController([m, w])
    for s in ctl.pods.values():
        s.phase = "Running"
    ctl.on_restart("j-worker-0")
    assert ctl.verdict is None
    ctl.on_restart("j-master-0")
    assert ctl.verdict and not ctl.verdict.succeeded and ctl.verdict.reason == "PyTorchJobFailed" and "backoff limit" in ctl.verdict.message


def test_pytorchjob_exitcode_and_success_rules():
    data = {"spec": {"pytorchReplicaSpecs": {"Worker": {"restartPolicy": "ExitCode"}}}}
    a, b = _pod("j-worker-0", data=data, policy="Never"), _pod("j-worker-1", data=data, policy="Never")
    ctl = PyTorchJobController([a, b])
    assert ctl.on_pod_end("j-worker-0", False, 137) == [(C.RECREATE, "j-worker-0")]
    assert ctl.verdict is None
    ctl.on_pod_end("j-worker-0", True, 0)
    assert ctl.verdict is None                 # without a Master every Worker must succeed
    ctl.on_pod_end("j-worker-1", True, 0)
    assert ctl.verdict.succeeded
    ctl2 = PyTorchJobController([_pod("j-worker-0", data=data, policy="Never")])
    ctl2.on_pod_end("j-worker-0", False, 1)
    assert not ctl2.verdict.succeeded and "permanent" in ctl2.verdict.message


def _jobset(max_restarts=None, rules=None, jobs=(("node", 1, 2),), strategy=None):
    """A JobSet with replicated jobs (name, replicas, pods per Job), backoffLimit 0 (one failure fails a Job)."""
    fp = None if max_restarts is None else {"maxRestarts": max_restarts, **({"rules": rules} if rules else {}),
                                            **({"restartStrategy": strategy} if strategy else {})}
    rjobs = [{"name": n, "replicas": reps, "template": {"spec": {
        "parallelism": per, "completions": per, "backoffLimit": 0,
        "template": {"spec": {"containers": [{"name": "node"}]}}}}} for n, reps, per in jobs]
    return {"metadata": {"name": "tj"}, "spec": {**({"failurePolicy": fp} if fp else {}), "replicatedJobs": rjobs}}


def _jobset_ctl(js, release="v0.12.0", gates=None):
    from kdt import kinds as K
    from kdt.operators.jobset import facts as JS
    pods = [LocalPod(jp.name, jp.obj, K.JOBSET, "tj", jp.job, jp.completion_index, _Doc({}, "TrainJob", "tj"),
                     job_spec=jp.job_spec) for jp in XJ.pods(js)]
    return JobSetController(pods, js, JS.RELEASES[release], gates)


def _restart(actions):
    (kind, spec), = actions
    assert kind == C.RESTART_PODS
    return spec


def test_jobset_without_a_failure_policy_fails_on_the_first_failed_job():
    ctl = _jobset_ctl(_jobset())
    ctl.on_restart("tj-node-0-0")              # OnFailure restart in place = a failure; backoffLimit 0
    assert ctl.verdict.reason == "FailedJobs"


def test_fail_jobset_action():
    ctl = _jobset_ctl(_jobset(5, [{"name": "r", "action": "FailJobSet", "onJobFailureReasons": ["BackoffLimitExceeded"]}]))
    ctl.on_pod_end("tj-node-0-0", False, 1)
    assert ctl.verdict and ctl.verdict.reason == "FailJobSetFailurePolicyAction" and "rule 'r'" in ctl.verdict.message


def test_restart_jobset_recreates_every_job_and_counts_toward_max_restarts():
    ctl = _jobset_ctl(_jobset(1, jobs=(("node", 2, 1),)))
    spec = _restart(ctl.on_pod_end("tj-node-1-0", False, 137))      # no rule: the default RestartJobSet
    assert sorted(spec.pods) == ["tj-node-0-0", "tj-node-1-0"] and spec.event == "jobset-restart"
    assert "jobset.sigs.k8s.io/restart-attempt" in spec.bump and ctl.verdict is None
    assert ctl.on_lost("tj-node-0-0") == []                           # 1 counted restart = maxRestarts
    assert ctl.verdict.reason == "ReachedMaxRestarts"
    ok = _jobset_ctl(_jobset(3))
    ok.on_pod_end("tj-node-0-0", True, 0)
    ok.on_pod_end("tj-node-0-1", True, 0)
    assert ok.verdict.succeeded and ok.verdict.reason == "AllJobsCompleted"


def test_restart_jobset_and_ignore_max_restarts_never_counts():
    ctl = _jobset_ctl(_jobset(0, [{"name": "always", "action": "RestartJobSetAndIgnoreMaxRestarts"}]))
    for _ in range(4):
        assert _restart(ctl.on_pod_end("tj-node-0-0", False, 1)).event == "jobset-restart"
    assert ctl.verdict is None and ctl.restarts == 4 and ctl.restarts_toward_max == 0


@pytest.mark.parametrize("action,counts", [("RestartJob", True), ("RestartJobAndIgnoreMaxRestarts", False)])
def test_restart_job_recreates_the_failed_job_only(action, counts):
    js = _jobset(2, [{"name": "one", "action": action}], jobs=(("node", 3, 2),))
    ctl = _jobset_ctl(js, gates={"RestartJob": True})
    assert ctl.problems() == []
    spec = _restart(ctl.on_pod_end("tj-node-1-0", False, 137))
    assert sorted(spec.pods) == ["tj-node-1-0", "tj-node-1-1"] and spec.event == "job-restart"
    assert spec.bump == ("jobset.sigs.k8s.io/job-restart-attempt",)
    assert ctl.restarts == 0 and ctl.jobs["tj-node-1"].restarts == 1
    _restart(ctl.on_pod_end("tj-node-2-1", False, 137))
    third = ctl.on_pod_end("tj-node-0-0", False, 137)
    if counts:   # two Job restarts counted: maxRestarts 2 reached (totalRestartsCountTowardsMax)
        assert third == [] and ctl.verdict.reason == "ReachedMaxRestarts"
    else:
        assert _restart(third).pods == ["tj-node-0-0", "tj-node-0-1"] and ctl.verdict is None


def test_restart_job_is_refused_without_its_feature_gate_and_before_jobset_v0_12():
    js = _jobset(2, [{"name": "one", "action": "RestartJob"}])
    (msg,) = _jobset_ctl(js).problems()
    assert "feature gate RestartJob" in msg and "--jobset-feature-gates RestartJob=true" in msg
    (msg,) = _jobset_ctl(js, release="v0.10.1", gates={"RestartJob": True}).problems()
    assert "not one of JobSet v0.10.1's" in msg
    big = _jobset(2, [{"name": "one", "action": "RestartJob"}], jobs=(("node", 1025, 1),))
    assert any("more than 1024 replicas" in m for m in _jobset_ctl(big, gates={"RestartJob": True}).problems())


def test_restart_strategies_per_release():
    assert _jobset_ctl(_jobset(1, strategy="BlockingRecreate"), release="v0.10.1").problems() == []
    (msg,) = _jobset_ctl(_jobset(1, strategy="InPlaceRestart"), release="v0.10.1").problems()
    assert "not one of JobSet v0.10.1's" in msg
    (msg,) = _jobset_ctl(_jobset(1, strategy="InPlaceRestart")).problems()
    assert "feature gate InPlaceRestart" in msg
    ctl = _jobset_ctl(_jobset(1, strategy="InPlaceRestart"), gates={"InPlaceRestart": True})
    assert ctl.problems() == [] and any("InPlaceRestart" in n for n in ctl.notes)


@pytest.mark.parametrize("rule,applies", [
    ({"onJobFailureReasons": ["DeadlineExceeded"]}, False),
    ({"onJobFailureReasons": ["BackoffLimitExceeded"]}, True),
    ({"targetReplicatedJobs": ["other"]}, False),
    ({"onJobFailureMessagePatterns": ["backoff limit"]}, True),
    ({"onJobFailureMessagePatterns": ["^deadline"]}, False),
])
def test_the_first_matching_rule_decides_and_no_match_restarts_the_jobset(rule, applies):
    ctl = _jobset_ctl(_jobset(3, [{"name": "r", "action": "FailJobSet", **rule}]))
    actions = ctl.on_pod_end("tj-node-0-0", False, 1)
    if applies:
        assert actions == [] and ctl.verdict.reason == "FailJobSetFailurePolicyAction"
    else:
        assert _restart(actions).event == "jobset-restart" and ctl.verdict is None


def test_the_failure_actions_table_is_the_enum_of_each_trainer_releases_crds():
    """kdt.operators.jobset.facts.RELEASES (read from JobSet's source) against the official Trainer CRDs' enum of
    failurePolicy.rules[].action (the runtimes embed the JobSet spec; crd-rules extracted from the CRDs)."""
    from kdt.operators.jobset import facts as JS
    from kdt.schemas import crd_rules
    for trainer in ("2.1", "2.3"):
        enum = crd_rules.enum_at(trainer, JS.API_VERSION, JS.KIND, ("spec", "failurePolicy", "rules", "*", "action"))
        assert set(JS.failure_actions(trainer)) == set(enum), trainer


def test_statefulset_finishes_and_gives_up_on_crashloop():
    a, b = _pod("s-0", "s", 0, "Always", "StatefulSet"), _pod("s-1", "s", 1, "Always", "StatefulSet")
    ctl = StatefulSetController([a, b], max_restarts=1)
    ctl.on_finished("s-0")
    assert ctl.verdict is None
    ctl.on_finished("s-1")
    assert ctl.verdict.succeeded
    ctl = StatefulSetController([a], max_restarts=1)
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


def test_netshim_reads_a_replaced_table_at_the_next_lookup(tmp_path):
    """A live run rewrites the table as pods come, go and change address: a running process resolves a name
    that was not there when it started, and a moved one at its new address."""
    hosts = tmp_path / "hosts"
    netshim.write_hosts(hosts, {"127.77.0.1": ["a-0"]})
    code = ("import socket,sys\n"
            "print(socket.gethostbyname('a-0'))\n"
            "try:\n    socket.gethostbyname('b-0')\nexcept OSError:\n    print('none')\n"
            "sys.stdout.flush(); sys.stdin.readline()\n"
            "print(socket.gethostbyname('a-0'), socket.gethostbyname('b-0'))\n")
    env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": str(netshim.library()), "KDT_RUN_HOSTS": str(hosts)}
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().split() == ["127.77.0.1"]
    assert p.stdout.readline().split() == ["none"]
    netshim.write_hosts(hosts, {"127.77.0.9": ["a-0"], "127.77.0.2": ["b-0"]})
    out, _ = p.communicate("go\n", timeout=60)
    assert out.split() == ["127.77.0.9", "127.77.0.2"]


RESTART_JOB_TARGET = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt, labels: {trainer.kubeflow.org/framework: torch}}
spec:
  mlPolicy: {numNodes: 2, torch: {}}
  template:
    spec:
      failurePolicy:
        maxRestarts: 3
        rules: [{name: one-group, action: RestartJob}]
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers: [{name: node, image: img, command: [python3, -c, "print(1)"]}]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj}
spec:
  runtimeRef: {name: rt}
  trainer: {numNodes: 2}
"""


@pytest.mark.parametrize("gates,code,needle", [
    ("", 2, "the JobSet webhook refuses this: failurePolicy.rules[0].action RestartJob needs the JobSet "
            "controller's feature gate RestartJob"),
    ("RestartJob=maybe", 2, "--jobset-feature-gates 'RestartJob=maybe': expected GATE=true or GATE=false"),
])
def test_kdt_run_refuses_what_the_jobset_webhook_refuses_before_starting(tmp_path, gates, code, needle):
    f = tmp_path / "job.yaml"
    f.write_text(RESTART_JOB_TARGET)
    proc = subprocess.run([sys.executable, "-m", "kdt", "run", str(f), "--workdir", str(tmp_path / "run"),
                           *(["--jobset-feature-gates", gates] if gates else [])],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == code and needle in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "run" / "pods").exists()      # nothing was started

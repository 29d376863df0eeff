"""The operators' lifecycle rules, as a local run applies them.

The kubelet part is shared (`Kubelet.after_exit`): a container that exits is
restarted in place by `restartPolicy` Always (any exit) or OnFailure (exit != 0);
otherwise the pod ends, Succeeded when every container exited 0. Each controller
then decides what a pod's restart, end or loss means for its job, and the job's
verdict (Succeeded or Failed, and why).

Facts: kdt.operators.training_operator_v1.facts and kdt.operators.jobset.facts, and the
sources cited beside each rule below.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..operators.jobset import expand as XJ
from .. import versions
from ..fields import as_int
from ..operators.jobset import facts as JS
from ..operators.training_operator_v1 import facts as TO1
from .pods import LocalPod

# Actions a controller asks of the supervisor.
RECREATE = "recreate"          # (RECREATE, pod name): delete the pod and create it again
RESTART_PODS = "restart-pods"  # (RESTART_PODS, RestartSpec): delete these pods and create them all again
STOP_POD = "stop-pod"          # (STOP_POD, pod name): delete a pod without creating it again


@dataclass
class RestartSpec:
    """Pods a controller deletes and creates again at once (a JobSet or one of its Jobs restarted)."""
    pods: list[str]
    why: str
    event: str                  # the timeline's name for it: jobset-restart | job-restart
    bump: tuple = ()            # labels whose counter the recreated pods carry one higher


@dataclass
class Verdict:
    succeeded: bool
    reason: str
    message: str

    def line(self) -> str:
        return f"{'Succeeded' if self.succeeded else 'Failed'} ({self.reason}): {self.message}"


def restarts_in_place(restart_policy: str, code: int, init: bool = False) -> bool:
    """The kubelet: does a container that exited with `code` start again in the same pod? An init container
    (`init`) only on failure, unless the pod's policy is Never (kubernetes v1.36.3
    pkg/kubelet/kuberuntime/kuberuntime_container.go computeInitContainerActions: an init container restarts as
    under OnFailure when the pod's policy is Always)."""
    if init:
        restart_policy = "OnFailure" if restart_policy == "Always" else restart_policy
    return restart_policy == "Always" or (restart_policy == "OnFailure" and code != 0)


@dataclass
class PodState:
    pod: LocalPod
    restarts: int = 0              # container restarts in place (the pod's restartCount)
    phase: str = "Pending"         # Pending | Running | Succeeded | Failed
    finished_ok: bool = False      # StatefulSet: the container exited 0 once (a cluster would restart it)


class Controller:
    kind = ""
    serves = False      # a server beside the job (a Deployment): never the run's verdict, stopped with the job
    notes: list[str]

    def __init__(self, pods: list[LocalPod]):
        self.pods = {p.name: PodState(p) for p in pods}
        self.verdict: Verdict | None = None
        self.notes = []

    # The supervisor tells: a container restarted in place; a pod ended (Succeeded/Failed); a pod was lost.
    def on_restart(self, name: str) -> list:
        self.pods[name].restarts += 1
        return []

    def on_pod_end(self, name: str, succeeded: bool, code: int) -> list:
        self.pods[name].phase = "Succeeded" if succeeded else "Failed"
        return []

    def on_lost(self, name: str) -> list:
        return [(RECREATE, name)]

    def on_recreated(self, name: str) -> None:
        st = self.pods[name]
        st.restarts, st.phase, st.finished_ok = 0, "Running", False

    def keep_running_after_zero_exit(self, name: str) -> bool:
        """Whether the kubelet's restart of a container that exited 0 is left out locally (StatefulSet)."""
        return False

    def problems(self) -> list[str]:
        """What the controller's webhook refuses in this object: the run does not start."""
        return []


class PyTorchJobController(Controller):
    """Training Operator v1 (kubeflow/training-operator v1.8/v1.9).

    - restartPolicy is the replica's (default OnFailure); ExitCode becomes Never on the pod and the
      operator recreates a pod that failed with a retryable exit code (128-255: killed by a signal),
      and fails the job on a permanent one (1-127) (pkg/controller.v1/common/pod.go ReconcilePods,
      pkg/util/train/train_util.go IsRetryableExitCode).
    - runPolicy.backoffLimit counts container restarts of the running pods of OnFailure and Always
      replicas; at the limit (any restart when it is 0) the job fails (reason <Kind>Failed, the backoff limit its message)
      (pkg/controller.v1/common/job.go PastBackoffLimit). Unset: no limit.
    - Success (pkg/controller.v1/pytorch/pytorchjob_controller.go UpdateJobStatus): the Master
      replica succeeded; without a Master, every Worker succeeded, or with elasticPolicy any one.
      Failure: a replica pod failed (restartPolicy Never, or ExitCode with a permanent code).
    - A lost pod is created again (ReconcilePods creates the pods that are missing).
    """
    kind = TO1.KIND

    def __init__(self, pods: list[LocalPod]):
        super().__init__(pods)
        job = pods[0].source.data if pods else {}
        spec = job.get("spec") or {}
        self.replicas = spec.get("pytorchReplicaSpecs") or {}
        rp = spec.get("runPolicy") or {}
        self.backoff_limit = rp.get("backoffLimit")
        self.elastic = spec.get("elasticPolicy") is not None
        self.name = pods[0].owner_name if pods else ""
        if rp.get("ttlSecondsAfterFinished") is not None:
            self.notes.append(f"runPolicy.ttlSecondsAfterFinished={rp['ttlSecondsAfterFinished']} is ignored "
                              "by a local run (on a cluster the finished job is deleted after it)")
        if rp.get("activeDeadlineSeconds") is not None:
            self.notes.append("runPolicy.activeDeadlineSeconds is not enforced by a local run (see --timeout)")

    def policy(self, name: str) -> str:
        rtype = self.pods[name].pod.group
        spec = self.replicas.get(rtype) or {}
        return str(spec.get("restartPolicy") or TO1.DEFAULT_RESTART_POLICY)

    def on_restart(self, name: str) -> list:
        super().on_restart(name)
        if self.backoff_limit is None or self.verdict:
            return []
        counted = sum(st.restarts for st in self.pods.values()
                      if self.policy(st.pod.name) in ("OnFailure", "Always") and st.phase in ("Running", "Pending"))
        limit = int(self.backoff_limit)
        if (limit == 0 and counted > 0) or (limit > 0 and counted >= limit):
            # the condition as the Training Operator writes it (v1.9.4 pkg/controller.v1/common/job.go: reason
            # NewReason(kind, "Failed"), pkg/util/status.go), held against it by tests/live/test_live_run.py
            self.verdict = Verdict(False, f"{self.kind}Failed",
                                   f"Job {self.name} has failed because it has reached the specified "
                                   f"backoff limit ({counted} container restart(s), runPolicy.backoffLimit={limit})")
        return []

    def on_pod_end(self, name: str, succeeded: bool, code: int) -> list:
        super().on_pod_end(name, succeeded, code)
        if self.verdict:
            return []
        st = self.pods[name]
        if not succeeded:
            if self.policy(name) == "ExitCode" and 128 <= code <= 255:
                return [(RECREATE, name)]
            why = f"exit code {code}" + (" (permanent: 1-127)" if self.policy(name) == "ExitCode" else "")
            self.verdict = Verdict(False, f"{self.kind}Failed", f"{self.kind} {self.name} is failed because 1 {st.pod.group} "
                                                    f"replica(s) failed ({name}: {why})")
            return []
        groups: dict[str, list[PodState]] = {}
        for s in self.pods.values():
            groups.setdefault(s.pod.group, []).append(s)
        if TO1.MASTER in groups:
            done = all(s.phase == "Succeeded" for s in groups[TO1.MASTER])
        else:
            workers = groups.get(TO1.WORKER, [])
            done = (any(s.phase == "Succeeded" for s in workers) if self.elastic
                    else all(s.phase == "Succeeded" for s in workers))
        if done:
            self.verdict = Verdict(True, f"{self.kind}Succeeded", f"{self.kind} {self.name} is successfully completed.")
        return []


@dataclass
class _Job:
    name: str
    replicated_job: str
    index: int
    backoff_limit: int
    completions: int
    failures: int = 0
    succeeded: set = field(default_factory=set)
    failed: bool = False
    restarts: int = 0               # this Job's own restarts (RestartJob actions)
    restarts_toward_max: int = 0


# kubernetes pkg/controller/job/job_controller.go: the message of the Failed condition a Job gets when its
# pods failed past backoffLimit (reason BackoffLimitExceeded), which onJobFailureMessagePatterns match.
JOB_BACKOFF_MESSAGE = "Job has reached the specified backoff limit"


class JobSetController(Controller):
    """JobSet and the Job controller beneath it, at the JobSet release the Trainer release ships
    (kdt.operators.jobset.facts.RELEASES: v0.10.1 for Trainer 2.1, v0.12.0 for 2.3).

    - Job: a pod that fails (restartPolicy Never) or a container restarted in place (OnFailure) is one
      failure; past backoffLimit (default 6) the Job fails (BackoffLimitExceeded); a failed pod of an
      index is created again while the Job lives. A lost pod counts as failed.
    - JobSet (pkg/controllers/failure_policy.go executeFailurePolicy): with no failurePolicy a failed Job
      fails the JobSet (FailedJobs). Otherwise the first rule (in order) whose onJobFailureReasons,
      onJobFailureMessagePatterns and targetReplicatedJobs match the failed Job gives the action, and
      RestartJobSet when none does: FailJobSet fails it; RestartJobSet recreates every Job and counts
      toward maxRestarts (refused once the count reaches it: ReachedMaxRestarts);
      RestartJobSetAndIgnoreMaxRestarts recreates every Job without counting; RestartJob (v0.12.0, gate
      RestartJob) recreates only the failed Job and counts (JobSet and Job restarts are then counted
      together, totalRestartsCountTowardsMax); RestartJobAndIgnoreMaxRestarts recreates it without
      counting. What the release or its gates do not offer is refused before the run, as the webhook
      refuses it (`problems`).
    - restartStrategy: Recreate and BlockingRecreate differ on a cluster in when the new Jobs are created
      (as each old one is gone, or after all are); a local run deletes the pods first either way.
      InPlaceRestart (v0.12.0, gate InPlaceRestart) restarts healthy pods in place through an agent in the
      pod; a local run recreates them (said in the notes).
    - successPolicy (default All over every replicated job): Completed when the targeted Jobs completed
      (All), or one of them (Any).
    """
    kind = JS.KIND

    def __init__(self, pods: list[LocalPod], jobset: dict, release: JS.Release | None = None,
                 feature_gates: dict[str, bool] | None = None):
        super().__init__(pods)
        self.name = str((jobset.get("metadata") or {}).get("name", ""))
        self.release = release or JS.release_for_trainer(versions.TRAINER_DEFAULT)
        self.gates = {**dict(self.release.feature_gates), **(feature_gates or {})}
        spec = jobset.get("spec") or {}
        fp = spec.get("failurePolicy")
        self.has_failure_policy = isinstance(fp, dict)
        fp = fp if isinstance(fp, dict) else {}
        self.max_restarts = as_int(fp.get("maxRestarts"), 0)
        self.strategy = str(fp.get("restartStrategy") or JS.DEFAULT_RESTART_STRATEGY)
        self.rules = [r for r in fp.get("rules") or [] if isinstance(r, dict)]
        sp = spec.get("successPolicy") if isinstance(spec.get("successPolicy"), dict) else {}
        self.success_operator = str(sp.get("operator") or JS.SUCCESS_ALL)
        self.success_targets = set(sp.get("targetReplicatedJobs") or [])
        self.replicas = {str(rj.get("name")): as_int(rj.get("replicas"), 1)
                         for rj in spec.get("replicatedJobs") or [] if isinstance(rj, dict)}
        self.restarts = 0               # JobSet restarts (status.restarts)
        self.restarts_toward_max = 0    # status.restartsCountTowardsMax
        self.jobs: dict[str, _Job] = {}
        for p in pods:
            if p.group not in self.jobs:
                labels = p.obj["metadata"]["labels"]
                completions = as_int(p.job_spec.get("completions"), as_int(p.job_spec.get("parallelism"), 1))
                self.jobs[p.group] = _Job(p.group, str(labels.get(JS.LABEL_REPLICATED_JOB)),
                                          as_int(labels.get(JS.LABEL_JOB_INDEX), 0), XJ.backoff_limit(p.job_spec),
                                          completions)
        if spec.get("ttlSecondsAfterFinished") is not None:
            self.notes.append(f"ttlSecondsAfterFinished={spec['ttlSecondsAfterFinished']} is ignored by a local run")
        if self.strategy == "InPlaceRestart":
            self.notes.append("restartStrategy InPlaceRestart: a local run recreates the pods it would restart in place")

    def problems(self) -> list[str]:
        """What the JobSet webhook of this release refuses (pkg/webhooks/jobset_webhook.go): the run cannot start."""
        out = []
        rel = self.release
        if self.has_failure_policy and self.strategy not in rel.restart_strategies:
            out.append(f"restartStrategy {self.strategy!r} is not one of JobSet {rel.name}'s "
                       f"({', '.join(rel.restart_strategies)})")
        elif self.strategy == "InPlaceRestart" and not self.gates.get("InPlaceRestart"):
            out.append("restartStrategy InPlaceRestart needs the JobSet controller's feature gate InPlaceRestart "
                       f"(alpha, off by default in {rel.name}; --jobset-feature-gates InPlaceRestart=true)")
        for i, r in enumerate(self.rules):
            name = str(r.get("action"))
            action = rel.action(name)
            if action is None:
                out.append(f"failurePolicy.rules[{i}].action {name!r} is not one of JobSet {rel.name}'s "
                           f"({', '.join(a.name for a in rel.actions)})")
            elif action.feature_gate and not self.gates.get(action.feature_gate):
                out.append(f"failurePolicy.rules[{i}].action {name} needs the JobSet controller's feature gate "
                           f"{action.feature_gate} (alpha, off by default in {rel.name}; "
                           f"--jobset-feature-gates {action.feature_gate}=true)")
            elif action.restarts == "job":
                big = [n for n, reps in self.replicas.items() if reps > JS.RESTART_JOB_MAX_REPLICAS]
                if big:
                    out.append(f"failurePolicy.rules[{i}].action {name}: replicated job {big[0]} has more than "
                               f"{JS.RESTART_JOB_MAX_REPLICAS} replicas")
        return out

    def _rule_for(self, job: _Job, reason: str, message: str) -> dict | None:
        import re
        for r in self.rules:
            reasons = r.get("onJobFailureReasons") or []
            patterns = r.get("onJobFailureMessagePatterns") or []
            targets = r.get("targetReplicatedJobs") or []
            if reasons and reason not in reasons:
                continue
            if patterns and not any(re.search(str(p), message) for p in patterns):
                continue
            if targets and job.replicated_job not in targets:
                continue
            return r
        return None

    def _counted(self) -> int:
        """Restarts counted toward maxRestarts: the JobSet's, plus every Job's with the RestartJob gate on."""
        jobs = sum(j.restarts_toward_max for j in self.jobs.values()) if self.gates.get("RestartJob") else 0
        return self.restarts_toward_max + jobs

    def _failure(self, name: str) -> list:
        job = self.jobs[self.pods[name].pod.group]
        job.failures += 1
        if job.failures <= job.backoff_limit:
            return []
        job.failed = True
        return self._job_failed(job)

    def _job_failed(self, job: _Job) -> list:
        reason, message = JS.JOB_FAILED_REASON, JOB_BACKOFF_MESSAGE
        first = f"(first failed job: {job.name})"
        if not self.has_failure_policy:
            self.verdict = Verdict(False, JS.REASON_FAILED_JOBS, f"JobSet {self.name}: Job {job.name} failed "
                                                                 f"({reason}); no failurePolicy, so no restart")
            return []
        rule = self._rule_for(job, reason, message)
        action = self.release.action(str(rule.get("action"))) if rule is not None else JS.DEFAULT_ACTION
        if action is None:      # refused by problems() before the run
            action = JS.DEFAULT_ACTION
        why = f"rule {rule.get('name')!r}" if rule is not None else "no rule matched: the default"
        if action.restarts == "none":
            self.verdict = Verdict(False, JS.REASON_FAIL_JOBSET_ACTION,
                                   f"JobSet {self.name}: Job {job.name} failed ({reason}); {why} says "
                                   f"{action.name} {first}")
            return []
        if action.counts_toward_max and self._counted() >= self.max_restarts:
            self.verdict = Verdict(False, JS.REASON_MAX_RESTARTS,
                                   f"JobSet {self.name}: Job {job.name} failed ({reason}) after {self._counted()} "
                                   f"counted restart(s); failurePolicy.maxRestarts={self.max_restarts} {first}")
            return []
        if action.restarts == "job":
            job.restarts += 1
            job.restarts_toward_max += 1 if action.counts_toward_max else 0
            job.failures, job.failed, job.succeeded = 0, False, set()
            names = [n for n, st in self.pods.items() if st.pod.group == job.name]
            return [(RESTART_PODS, RestartSpec(names, f"Job {job.name} failed ({reason}): {action.name} "
                                                      f"({why}) recreates this Job only; its restart "
                                                      f"{job.restarts}", "job-restart",
                                               (JS.LABEL_JOB_RESTART_ATTEMPT,)))]
        self.restarts += 1
        self.restarts_toward_max += 1 if action.counts_toward_max else 0
        for j in self.jobs.values():
            j.failures, j.failed, j.succeeded = 0, False, set()
        return [(RESTART_PODS, RestartSpec(list(self.pods), f"Job {job.name} failed ({reason}): {action.name} ({why}): "
                                                            f"JobSet restart {self.restarts} ({self._counted()}/"
                                                            f"{self.max_restarts} counted toward failurePolicy.maxRestarts)",
                                           "jobset-restart", (JS.LABEL_RESTART_ATTEMPT,)))]

    def on_restart(self, name: str) -> list:
        super().on_restart(name)
        return [] if self.verdict else self._failure(name)

    def on_pod_end(self, name: str, succeeded: bool, code: int) -> list:
        super().on_pod_end(name, succeeded, code)
        if self.verdict:
            return []
        pod = self.pods[name].pod
        job = self.jobs[pod.group]
        if not succeeded:
            actions = self._failure(name)
            return actions if (actions or job.failed or self.verdict) else [(RECREATE, name)]
        job.succeeded.add(pod.index)
        targets = [j for j in self.jobs.values()
                   if not self.success_targets or j.replicated_job in self.success_targets]
        complete = [len(j.succeeded) >= j.completions for j in targets]
        if (all(complete) if self.success_operator == JS.SUCCESS_ALL else any(complete)):
            # JobSet v0.12.0 pkg/constants/constants.go AllJobsCompletedReason/-Message (a TrainJob's Complete
            # condition carries them: Trainer v2.3.0 copies the JobSet's)
            self.verdict = Verdict(True, "AllJobsCompleted", f"JobSet {self.name}: jobset completed successfully "
                                                             f"(successPolicy {self.success_operator}, "
                                                             f"{self.restarts} restart(s))")
        return []

    def on_lost(self, name: str) -> list:
        if self.verdict:
            return []
        actions = self._failure(name)
        job = self.jobs[self.pods[name].pod.group]
        return actions if (actions or job.failed or self.verdict) else [(RECREATE, name)]


class StatefulSetController(Controller):
    """StatefulSet: restartPolicy Always (the only one it allows); a lost pod is created again with
    the same name. A container that exits 0 would be started again on a cluster: a local run counts
    the training as finished there instead, and the set as done when every pod finished.
    A pod that keeps failing is in CrashLoopBackOff forever on a cluster: a local run gives up
    after `max_restarts` restarts of one pod."""
    kind = "StatefulSet"

    def __init__(self, pods: list[LocalPod], max_restarts: int):
        super().__init__(pods)
        self.max_restarts = max_restarts
        self.name = pods[0].owner_name if pods else ""
        self.notes.append("restartPolicy Always: a container that finishes (exit 0) would start again on a "
                          "cluster; the local run stops it there and counts the pod as done")

    def keep_running_after_zero_exit(self, name: str) -> bool:
        return True

    def on_restart(self, name: str) -> list:
        super().on_restart(name)
        if self.pods[name].restarts > self.max_restarts and not self.verdict:
            self.verdict = Verdict(False, "CrashLoopBackOff",
                                   f"pod {name} of StatefulSet {self.name} failed {self.pods[name].restarts} times "
                                   f"(a cluster would go on restarting it; --max-pod-restarts={self.max_restarts})")
        return []

    def on_finished(self, name: str) -> None:
        self.pods[name].finished_ok = True
        if all(s.finished_ok for s in self.pods.values()) and not self.verdict:
            self.verdict = Verdict(True, "Finished", f"every pod of StatefulSet {self.name} finished its "
                                                     "training (exit 0)")


class DeploymentController(Controller):
    """Deployment: a server the job needs beside it (a torchft Lighthouse). Its pods run for as long as the
    job does: restartPolicy Always (the only one a Deployment allows; kubernetes pkg/apis/apps/validation),
    so a container that exits starts again in place, and a lost pod is created again (the ReplicaSet keeps
    `replicas` pods). It gives no verdict: the run ends with the job's, and its pods are stopped then."""
    kind = "Deployment"
    serves = True

    def __init__(self, pods: list[LocalPod]):
        super().__init__(pods)
        self.name = pods[0].owner_name if pods else ""
        self.notes.append(f"Deployment {self.name}: its pods serve the job and stop when the job ends")

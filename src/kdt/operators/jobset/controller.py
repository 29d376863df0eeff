"""JobSet's lifecycle rules and the Job controller's beneath it, as `kdt run` applies them (facts:
kdt.operators.jobset.facts, and the sources cited beside each rule)."""
from __future__ import annotations

from ... import versions
from ...fields import as_int
from ..framework.controller import (JOB_BACKOFF_MESSAGE, RECREATE, RESTART_PODS, Controller, JobState, RestartSpec,
                                    Verdict)
from ..framework.pods import LocalPod
from . import expand as XJ
from . import facts as JS


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
        self.jobs: dict[str, JobState] = {}
        for p in pods:
            if p.group not in self.jobs:
                labels = p.obj["metadata"]["labels"]
                completions = as_int(p.job_spec.get("completions"), as_int(p.job_spec.get("parallelism"), 1))
                self.jobs[p.group] = JobState(p.group, str(labels.get(JS.LABEL_REPLICATED_JOB)),
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

    def _rule_for(self, job: JobState, reason: str, message: str) -> dict | None:
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

    def _job_failed(self, job: JobState) -> list:
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

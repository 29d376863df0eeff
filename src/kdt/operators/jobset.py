"""JobSet (`jobset.x-k8s.io/v1alpha2`): what Trainer v2 renders a runtime into.

Facts read from kubernetes-sigs/jobset at the releases the Trainer releases ship (kdt.versions.JOBSET:
Trainer 2.1.0 ships v0.10.1, 2.3.0 ships v0.12.0, their go.mod); paths are relative to that repository.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from .. import versions

GROUP = "jobset.x-k8s.io"
KIND = "JobSet"
API_VERSION = "jobset.x-k8s.io/v1alpha2"


# ---------------------------------------------------------------- failure policy, per JobSet release
@dataclass(frozen=True)
class FailureAction:
    """What one FailurePolicyAction does (pkg/controllers/failure_policy.go actionFunctionMap and its appliers)."""
    name: str
    restarts: str                 # "none": the JobSet fails; "jobset": every Job recreated; "job": the failed Job
    counts_toward_max: bool       # whether the restart counts toward failurePolicy.maxRestarts
    feature_gate: str = ""        # a feature gate the JobSet controller needs for it (webhook rejects it otherwise)


FAIL_JOBSET = FailureAction("FailJobSet", "none", False)
RESTART_JOBSET = FailureAction("RestartJobSet", "jobset", True)
RESTART_JOBSET_IGNORE_MAX = FailureAction("RestartJobSetAndIgnoreMaxRestarts", "jobset", False)
# v0.12.0 pkg/features/features.go: RestartJob (alpha, default off) "recreating only the failed Job"; the
# webhook (jobset_webhook.go) refuses these actions while the gate is off, and a replicated job of more
# than 1024 replicas (maxReplicasPerReplicatedJob) with them.
RESTART_JOB = FailureAction("RestartJob", "job", True, "RestartJob")
RESTART_JOB_IGNORE_MAX = FailureAction("RestartJobAndIgnoreMaxRestarts", "job", False, "RestartJob")
RESTART_JOB_MAX_REPLICAS = 1024


@dataclass(frozen=True)
class Release:
    """What a JobSet release offers a failure policy (api/jobset/v1alpha2/jobset_types.go
    FailurePolicyAction and JobSetRestartStrategy at that tag; pkg/features/features.go gates, with defaults)."""
    name: str
    actions: tuple[FailureAction, ...]
    restart_strategies: tuple[str, ...]
    feature_gates: tuple[tuple[str, bool], ...] = ()   # (gate, default)

    def action(self, name: str) -> FailureAction | None:
        return next((a for a in self.actions if a.name == name), None)


RELEASES = {
    "v0.10.1": Release("v0.10.1", (FAIL_JOBSET, RESTART_JOBSET, RESTART_JOBSET_IGNORE_MAX),
                       ("Recreate", "BlockingRecreate")),
    "v0.12.0": Release("v0.12.0", (FAIL_JOBSET, RESTART_JOBSET, RESTART_JOBSET_IGNORE_MAX, RESTART_JOB,
                                   RESTART_JOB_IGNORE_MAX),
                       ("Recreate", "BlockingRecreate", "InPlaceRestart"),
                       (("RestartJob", False), ("InPlaceRestart", False))),
}
# failure_policy.go defaultFailurePolicyRuleAction: a failed Job no rule matches restarts the JobSet; without
# a failurePolicy the JobSet fails at once (executeFailurePolicy: FailedJobs).
DEFAULT_ACTION = RESTART_JOBSET
# jobset_types.go FailurePolicy.restartStrategy: "Defaults to Recreate" (every Job recreated as soon as its
# previous iteration is deleted); BlockingRecreate waits until every old Job is gone; InPlaceRestart (v0.12.0,
# gate InPlaceRestart, off by default; the webhook refuses it while off) restarts healthy pods in place.
DEFAULT_RESTART_STRATEGY = "Recreate"
# failure_policy.go (v0.10.1, v0.12.0) and pkg/constants/constants.go: the JobSet's Failed condition reasons.
REASON_FAILED_JOBS = "FailedJobs"
REASON_FAIL_JOBSET_ACTION = "FailJobSetFailurePolicyAction"


def release_for_trainer(trainer_release: str) -> Release:
    """The JobSet release a Trainer release ships (kdt.versions.JOBSET)."""
    key = ".".join(str(trainer_release).lstrip("v").split(".")[:2])
    return RELEASES[versions.JOBSET.get(key, versions.JOBSET[versions.TRAINER_DEFAULT])]


def failure_actions(trainer_release: str) -> tuple[str, ...]:
    """FailurePolicyAction names of the JobSet a Trainer release ships (2.1: FailJobSet, RestartJobSet,
    RestartJobSetAndIgnoreMaxRestarts; 2.3 adds RestartJob, RestartJobAndIgnoreMaxRestarts)."""
    return tuple(a.name for a in release_for_trainer(trainer_release).actions)


def admission_defaults(data: dict) -> dict:
    """The JobSet as the API server validates it: after the JobSet webhook's defaulting.

    pkg/webhooks/jobset_webhook.go Default(): a failure-policy rule without a name
    is named `failurePolicyRule<i>` (the CRD's own text: "The name is defaulted to
    'failurePolicyRuleN'"), so a missing name is no error on a JobSet. Runtimes
    embed the same type but no webhook defaults it there: their rules need names.
    """
    rules = (((data.get("spec") or {}).get("failurePolicy") or {}).get("rules")) if isinstance(data, dict) else None
    if not isinstance(rules, list) or all(not isinstance(r, dict) or r.get("name") for r in rules):
        return data
    out = copy.deepcopy(data)
    for i, r in enumerate(out["spec"]["failurePolicy"]["rules"]):
        if isinstance(r, dict) and not r.get("name"):
            r["name"] = f"failurePolicyRule{i}"
    return out
# pkg/webhooks/jobset_webhook.go validOnJobFailureReasons (batch/v1 Job condition reasons).
FAILURE_REASONS = ("BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes",
                   "MaxFailedIndexesExceeded", "PodFailurePolicy")
# pkg/webhooks/jobset_webhook.go minRuleNameLength / maxRuleNameLength / ruleNameFmt;
# rule names must also be unique.
RULE_NAME_MIN = 1
RULE_NAME_MAX = 128
RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")

# pkg/webhooks/jobset_webhook.go: names must be DNS-1035 labels of at most 63
# characters ("pod names generated for this JobSet will exceed 63 characters").
MAX_NAME = 63
POD_SUFFIX = 6   # "-abcde": the random suffix the webhook adds when checking pod names


def job_name(jobset: str, replicated_job: str, job_index: int) -> str:
    """pkg/util/placement GenJobName: `<jobset>-<rjob>-<jobIdx>`."""
    return f"{jobset}-{replicated_job}-{job_index}"


def pod_name(jobset: str, replicated_job: str, job_index: int, pod_index: int) -> str:
    """Longest pod name the webhook checks: GenPodName `<jobset>-<rjob>-<jobIdx>-<podIdx>` plus `-abcde`."""
    return f"{jobset}-{replicated_job}-{job_index}-{pod_index}" + "-abcde"


# Labels (and annotations) the JobSet controller puts on every pod of a JobSet
# (api/jobset/v1alpha2/jobset_types.go JobSetNameKey, ReplicatedJobNameKey,
# JobIndexKey; pkg/controllers/jobset_controller.go labelAndAnnotateObject). A pod
# reads them through the downward API (fieldRef metadata.labels['...']).
LABEL_JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
LABEL_REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_JOB_INDEX = "jobset.sigs.k8s.io/job-index"


def subdomain(jobset_spec: dict, jobset_name: str) -> str:
    """The pods' DNS subdomain: spec.network.subdomain, default the JobSet's name (jobset_types.go Network)."""
    net = jobset_spec.get("network") if isinstance(jobset_spec, dict) else None
    sub = net.get("subdomain") if isinstance(net, dict) else None
    return str(sub) if sub else jobset_name
# api/jobset/v1alpha2/jobset_types.go RestartsKey: the restart attempt a pod belongs to; a JobSet
# restart (failurePolicy) deletes every Job and recreates them with the attempt + 1.
LABEL_RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
# v0.12.0 pkg/constants/constants.go JobRestartAttemptKey (with the RestartJob gate): a Job's own restarts.
LABEL_JOB_RESTART_ATTEMPT = "jobset.sigs.k8s.io/job-restart-attempt"

# The Job controller (kubernetes pkg/controller/job/indexed_job_utils.go, Kubernetes 1.28+) for an Indexed
# Job (the completion mode the JobSet webhook defaults, pkg/webhooks/jobset_webhook.go Default): each
# pod carries its index as annotation and label `batch.kubernetes.io/job-completion-index` and as env
# JOB_COMPLETION_INDEX; the label `batch.kubernetes.io/job-name` names its Job.
COMPLETION_INDEX_KEY = "batch.kubernetes.io/job-completion-index"
LABEL_JOB_NAME = "batch.kubernetes.io/job-name"
ENV_COMPLETION_INDEX = "JOB_COMPLETION_INDEX"
# pkg/apis/batch/v1/defaults.go: a Job's backoffLimit defaults to 6 (pod failures before the Job
# fails with reason BackoffLimitExceeded; a container restarted in place by restartPolicy OnFailure
# counts as a failure too).
JOB_DEFAULT_BACKOFF_LIMIT = 6
# pkg/webhooks/jobset_webhook.go Default(): a replicated job's pod template without restartPolicy
# gets OnFailure (a Job refuses Always), and a Job template without completionMode is Indexed.
DEFAULT_POD_RESTART_POLICY = "OnFailure"
DEFAULT_COMPLETION_MODE = "Indexed"
JOB_FAILED_REASON = "BackoffLimitExceeded"
# api/jobset/v1alpha2/jobset_types.go FailurePolicy.MaxRestarts (default 0) and
# pkg/controllers/failure_policy.go: a restart that counts toward the maximum is refused once the restarts
# counted reach maxRestarts (with the RestartJob gate on, JobSet and Job restarts are counted together,
# totalRestartsCountTowardsMax); the JobSet then fails with reason ReachedMaxRestarts.
# SuccessPolicy (default operator All over every replicated job): the JobSet completes when all
# Jobs of the targeted replicated jobs have completed.
REASON_MAX_RESTARTS = "ReachedMaxRestarts"
SUCCESS_ALL = "All"
SUCCESS_ANY = "Any"

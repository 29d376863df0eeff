"""JobSet (`jobset.x-k8s.io/v1alpha2`): what Trainer v2 renders a runtime into.

Facts read from kubernetes-sigs/jobset (v0.8, see kdt.versions.JOBSET);
paths are relative to that repository.
"""
from __future__ import annotations

import copy
import re

from ..schemas import crd_rules

GROUP = "jobset.x-k8s.io"
KIND = "JobSet"
API_VERSION = "jobset.x-k8s.io/v1alpha2"


def failure_actions(trainer_release: str) -> tuple[str, ...]:
    """FailurePolicyAction values of the JobSet a Trainer release ships: the enum of its CRDs
    (api/jobset/v1alpha2/jobset_types.go; 2.1: FailJobSet, RestartJobSet,
    RestartJobSetAndIgnoreMaxRestarts; 2.3 adds RestartJob, RestartJobAndIgnoreMaxRestarts)."""
    return crd_rules.enum_at(trainer_release, API_VERSION, KIND, ("spec", "failurePolicy", "rules", "*", "action"))


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
# gets OnFailure (a Job refuses Always).
DEFAULT_POD_RESTART_POLICY = "OnFailure"
JOB_FAILED_REASON = "BackoffLimitExceeded"
# api/jobset/v1alpha2/jobset_types.go FailurePolicy.MaxRestarts (default 0) and
# pkg/controllers/jobset_controller.go: a failed Job restarts the whole JobSet (all Jobs deleted and
# recreated) while restarts < maxRestarts; then the JobSet fails with reason ReachedMaxRestarts.
# SuccessPolicy (default operator All over every replicated job): the JobSet completes when all
# Jobs of the targeted replicated jobs have completed.
REASON_MAX_RESTARTS = "ReachedMaxRestarts"
SUCCESS_ALL = "All"
SUCCESS_ANY = "Any"

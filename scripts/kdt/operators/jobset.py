"""JobSet (`jobset.x-k8s.io/v1alpha2`): what Trainer v2 renders a runtime into.

Facts read from kubernetes-sigs/jobset (v0.8, see kdt.versions.JOBSET);
paths are relative to that repository.
"""
from __future__ import annotations

import re

GROUP = "jobset.x-k8s.io"
KIND = "JobSet"

# api/jobset/v1alpha2/jobset_types.go FailurePolicyAction values.
FAILURE_ACTIONS = ("FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts")
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

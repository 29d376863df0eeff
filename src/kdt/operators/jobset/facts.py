"""JobSet (`jobset.x-k8s.io/v1alpha2`): what Trainer v2 renders a runtime into.

Facts read from kubernetes-sigs/jobset at the releases the Trainer releases ship (kdt.versions.JOBSET:
Trainer 2.1.0 ships v0.10.1, 2.3.0 ships v0.12.0, their go.mod); paths are relative to that repository.
"""
from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass

from ... import versions
from ...fields import as_int
from .. import kubernetes as K8S

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
# v0.12.0 pkg/webhooks/jobset_webhook.go ValidateCreate: the restart strategy a feature gate must allow.
STRATEGY_GATES = {"InPlaceRestart": "InPlaceRestart"}


def gate_rejections(spec: dict, release: Release, gates: dict | None = None) -> list[tuple[tuple, str]]:
    """(path in the spec, the webhook's message) for what the JobSet webhook of `release` refuses while a feature
    gate is off (`gates`: gate -> on; default the release's defaults, pkg/features/features.go: RestartJob and
    InPlaceRestart alpha, off in v0.12.0): v0.12.0 pkg/webhooks/jobset_webhook.go ValidateCreate (restartStrategy
    InPlaceRestart) and validateFailurePolicy (a RestartJob or RestartJobAndIgnoreMaxRestarts rule: one error for
    the JobSet, at its first such rule). v0.10.1 has neither (its CRD's enums refuse them)."""
    on = {**dict(release.feature_gates), **(gates or {})}
    fp = spec.get("failurePolicy") if isinstance(spec, dict) else None
    if not isinstance(fp, dict):
        return []
    out: list[tuple[tuple, str]] = []
    strategy = fp.get("restartStrategy")
    gate = STRATEGY_GATES.get(strategy) if isinstance(strategy, str) else None
    if gate and strategy in release.restart_strategies and not on.get(gate):
        out.append((("failurePolicy", "restartStrategy"), f"{strategy} restart strategy cannot be set when {gate} "
                                                          "feature gate is disabled"))
    rules = fp.get("rules") if isinstance(fp.get("rules"), list) else []
    for i, rule in enumerate(rules):
        action = release.action(rule.get("action")) if isinstance(rule, dict) else None
        if action is not None and action.feature_gate and not on.get(action.feature_gate):
            gated = " and ".join(a.name for a in release.actions if a.feature_gate == action.feature_gate)
            out.append((("failurePolicy", "rules", i, "action"), f"{gated} failure policy actions are not allowed when "
                                                                 f"{action.feature_gate} feature gate is disabled"))
            break
    return out


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
    """The JobSet release a Trainer release of kdt.versions.TRAINER ships (kdt.versions.JOBSET; another release is
    first mapped to the one it is checked as, kdt.operators.trainer_v2.shapes.checked_as). A release missing from
    JOBSET is an error, never another release's JobSet."""
    key = ".".join(str(trainer_release).lstrip("v").split(".")[:2])
    if key not in versions.JOBSET:
        raise KeyError(f"Trainer {key}: no JobSet release in kdt.versions.JOBSET (each release of TRAINER needs one)")
    return RELEASES[versions.JOBSET[key]]


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
    spec = data.get("spec") if isinstance(data, dict) else None
    if not isinstance(spec, dict) or not _unnamed_rules(spec):
        return data
    out = copy.deepcopy(data)
    _name_rules(out["spec"])
    return out


def _unnamed_rules(spec: dict) -> list[int]:
    rules = spec.get("failurePolicy", {}).get("rules") if isinstance(spec.get("failurePolicy"), dict) else None
    return [i for i, r in enumerate(rules if isinstance(rules, list) else []) if isinstance(r, dict) and not r.get("name")]


def _name_rules(spec: dict) -> list[tuple[tuple, str]]:
    """Default(): each unnamed failure-policy rule named `failurePolicyRule<i>`; (path, name) of each."""
    out = []
    for i in _unnamed_rules(spec):
        name = spec["failurePolicy"]["rules"][i]["name"] = f"failurePolicyRule{i}"
        out.append((("failurePolicy", "rules", i, "name"), name))
    return out


# pkg/webhooks/jobset_webhook.go validOnJobFailureReasons (batch/v1 Job condition reasons).
FAILURE_REASONS = ("BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes",
                   "MaxFailedIndexesExceeded", "PodFailurePolicy")
# pkg/webhooks/jobset_webhook.go minRuleNameLength / maxRuleNameLength / ruleNameFmt;
# rule names must also be unique.
RULE_NAME_MIN = 1
RULE_NAME_MAX = 128
RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
# pkg/webhooks/jobset_webhook.go defaultRuleNameFmt: Default names a rule whose name is empty.
DEFAULT_RULE_NAME = "failurePolicyRule{}"


def rule_names(rules: list) -> list[str | None]:
    """The name of each failure-policy rule as validateFailurePolicy reads it, after Default (jobset v0.10.1 and
    v0.12.0 pkg/webhooks/jobset_webhook.go, the same in both): a rule whose name is missing, empty or null
    (the API server prunes a null as it decodes the body) is `failurePolicyRule<index>`; None for a rule that
    is not a mapping or whose name is not a string (the schema's error). A runtime's rules reach the webhook
    the same way: Trainer creates its JobSet from them."""
    out: list[str | None] = []
    for i, rule in enumerate(rules):
        name = rule.get("name") if isinstance(rule, dict) else 0
        out.append(DEFAULT_RULE_NAME.format(i) if name in (None, "") else name if isinstance(name, str) else None)
    return out


def rule_name_rejections(rules: list) -> list[tuple[int, str]]:
    """(index of the rule, the webhook's message) for each failure-policy rule name validateFailurePolicy refuses
    once Default has named the unnamed ones (jobset v0.10.1 and v0.12.0 pkg/webhooks/jobset_webhook.go: length
    1-128, ruleNameFmt, unique). A repeated name is reported once, at its second rule; the webhook's own words
    (v0.10.1 answers "admission webhook \"vjobset.kb.io\" denied the request: <message>", v0.12.0 "The JobSet
    ... is invalid: <nil>: Internal error: <message>", measured on Kubernetes v1.36.3)."""
    names = rule_names(rules)
    out: list[tuple[int, str]] = []
    first: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        if name is None:
            continue
        size = len(name.encode())      # Go's len: bytes
        if not RULE_NAME_MIN <= size <= RULE_NAME_MAX:
            out.append((i, f"invalid failure policy rule name of length {size}, the rule name must be at least "
                           f"{RULE_NAME_MIN} characters long and at most {RULE_NAME_MAX} characters long"))
        if not RULE_NAME.match(name):
            out.append((i, f"invalid failure policy rule name '{name}', a failure policy rule name must start with an "
                           "alphabetic character, optionally followed by a string of alphanumeric characters or "
                           "'_,:', and must end with an alphanumeric character or '_'"))
        first.setdefault(name, []).append(i)
    for name, indices in first.items():
        if len(indices) > 1:
            out.append((indices[1], f"rule names are not unique, rules with indices [{' '.join(map(str, indices))}] "
                                    f"all have the same name '{name}'"))
    return out

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
ENV_COMPLETION_INDEX = K8S.ENV_COMPLETION_INDEX
# kubernetes v1.36.3 pkg/controller/job/indexed_job_utils.go addCompletionIndexEnvVariable: the env reads the
# pod's label (the annotation before the pod-index label went GA).
ENV_COMPLETION_INDEX_FIELD = f"metadata.labels['{COMPLETION_INDEX_KEY}']"
# pkg/registry/batch/job/strategy.go generateSelector: the API server labels a Job's pod template (and selects
# on) its name and uid, each under its legacy and its batch.kubernetes.io key; the Job controller's pods carry
# them (a Job's uid is assigned: UID_PLACEHOLDER until a cluster gives it).
LEGACY_LABEL_JOB_NAME = "job-name"
LABELS_CONTROLLER_UID = ("controller-uid", "batch.kubernetes.io/controller-uid")
UID_PLACEHOLDER = "<uid>"
# job_controller.go: every pod it creates carries this finalizer until its end is counted (job tracking).
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
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


# ---------------------------------------------------------------- what the JobSet controller creates
# api/jobset/v1alpha2/jobset_types.go (v0.10.1, v0.12.0): the other keys labelAndAnnotateObject
# (pkg/controllers/jobset_controller.go) writes, as labels and as annotations, on every Job and on its
# pod template; the restart keys are pkg/constants/constants.go's.
LABEL_JOBSET_UID = "jobset.sigs.k8s.io/jobset-uid"
LABEL_REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
LABEL_GLOBAL_REPLICAS = "jobset.sigs.k8s.io/global-replicas"
LABEL_JOB_KEY = "jobset.sigs.k8s.io/job-key"
LABEL_JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
LABEL_GROUP_NAME = "jobset.sigs.k8s.io/group-name"
LABEL_GROUP_REPLICAS = "jobset.sigs.k8s.io/group-replicas"
LABEL_JOB_GROUP_INDEX = "jobset.sigs.k8s.io/job-group-index"
LABEL_COORDINATOR = "jobset.sigs.k8s.io/coordinator"
ANNOTATION_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
ANNOTATION_NODE_SELECTOR_STRATEGY = "alpha.jobset.sigs.k8s.io/node-selector"
NAMESPACED_JOB_KEY = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE_TAINT_KEY = "alpha.jobset.sigs.k8s.io/no-schedule"
# jobset_types.go ReplicatedJob.groupName: "+kubebuilder:default=default"; replicas: default 1.
DEFAULT_GROUP_NAME = "default"
DEFAULT_REPLICAS = 1
# The JobSet's UID (labels jobset-uid) is the API server's, unknown before the object exists.
UID_UNKNOWN = "<uid>"


def job_key(namespace: str, job: str) -> str:
    """jobset_controller.go jobHashKey: the SHA1 hex digest of `<namespace>/<job name>`."""
    return hashlib.sha1(f"{namespace}/{job}".encode()).hexdigest()


def group_of(rjob: dict) -> str:
    g = rjob.get("groupName") if isinstance(rjob, dict) else None
    return str(g) if g else DEFAULT_GROUP_NAME


def replicas_of(rjob: dict) -> int:
    return as_int(rjob.get("replicas"), DEFAULT_REPLICAS) if isinstance(rjob, dict) else DEFAULT_REPLICAS


def job_labels(jobset: str, namespace: str, spec: dict, k: int, job_index: int, restarts: int = 0,
               gates: frozenset = frozenset(), annotations: dict | None = None) -> tuple[dict, dict]:
    """(labels, annotations) labelAndAnnotateObject adds to Job `job_index` of replicated job `k` and to its
    pod template (v0.10.1, v0.12.0; the job-restart-attempt keys only with v0.12.0's RestartJob gate on).
    Global and group indices count the replicas of the replicated jobs before it, in spec order
    (globalJobIndex, globalReplicas, groupJobIndex, groupReplicas); `annotations` are the JobSet's own
    (its exclusive-topology placement is copied down)."""
    rjobs = [r for r in (spec.get("replicatedJobs") or []) if isinstance(r, dict)]
    rjob = rjobs[k]
    rname, group = str(rjob.get("name")), group_of(rjob)
    before = sum(replicas_of(r) for r in rjobs[:k])
    group_before = sum(replicas_of(r) for r in rjobs[:k] if group_of(r) == group)
    name = job_name(jobset, rname, job_index)
    keys = {LABEL_JOBSET_NAME: jobset, LABEL_JOBSET_UID: UID_UNKNOWN, LABEL_REPLICATED_JOB: rname,
            LABEL_RESTART_ATTEMPT: str(restarts)}
    if "RestartJob" in gates:
        keys[LABEL_JOB_RESTART_ATTEMPT] = "0"
    keys.update({LABEL_REPLICATED_JOB_REPLICAS: str(replicas_of(rjob)),
                 LABEL_GLOBAL_REPLICAS: str(sum(replicas_of(r) for r in rjobs)),
                 LABEL_JOB_INDEX: str(job_index), LABEL_JOB_KEY: job_key(namespace, name),
                 LABEL_JOB_GLOBAL_INDEX: str(before + job_index), LABEL_GROUP_NAME: group,
                 LABEL_GROUP_REPLICAS: str(sum(replicas_of(r) for r in rjobs if group_of(r) == group)),
                 LABEL_JOB_GROUP_INDEX: str(group_before + job_index)})
    coord = spec.get("coordinator")
    if isinstance(coord, dict):
        keys[LABEL_COORDINATOR] = (f"{jobset}-{coord.get('replicatedJob')}-{coord.get('jobIndex', 0)}-"
                                   f"{coord.get('podIndex', 0)}.{subdomain(spec, jobset)}")
    ann = dict(keys)
    for source in (annotations or {}, ((rjob.get("template") or {}).get("metadata") or {}).get("annotations") or {}):
        if ANNOTATION_EXCLUSIVE in source:
            ann[ANNOTATION_EXCLUSIVE] = source[ANNOTATION_EXCLUSIVE]
            if ANNOTATION_NODE_SELECTOR_STRATEGY in source:
                ann[ANNOTATION_NODE_SELECTOR_STRATEGY] = source[ANNOTATION_NODE_SELECTOR_STRATEGY]
    return keys, ann


# pkg/webhooks/jobset_webhook.go Default (v0.10.1, v0.12.0): what the mutating webhook sets on a JobSet.
DEFAULT_COMPLETION_MODE = "Indexed"
DEFAULT_SUCCESS_OPERATOR = "All"
DEFAULT_STARTUP_ORDER = "AnyOrder"


def defaulted_spec(spec: dict) -> list[tuple[tuple, object]]:
    """(path in the spec, value) for each default the JobSet webhook writes (Default): success policy
    All, startup policy AnyOrder, each Job Indexed with pod restartPolicy OnFailure, DNS hostnames and
    publishNotReadyAddresses on, failure-policy rule names. Mutates `spec`."""
    out: list[tuple[tuple, object]] = []

    def put(parent: dict, key: str, value, path: tuple) -> None:
        if parent.get(key) is None:
            parent[key] = value
            out.append((path + (key,), value))
    put(spec, "successPolicy", {"operator": DEFAULT_SUCCESS_OPERATOR}, ())
    put(spec, "startupPolicy", {"startupPolicyOrder": DEFAULT_STARTUP_ORDER}, ())
    for k, rj in enumerate(spec.get("replicatedJobs") or []):
        if not isinstance(rj, dict):
            continue
        tmpl = rj.setdefault("template", {})
        jspec = tmpl.setdefault("spec", {}) if isinstance(tmpl, dict) else {}
        put(jspec, "completionMode", DEFAULT_COMPLETION_MODE, ("replicatedJobs", k, "template", "spec"))
        pod = jspec.setdefault("template", {}).setdefault("spec", {})
        if not pod.get("restartPolicy"):
            pod["restartPolicy"] = DEFAULT_POD_RESTART_POLICY
            out.append((("replicatedJobs", k, "template", "spec", "template", "spec", "restartPolicy"),
                        DEFAULT_POD_RESTART_POLICY))
    for i, policy in enumerate(spec.get("volumeClaimPolicies") or []):
        if isinstance(policy, dict):      # v0.12.0 Default: "Apply the default retention policy"
            put(policy, "retentionPolicy", {"whenDeleted": RETENTION_DELETE}, ("volumeClaimPolicies", i))
    net = spec.get("network") if isinstance(spec.get("network"), dict) else None
    if net is None:
        net = spec["network"] = {}
    put(net, "enableDNSHostnames", True, ("network",))
    put(net, "publishNotReadyAddresses", True, ("network",))
    out += _name_rules(spec)
    return out


# v0.12.0 spec.volumeClaimPolicies (pkg/controllers/volume_claim_policy.go): one PVC per template, named
# GeneratePVCName `<template name>-<jobset name>`, labelled with the JobSet's name, owned by the JobSet when its
# retention policy is Delete (the webhook's default); addVolumes gives each Job whose containers or init
# containers mount the template's name a volume of that claim.
RETENTION_DELETE = "Delete"


def pvc_name(jobset: str, template: str) -> str:
    return f"{template}-{jobset}"


def claim_templates(spec: dict) -> list[tuple[tuple, dict, dict]]:
    """(path in the spec, policy, template) of every volumeClaimPolicies template with a name."""
    out = []
    for pi, policy in enumerate(spec.get("volumeClaimPolicies") or []):
        for ti, t in enumerate((policy.get("templates") or []) if isinstance(policy, dict) else []):
            if isinstance(t, dict) and isinstance(t.get("metadata"), dict) and t["metadata"].get("name"):
                out.append((("volumeClaimPolicies", pi, "templates", ti), policy, t))
    return out


def claim_pvcs(jobset: str, namespace: str, spec: dict) -> list[tuple[tuple, dict]]:
    """createPVCsIfNecessary: (template's path in the spec, PVC) for the JobSet's volumeClaimPolicies."""
    out = []
    for path, policy, t in claim_templates(spec):
        tmeta = t["metadata"]
        meta = {"name": pvc_name(jobset, str(tmeta["name"]))}
        if namespace:
            meta["namespace"] = namespace
        meta["labels"] = {**(tmeta.get("labels") or {}), LABEL_JOBSET_NAME: jobset}
        if tmeta.get("annotations"):
            meta["annotations"] = dict(tmeta["annotations"])
        if ((policy.get("retentionPolicy") or {}).get("whenDeleted") or RETENTION_DELETE) == RETENTION_DELETE:
            meta["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": jobset,
                                        "controller": True, "blockOwnerDeletion": True}]      # uid: the server's
        out.append((path, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
                           "spec": copy.deepcopy(t.get("spec") or {})}))
    return out


def add_claim_volumes(pod_spec: dict, jobset: str, spec: dict) -> list[int]:
    """addVolumes on one Job's pod spec: the indexes of the volumes added."""
    mounted = {m.get("name") for c in [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]
               if isinstance(c, dict) for m in (c.get("volumeMounts") or []) if isinstance(m, dict)}
    added = []
    for _, _, t in claim_templates(spec):
        name = str(t["metadata"]["name"])
        if name in mounted:
            vols = pod_spec.setdefault("volumes", [])
            vols.append({"name": name, "persistentVolumeClaim": {"claimName": pvc_name(jobset, name)}})
            added.append(len(vols) - 1)
    return added


def headless_service(jobset: str, namespace: str, spec: dict) -> dict | None:
    """jobset_controller.go createHeadlessSvcIfNecessary: with DNS hostnames on, a Service named the
    subdomain (default the JobSet's name), clusterIP None, selecting the JobSet's pods by jobset-name,
    publishNotReadyAddresses from the network (default true)."""
    net = spec.get("network") if isinstance(spec.get("network"), dict) else {}
    if net.get("enableDNSHostnames") is False:
        return None
    meta = {"name": subdomain(spec, jobset)}
    if namespace:
        meta["namespace"] = namespace
    pnra = net.get("publishNotReadyAddresses")
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"clusterIP": "None", "selector": {LABEL_JOBSET_NAME: jobset},
                     "publishNotReadyAddresses": True if pnra is None else bool(pnra)}}


# pkg/controllers/jobset_controller.go (v0.10.1, v0.12.0) managedByExternalController: a JobSet whose
# spec.managedBy is set to anything but this controller's name is left to that controller.
CONTROLLER_NAME = "jobset.sigs.k8s.io/jobset-controller"


def claim_volume_names(spec: dict) -> frozenset:
    """The volumes the JobSet controller adds to its Jobs' pods: one per volumeClaimPolicies template that a
    container mounts, named after the template (jobset v0.12.0 pkg/controllers/volume_claim_policy.go
    addVolumes, called by jobset_controller.go constructJob), so such a mount needs no volume of its own."""
    names = set()
    for policy in spec.get("volumeClaimPolicies") or [] if isinstance(spec, dict) else []:
        for t in (policy.get("templates") or []) if isinstance(policy, dict) else []:
            name = (t.get("metadata") or {}).get("name") if isinstance(t, dict) and isinstance(t.get("metadata"), dict) else None
            if isinstance(name, str):
                names.add(name)
    return frozenset(names)


# The JobSet webhook's defaulting (pkg/webhooks/jobset_webhook.go Default, on CREATE) reaches the API server as
# a patch of the whole JobSet it decoded and encoded again, so a number where a Quantity goes (`cpu: 0.5`, which
# the JobSet CRD's int-or-string would refuse) arrives as a string: controller-runtime v0.22.1 (JobSet v0.10.1)
# pkg/webhook/admission/defaulter_custom.go Handle always answers PatchResponseFromRaw(raw, re-encoded);
# v0.24.0 (JobSet v0.12.0) does so whenever Default changed anything, which it does unless every default it
# fills is written (successPolicy, startupPolicy, network, each replicated job's completionMode and
# restartPolicy, ...): kdt takes the patch as given (an object with all of them written is the one case where
# v0.12.0 refuses the number; measured on Kubernetes v1.36.3 with JobSet v0.12.0: `cpu: 0.25` admitted).
WEBHOOK_REENCODES = True

# the status conditions (type, status True) that end a job: (succeeded, failed) (jobset v0.12.0 api/jobset/v1alpha2 jobset_types.go JobSetCompleted, JobSetFailed)
JOBSET_ENDS = ("Completed", "Failed")

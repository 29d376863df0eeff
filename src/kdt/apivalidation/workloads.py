"""Workload kinds: the Job, StatefulSet and controller rules, and the pod templates of every operator kind.

kubernetes/kubernetes:
- pkg/apis/batch/validation/validation.go ValidateJob, validateJobSpec,
  validatePodFailurePolicy(Rule, OnExitCodes, OnPodConditions), validateSuccessPolicy,
  validatePodReplacementPolicy, ValidateCronJobCreate, ValidateJobTemplateSpec
  (Kubernetes 1.34/1.35 as stored by the search tool; podFailurePolicy is on by
  default from 1.26, backoffLimitPerIndex from 1.29, successPolicy from 1.31:
  on an older cluster those fields are refused as unknown by the schema of that
  version). A Job's selector is generated unless `manualSelector: true`; a
  selector written anyway must match the template's labels
  (pkg/registry/batch/job/strategy.go generateSelector). An Indexed Job's last
  pod hostname `<name>-<completions-1>` must be a DNS label.
- pkg/apis/apps/validation/validation.go ValidateStatefulSetSpec (selector
  non-empty and matching the template, restartPolicy Always, no
  activeDeadlineSeconds, podManagementPolicy, updateStrategy), and the same
  selector and restart rules of Deployment, ReplicaSet and DaemonSet. A
  StatefulSet's serviceName becomes each pod's spec.subdomain, a DNS label
  (kubernetes#130233 validates it on the StatefulSet itself; before, every pod
  was refused).
- k8s.io/apimachinery pkg/apis/meta/v1/validation ValidateLabelSelector.

Operators: a PyTorchJob's replica templates are pod templates whose
restartPolicy the Training Operator overwrites from the replica spec; a JobSet's
replicated jobs are Job templates after the JobSet webhook's defaults
(kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go Default: completionMode
Indexed, pod restartPolicy OnFailure); a (Cluster)TrainingRuntime's are the same
but Trainer sets the trainer job's parallelism and completions and may add
volumes and images from the TrainJob, so those are not judged there; a TrainJob's
spec.trainer becomes the `node` container (its env and resourcesPerNode).
"""
from __future__ import annotations

import dataclasses

from ..operators import injection as INJ
from ..operators.jobset import facts as JS
from . import meta as M
from . import objects as O
from . import pods as P
from .checker import Report, as_int, d, dns1123_label, label_key, lst, quote

RULE_JOB = "api-job"
RULE_WORKLOAD = "api-workload"

MAX_PARALLELISM_INDEXED = 100_000        # batch validation maxParallelismForIndexedJob
MAX_POD_FAILURE_RULES = 20
MAX_EXIT_CODE_VALUES = 255
MAX_POD_CONDITION_PATTERNS = 20
MAX_SUCCESS_RULES = 20
POD_FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
CONDITION_STATUSES = ("False", "True", "Unknown")
# Labels the API server puts on a Job's pod template when it generates the selector (generateSelector):
# a selector the user writes must match the template with these added.
GENERATED_JOB_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name")

_JOB_POD = P.PodOptions(restart_allowed=("OnFailure", "Never"),
                        restart_why=" (a Job's pods must not restart as Always; the default is Always)")


def _selector_matches_template(r: Report, sel, tmpl: dict, tpath: tuple, rule: str, extra: tuple = ()) -> None:
    if not isinstance(sel, dict):
        return
    labels = dict(d(d(tmpl.get("metadata")).get("labels")))
    for k in extra:
        labels.setdefault(k, "")              # generated: present, its value unknown here
    if extra:
        sel = {**sel, "matchLabels": {k: v for k, v in d(sel.get("matchLabels")).items() if k not in extra}}
    if not M.matches(sel, labels):
        r.err(rule, tpath + ("metadata", "labels"), "Invalid value: `selector` does not match template `labels`")


def _nonnegative(r: Report, spec: dict, keys: tuple, path: tuple, rule: str) -> None:
    for k in keys:
        v = spec.get(k)
        if v.__class__ is int and v < 0:
            r.err(rule, path + (k,), f"Invalid value: {v}: must be greater than or equal to 0")


# Jobs ------------------------------------------------------------------------------------------

_JOB_COUNTS = frozenset(("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                         "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"))


def job_spec(r: Report, spec: dict, path: tuple, *, defaults: dict | None = None, pod: P.PodOptions = _JOB_POD,
             counts: bool = True) -> None:
    """validateJobSpec on `spec` as the API server receives it (after `defaults`, an operator's webhook)."""
    for k, v in spec.items():
        if k in _JOB_COUNTS and v.__class__ is int and v < 0:
            r.err(RULE_JOB, path + (k,), f"Invalid value: {v}: must be greater than or equal to 0")
    mode = spec.get("completionMode")
    if mode is None and defaults:
        mode = defaults.get("completionMode")
    completions, parallelism = as_int(spec.get("completions")), as_int(spec.get("parallelism"))
    if spec.get("completions") is None and spec.get("parallelism") is None:
        completions = parallelism = 1                       # SetDefaults_Job
    bpi, mfi = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    if mfi is not None and bpi is None:
        r.err(RULE_JOB, path + ("backoffLimitPerIndex",), "Required value: when maxFailedIndexes is specified")
    if isinstance(mode, str) and mode not in ("NonIndexed", "Indexed"):
        r.err(RULE_JOB, path + ("completionMode",), f'Unsupported value: {quote(mode)}: supported values: '
                                                    '"NonIndexed", "Indexed"')
    if mode == "Indexed":
        if counts and completions is None and spec.get("completions") is None:
            r.err(RULE_JOB, path + ("completions",), "Required value: when completion mode is Indexed")
        if parallelism is not None and parallelism > MAX_PARALLELISM_INDEXED:
            r.err(RULE_JOB, path + ("parallelism",), f"Invalid value: {parallelism}: must be less than or equal to "
                                                     f"{MAX_PARALLELISM_INDEXED} when completion mode is Indexed")
        if completions is not None and as_int(mfi) is not None and mfi > completions:
            r.err(RULE_JOB, path + ("maxFailedIndexes",), f"Invalid value: {mfi}: must be less than or equal to "
                                                          "completions")
    else:
        for k, v in (("backoffLimitPerIndex", bpi), ("maxFailedIndexes", mfi)):
            if v is not None:
                r.err(RULE_JOB, path + (k,), f"Invalid value: {v}: requires indexed completion mode")
    pfp = spec.get("podFailurePolicy")
    if isinstance(pfp, dict):
        _pod_failure_policy(r, spec, pfp, path + ("podFailurePolicy",))
    sp = spec.get("successPolicy")
    if isinstance(sp, dict):
        if mode != "Indexed":
            r.err(RULE_JOB, path + ("successPolicy",), "Invalid value: requires indexed completion mode")
        else:
            _success_policy(r, sp, completions, path + ("successPolicy",))
    prp = spec.get("podReplacementPolicy")
    if isinstance(prp, str):
        allowed = ("Failed",) if isinstance(pfp, dict) else ("Failed", "TerminatingOrFailed")
        if prp not in allowed:
            r.err(RULE_JOB, path + ("podReplacementPolicy",), f"Unsupported value: {quote(prp)}: supported values: "
                                                              f"{', '.join(quote(a) for a in allowed)}")
    tmpl = spec.get("template")
    if isinstance(tmpl, dict):
        if isinstance(pfp, dict):
            rp = d(tmpl.get("spec")).get("restartPolicy") or pod.restart_default
            if rp == "OnFailure":
                r.err(RULE_JOB, path + ("template", "spec", "restartPolicy"),
                      f'Invalid value: {quote(rp)}: only "Never" is supported when podFailurePolicy is specified')
        P.template(r, tmpl, path + ("template",), pod)


def _pod_failure_policy(r: Report, spec: dict, pfp: dict, path: tuple) -> None:
    rules = lst(pfp.get("rules"))
    if len(rules) > MAX_POD_FAILURE_RULES:
        r.err(RULE_JOB, path + ("rules",), f"Too many: {len(rules)}: must have at most {MAX_POD_FAILURE_RULES} items")
    ps = d(d(spec.get("template")).get("spec"))
    containers = {d(c).get("name") for k in ("containers", "initContainers") for c in lst(ps.get(k))}
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        p = path + ("rules", i)
        action = rule.get("action")
        if not action:
            r.err(RULE_JOB, p + ("action",), f"Required value: valid values: {POD_FAILURE_ACTIONS}")
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                r.err(RULE_JOB, p + ("action",), 'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set')
        elif isinstance(action, str) and action not in POD_FAILURE_ACTIONS:
            r.err(RULE_JOB, p + ("action",), f"Unsupported value: {quote(action)}: supported values: "
                                             f"{', '.join(quote(a) for a in POD_FAILURE_ACTIONS)}")
        oec, opc = rule.get("onExitCodes"), lst(rule.get("onPodConditions"))
        if isinstance(oec, dict):
            q = p + ("onExitCodes",)
            op = oec.get("operator")
            if not op:
                r.err(RULE_JOB, q + ("operator",), 'Required value: valid values: ["In" "NotIn"]')
            elif isinstance(op, str) and op not in ("In", "NotIn"):
                r.err(RULE_JOB, q + ("operator",), f'Unsupported value: {quote(op)}: supported values: "In", "NotIn"')
            cn = oec.get("containerName")
            if isinstance(cn, str) and cn not in containers:
                r.err(RULE_JOB, q + ("containerName",), f"Invalid value: {quote(cn)}: must be one of the container or "
                                                        "initContainer names in the pod template")
            values = [v for v in lst(oec.get("values")) if as_int(v) is not None]
            if not lst(oec.get("values")):
                r.err(RULE_JOB, q + ("values",), "Invalid value: at least one value is required")
            elif len(lst(oec.get("values"))) > MAX_EXIT_CODE_VALUES:
                r.err(RULE_JOB, q + ("values",), f"Too many: must have at most {MAX_EXIT_CODE_VALUES} items")
            seen: set = set()
            for j, v in enumerate(values):
                if op == "In" and v == 0:
                    r.err(RULE_JOB, q + ("values", j), "Invalid value: 0: must not be 0 for the In operator")
                if v in seen:
                    r.err(RULE_JOB, q + ("values", j), f"Duplicate value: {v}")
                seen.add(v)
            if values != sorted(values):
                r.err(RULE_JOB, q + ("values",), f"Invalid value: {values}: must be ordered")
        if len(opc) > MAX_POD_CONDITION_PATTERNS:
            r.err(RULE_JOB, p + ("onPodConditions",), f"Too many: must have at most {MAX_POD_CONDITION_PATTERNS} items")
        for j, pat in enumerate(opc):
            pat = d(pat)
            t, st = pat.get("type"), pat.get("status")
            if isinstance(t, str):
                wrong = label_key(t)
                if wrong:
                    r.each(RULE_JOB, p + ("onPodConditions", j, "type"), t, wrong)
            if st == "" or (st is None and "status" in pat):
                r.err(RULE_JOB, p + ("onPodConditions", j, "status"), "Required value")
            elif isinstance(st, str) and st not in CONDITION_STATUSES:
                r.err(RULE_JOB, p + ("onPodConditions", j, "status"), f"Unsupported value: {quote(st)}: supported "
                                                                      'values: "False", "True", "Unknown"')
        if isinstance(oec, dict) and opc:
            r.err(RULE_JOB, p, "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported")
        if not isinstance(oec, dict) and not opc:
            r.err(RULE_JOB, p, "Invalid value: specifying one of OnExitCodes and OnPodConditions is required")


def _success_policy(r: Report, sp: dict, completions: int | None, path: tuple) -> None:
    rules = lst(sp.get("rules"))
    if not rules:
        r.err(RULE_JOB, path + ("rules",), "Required value: at least one rules must be specified when the "
                                           "successPolicy is specified")
    if len(rules) > MAX_SUCCESS_RULES:
        r.err(RULE_JOB, path + ("rules",), f"Too many: must have at most {MAX_SUCCESS_RULES} items")
    for i, rule in enumerate(rules):
        rule = d(rule)
        p = path + ("rules", i)
        count = as_int(rule.get("succeededCount"))
        if rule.get("succeededCount") is None and rule.get("succeededIndexes") is None:
            r.err(RULE_JOB, p, "Required value: at least one of succeededCount or succeededIndexes must be specified")
        if count is not None:
            if count < 0:
                r.err(RULE_JOB, p + ("succeededCount",), f"Invalid value: {count}: must be greater than or equal to 0")
            if completions is not None and count > completions:
                r.err(RULE_JOB, p + ("succeededCount",), f"Invalid value: {count}: must be less than or equal to "
                                                         f"{completions} (the number of specified completions)")


def job(r: Report) -> None:
    data = r.doc.data
    spec = data.get("spec")
    if not isinstance(spec, dict):
        return
    job_spec(r, spec, ("spec",))
    manual = spec.get("manualSelector") is True
    sel = spec.get("selector")
    if manual and sel is None:
        r.err(RULE_JOB, ("spec", "selector"), "Required value: manualSelector is true")
    if isinstance(sel, dict):
        M.selector(r, sel, ("spec", "selector"), RULE_JOB)
        _selector_matches_template(r, sel, d(spec.get("template")), ("spec", "template"), RULE_JOB,
                                   () if manual else GENERATED_JOB_LABELS)
    completions = as_int(spec.get("completions"))
    name = M.generated_name(d(data.get("metadata")))
    if spec.get("completionMode") == "Indexed" and completions and name:
        host = f"{name}-{completions - 1}"
        if dns1123_label(host):
            where = ("metadata", "name") if d(data.get("metadata")).get("name") else ("metadata", "generateName")
            r.err(RULE_JOB, where, f"Invalid value: {quote(name)}: will not able to create pod with invalid DNS "
                                   f"label: {host}")


# batch/validation.go ValidateCronJobCreate: the controller appends an 11-character suffix to the
# name of each Job it creates, whose name is at most 63 characters.
CRONJOB_NAME_MAX = 63 - 11


def cronjob(r: Report) -> None:
    meta = d(r.doc.data.get("metadata"))
    name = M.generated_name(meta)
    if name is not None and len(name) > CRONJOB_NAME_MAX:
        where = ("metadata", "name") if name is meta.get("name") else ("metadata", "generateName")
        r.err(M.RULE_NAME, where, f"Invalid value: {quote(name)}: must be no more than {CRONJOB_NAME_MAX} characters")
    spec = d(r.doc.data.get("spec"))
    policy = spec.get("concurrencyPolicy")
    if isinstance(policy, str) and policy not in ("Allow", "Forbid", "Replace"):
        r.err(RULE_JOB, ("spec", "concurrencyPolicy"), f'Unsupported value: {quote(policy)}: supported values: '
                                                       '"Allow", "Forbid", "Replace"')
    _nonnegative(r, spec, ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"),
                 ("spec",), RULE_JOB)
    jt = d(spec.get("jobTemplate"))
    M.template_meta(r, jt, ("spec", "jobTemplate"))
    js = jt.get("spec")
    if isinstance(js, dict):
        job_spec(r, js, ("spec", "jobTemplate", "spec"))
        if js.get("selector") is not None:
            r.err(RULE_JOB, ("spec", "jobTemplate", "spec", "selector"), "Invalid value: `selector` will be "
                                                                         "auto-generated")
        if js.get("manualSelector") is True:
            r.err(RULE_JOB, ("spec", "jobTemplate", "spec", "manualSelector"), 'Unsupported value: true: supported '
                                                                               'values: "nil", "false"')


# Controllers -----------------------------------------------------------------------------------

_ALWAYS_POD = P.PodOptions(restart_allowed=("Always",), restart_why=" (its controller restarts pods itself)")


def controller(r: Report, kind: str, statefulset: bool = False) -> None:
    """Deployment, ReplicaSet, DaemonSet, StatefulSet (`kind` names it in messages): selector, template,
    restart policy; a StatefulSet's own fields and claim templates."""
    spec = r.doc.data.get("spec")
    if not isinstance(spec, dict):
        return
    sel, tmpl = spec.get("selector"), d(spec.get("template"))
    if isinstance(sel, dict):
        M.selector(r, sel, ("spec", "selector"), RULE_WORKLOAD)
        if not d(sel.get("matchLabels")) and not lst(sel.get("matchExpressions")):
            r.err(RULE_WORKLOAD, ("spec", "selector"), f"Invalid value: empty selector is invalid for "
                                                       f"{kind.lower()}")
        else:
            _selector_matches_template(r, sel, tmpl, ("spec", "template"), RULE_WORKLOAD)
    _nonnegative(r, spec, ("replicas", "minReadySeconds"), ("spec",), RULE_WORKLOAD)
    if d(tmpl.get("spec")).get("activeDeadlineSeconds") is not None:
        r.err(RULE_WORKLOAD, ("spec", "template", "spec", "activeDeadlineSeconds"),
              f"Forbidden: activeDeadlineSeconds in {kind} is not Supported")
    claims: frozenset = frozenset()
    if statefulset:
        claims = _statefulset(r, spec)
    if tmpl:
        P.template(r, tmpl, ("spec", "template"), P.PodOptions(restart_allowed=("Always",), claim_volumes=claims,
                                                               restart_why=_ALWAYS_POD.restart_why))


def _statefulset(r: Report, spec: dict) -> frozenset:
    pmp = spec.get("podManagementPolicy")
    if isinstance(pmp, str) and pmp not in ("OrderedReady", "Parallel"):
        r.err(RULE_WORKLOAD, ("spec", "podManagementPolicy"), f"Invalid value: {quote(pmp)}: must be 'OrderedReady' "
                                                              "or 'Parallel'")
    us = d(spec.get("updateStrategy"))
    t = us.get("type")
    if isinstance(t, str) and t not in ("RollingUpdate", "OnDelete"):
        r.err(RULE_WORKLOAD, ("spec", "updateStrategy"), "Invalid value: must be 'RollingUpdate' or 'OnDelete'")
    if t == "OnDelete" and us.get("rollingUpdate") is not None:
        r.err(RULE_WORKLOAD, ("spec", "updateStrategy", "rollingUpdate"), "Invalid value: only allowed for "
                                                                          "updateStrategy 'RollingUpdate'")
    for k in ("whenDeleted", "whenScaled"):
        v = d(spec.get("persistentVolumeClaimRetentionPolicy")).get(k)
        if isinstance(v, str) and v not in ("Retain", "Delete"):
            r.err(RULE_WORKLOAD, ("spec", "persistentVolumeClaimRetentionPolicy", k),
                  f'Unsupported value: {quote(v)}: supported values: "Retain", "Delete"')
    start = as_int(d(spec.get("ordinals")).get("start"))
    if start is not None and start < 0:
        r.err(RULE_WORKLOAD, ("spec", "ordinals", "start"), f"Invalid value: {start}: must be greater than or equal "
                                                            "to 0")
    svc = spec.get("serviceName")
    if isinstance(svc, str) and svc:
        wrong = dns1123_label(svc)
        if wrong:
            r.each(RULE_WORKLOAD, ("spec", "serviceName"), svc, wrong)
    names = set()
    for i, vct in enumerate(lst(spec.get("volumeClaimTemplates"))):
        vct = d(vct)
        name = d(vct.get("metadata")).get("name")
        if isinstance(name, str) and name:
            names.add(name)
        O.pvc_spec(r, d(vct.get("spec")), ("spec", "volumeClaimTemplates", i, "spec"))
    return frozenset(names)


def pod(r: Report) -> None:
    spec = r.doc.data.get("spec")
    if isinstance(spec, dict):
        P.pod_spec(r, spec, ("spec",), P.PodOptions())


# Operator kinds --------------------------------------------------------------------------------

_OPERATOR_POD = P.PodOptions(check_restart=False, image_required=False)
# The JobSet webhook's defaults of each replicated job (kdt.operators.jobset.facts).
JOBSET_JOB_DEFAULTS = {"completionMode": JS.DEFAULT_COMPLETION_MODE}
_JOBSET_POD = P.PodOptions(restart_default=JS.DEFAULT_POD_RESTART_POLICY, restart_allowed=("OnFailure", "Never"),
                           restart_why=" (JobSet creates a Job of each replicated job)")
_RUNTIME_POD = P.PodOptions(restart_default=JS.DEFAULT_POD_RESTART_POLICY, restart_allowed=("OnFailure", "Never"),
                            restart_why=" (Trainer creates a JobSet, and it a Job, of each replicated job)",
                            image_required=False, mounts_resolve=False)


def _at(data, path: tuple):
    for part in path:
        if isinstance(part, int):
            if not isinstance(data, list) or not -len(data) <= part < len(data):
                return None
        elif not isinstance(data, dict):
            return None
        data = data[part] if isinstance(part, int) else data.get(part)
    return data


def _replicated_job(path: tuple) -> bool:
    """Whether a pod template sits in a JobSet's replicated job (`...replicatedJobs[i].template.spec.template.spec`,
    a JobSet's or a runtime's): then its Job template is what the JobSet creates."""
    return len(path) >= 6 and path[-6] == "replicatedJobs" and isinstance(path[-5], int)


def operator_templates(r: Report, kind, runtime: bool) -> None:
    """The pod templates an operator kind declares to the registry (kdt.kinds): a JobSet's or a runtime's
    replicated jobs are Job templates after the JobSet webhook's defaults; the Training Operator's replica
    templates are pods whose restartPolicy it writes (and whose images its lint rule checks)."""
    doc = r.doc
    for pt in kind.pod_templates(doc):
        path = tuple(pt.path)
        if not _replicated_job(path):
            tmpl = _at(doc.data, path[:-1])
            if isinstance(tmpl, dict):
                add = kind.pod_additions(doc, pt)
                if add is None or not isinstance(tmpl.get("spec"), dict):
                    P.template(r, tmpl, path[:-1], _OPERATOR_POD)
                else:
                    _as_created(r, tmpl, path[:-1], add)
            continue
        job_tmpl_path = path[:-3]
        jt = _at(doc.data, job_tmpl_path)
        if not isinstance(jt, dict):
            continue
        M.template_meta(r, jt, job_tmpl_path)
        js = jt.get("spec")
        if isinstance(js, dict):
            pod = _RUNTIME_POD if runtime else _JOBSET_POD
            claims = JS.claim_volume_names(d(doc.data.get("spec"))) if not runtime else frozenset()
            if claims:
                pod = dataclasses.replace(pod, claim_volumes=claims)
            job_spec(r, js, job_tmpl_path + ("spec",), defaults=JOBSET_JOB_DEFAULTS, pod=pod, counts=not runtime)


def _as_created(r: Report, tmpl: dict, path: tuple, add: INJ.PodAdditions) -> None:
    """A pod template checked as the pod its operator creates from it (the volumes, mounts, env and init
    containers `add` appends: a mount of a volume the operator adds resolves, a volume or mount path the template
    repeats is the API server's refusal). A finding inside an added item is placed on the list it was added to
    and says who adds it."""
    spec = tmpl["spec"]
    made = INJ.created_spec(spec, add)
    sub = Report(r.doc, r.opts)
    P.template(sub, {**tmpl, "spec": made}, path, _OPERATOR_POD)
    added = _added(spec, made, path + ("spec",))
    for rule, p, message in sub.found():
        hit = next((a for a in added if p[:len(a[0])] == a[0]), None)
        if hit is not None:
            p, message = hit[0][:-1], f"{message}, in {hit[1]} that {add.by} adds to the pod it creates"
        r.err(rule, p, message)


def _added(spec: dict, made: dict, path: tuple) -> list[tuple[tuple, str]]:
    """(path, description) of every item of `made` that the template's `spec` does not have (all appended)."""
    out = []

    def tail(old, new, at: tuple, what):
        for i in range(len(lst(old)), len(lst(new))):
            out.append((at + (i,), what(d(lst(new)[i]))))
    tail(spec.get("volumes"), made.get("volumes"), path + ("volumes",), lambda v: f"the volume {quote(v.get('name'))}")
    tail(spec.get("initContainers"), made.get("initContainers"), path + ("initContainers",),
         lambda c: f"the init container {quote(c.get('name'))}")
    first, made_first = d((lst(spec.get("containers")) or [{}])[0]), d((lst(made.get("containers")) or [{}])[0])
    at = path + ("containers", 0)
    tail(first.get("volumeMounts"), made_first.get("volumeMounts"), at + ("volumeMounts",),
         lambda m: f"the mount of {quote(m.get('name'))} at {quote(m.get('mountPath'))}")
    tail(first.get("env"), made_first.get("env"), at + ("env",), lambda e: f"the variable {quote(e.get('name'))}")
    return out


def extra_container(r: Report, path: tuple, c: dict) -> None:
    """A container-like field outside pod templates (TrainJob's spec.trainer, the `node` container): its env
    and its resources (resourcesPerNode)."""
    P.env(r, c.get("env"), path + ("env",))
    for key in ("resources", "resourcesPerNode"):
        if key in c:
            P.resources(r, c.get(key), path + (key,))

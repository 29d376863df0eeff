"""JobSet `failurePolicy` rules are valid: names, actions, reasons, target jobs.

Checked in JobSets and in runtimes' `template.spec.failurePolicy`: a rule name
is 1-128 characters matching `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$` and
unique, read after the webhook's defaults (a rule without a name, or with an
empty one, is named `failurePolicyRule<index>` first, so an explicit
`failurePolicyRule1` beside an unnamed second rule repeats it; a runtime's
rule must have the field, which the schema checks, and its JobSet meets the
same webhook when Trainer creates it); `action` is one of the JobSet
release the target's Trainer ships (2.1: FailJobSet, RestartJobSet,
RestartJobSetAndIgnoreMaxRestarts; 2.3 adds RestartJob and
RestartJobAndIgnoreMaxRestarts, which JobSet v0.12.0's webhook refuses
while its alpha feature gate RestartJob is off, as it is by default; so is
`restartStrategy: InPlaceRestart` without the gate InPlaceRestart; the gates
are the cluster file's, `.kdt-cluster.yaml` `featureGates: {jobset: {RestartJob:
true}}`, which the live control plane's JobSet runs with too);
`onJobFailureReasons` are BackoffLimitExceeded, DeadlineExceeded,
FailedIndexes, MaxFailedIndexesExceeded or PodFailurePolicy;
`targetReplicatedJobs` exist.

Source: jobset v0.10.1 and v0.12.0 (the releases Trainer 2.1.0 and 2.3.0 ship)
pkg/webhooks/jobset_webhook.go validateFailurePolicy, validOnJobFailureReasons;
api/jobset/v1alpha2/jobset_types.go FailurePolicyAction (kdt.operators.jobset.facts.RELEASES).
"""
from ... import kinds as K
from ...findings import ERROR
from ...operators.jobset import facts as JS
from ._util import d, lst

ID = "jobset-failure-policy"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The JobSet webhook (and the CRD's enum) refuses the JobSet, or the runtime's JobSet when Trainer "
       "creates it.")


def _policies(docs):
    for doc in docs:
        if K.JOBSET.matches(doc):
            yield doc, ("spec",)
        elif K.of(doc) in K.RUNTIMES:
            yield doc, ("spec", "template", "spec")


def check(docs, ctx):
    actions = JS.failure_actions(ctx.trainer_version)
    release = JS.release_for_trainer(ctx.trainer_version)
    for doc, base in _policies(docs):
        fp = doc.get(base + ("failurePolicy",))
        if not isinstance(fp, dict):
            continue
        gates = (ctx.cluster.feature_gates.get("jobset") if ctx.cluster is not None else None) or None
        for path, message in JS.gate_rejections(d(doc.get(base)), release, gates):
            said = "off in the cluster file" if gates else "alpha, off by default: .kdt-cluster.yaml featureGates"
            yield doc.finding(ID, f"{message} (JobSet {release.name}: {said})", base + path)
        jobs = {d(j).get("name") for j in lst(doc.get(base + ("replicatedJobs",)))}
        rules = lst(fp.get("rules"))
        for i, message in JS.rule_name_rejections(rules):
            # the rule's name where it has one, else the rule (the webhook's default name is not in the file)
            at = ("name",) if isinstance(rules[i], dict) and "name" in rules[i] else ()
            yield doc.finding(ID, message, base + ("failurePolicy", "rules", i) + at)
        for i, rule in enumerate(rules):
            rule = d(rule)
            p = base + ("failurePolicy", "rules", i)
            if actions and "action" in rule and rule.get("action") not in actions:
                yield doc.finding(ID, f"action {rule.get('action')!r} is not one of {', '.join(actions)} "
                                      f"(the JobSet of Trainer {ctx.trainer_version})", p + ("action",))
            for k, reason in enumerate(lst(rule.get("onJobFailureReasons"))):
                if reason not in JS.FAILURE_REASONS:
                    yield doc.finding(ID, f"job failure reason {reason!r} is not one of {', '.join(JS.FAILURE_REASONS)}",
                                      p + ("onJobFailureReasons", k))
            for k, t in enumerate(lst(rule.get("targetReplicatedJobs"))):
                if t not in jobs:
                    yield doc.finding(ID, f"target replicated job {t!r} does not exist", p + ("targetReplicatedJobs", k))

"""JobSet `failurePolicy` rules are valid: names, actions, reasons, target jobs.

Checked in JobSets and in runtimes' `template.spec.failurePolicy`: a rule name
is 1-128 characters matching `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$` and
unique (a JobSet rule without a name is named by the webhook; a runtime's
must have one, which the schema checks); `action` is one of the JobSet
release the target's Trainer ships (2.1: FailJobSet, RestartJobSet,
RestartJobSetAndIgnoreMaxRestarts; 2.3 adds RestartJob and
RestartJobAndIgnoreMaxRestarts); `onJobFailureReasons` are
BackoffLimitExceeded, DeadlineExceeded, FailedIndexes,
MaxFailedIndexesExceeded or PodFailurePolicy; `targetReplicatedJobs` exist.

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
    for doc, base in _policies(docs):
        fp = doc.get(base + ("failurePolicy",))
        if not isinstance(fp, dict):
            continue
        jobs = {d(j).get("name") for j in lst(doc.get(base + ("replicatedJobs",)))}
        seen: dict[str, int] = {}
        for i, rule in enumerate(lst(fp.get("rules"))):
            rule = d(rule)
            p = base + ("failurePolicy", "rules", i)
            name = str(rule.get("name", ""))
            if "name" not in rule:
                pass   # JobSet: the webhook names it; runtime: a schema error already
            elif not (JS.RULE_NAME_MIN <= len(name) <= JS.RULE_NAME_MAX) or not JS.RULE_NAME.match(name):
                yield doc.finding(ID, f"rule name {name!r} must be 1-{JS.RULE_NAME_MAX} characters, start with a letter, "
                                      "use letters, digits, '_', ',' or ':' and end with a letter, digit or '_'", p + ("name",))
            elif name in seen:
                yield doc.finding(ID, f"rule name {name!r} repeats rule {seen[name]}: names must be unique", p + ("name",))
            seen.setdefault(name, i)
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

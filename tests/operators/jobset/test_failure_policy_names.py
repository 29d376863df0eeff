"""JobSet's failure-policy rule names as its webhook reads them (jobset v0.10.1 and v0.12.0
pkg/webhooks/jobset_webhook.go: Default names an unnamed rule `failurePolicyRule<i>`, then validateFailurePolicy
checks length, pattern and uniqueness), and the lint rule that reports them. Cases worked out by hand from those
functions; the live answers of both releases (Kubernetes v1.36.3) are in tests/live/test_live_judge.py."""
from __future__ import annotations

import pytest

from kdt.documents import load_stream
from kdt.lint import lint_documents
from kdt.operators.jobset import facts as JS
from kdt.validate import validate_documents

RULE = "jobset-failure-policy"

JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  failurePolicy:
    maxRestarts: 1
    rules:
%s  replicatedJobs:
    - name: w
      template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: "busybox:1"}]}}}}
"""


def _rules(*lines: str) -> str:
    return "".join(f"      - {ln}\n" for ln in lines)


def lint(text: str, trainer: str = "2.3") -> list:
    docs, problems = load_stream(text, "js.yaml")
    assert not problems
    return [(f.path, f.message) for f in lint_documents(docs, trainer_version=trainer) if f.rule == RULE]


def test_default_names_missing_empty_and_null_names_by_their_index():
    rules = [{"action": "FailJobSet"}, {"name": "", "action": "FailJobSet"}, {"name": None}, {"name": "kept"}, "x",
             {"name": 7}]
    assert JS.rule_names(rules) == ["failurePolicyRule0", "failurePolicyRule1", "failurePolicyRule2", "kept", None,
                                    None]


def test_unnamed_and_empty_names_are_accepted_at_both_releases():
    text = JOBSET % _rules("{action: FailJobSet, targetReplicatedJobs: [w]}", "{name: '', action: RestartJobSet}")
    for trainer in ("2.1", "2.3"):
        assert lint(text, trainer) == []
        docs, _ = load_stream(text, "js.yaml")
        assert [f for f in validate_documents(docs, trainer_version=trainer) if f.level == "error"] == []


def test_a_defaulted_name_can_repeat_an_explicit_one():
    text = JOBSET % _rules("{name: failurePolicyRule1, action: FailJobSet}", "{action: FailJobSet}")
    assert lint(text) == [("spec.failurePolicy.rules[1]", "rule names are not unique, rules with indices [0 1] all "
                                                          "have the same name 'failurePolicyRule1'")]
    three = JOBSET % _rules("{name: a, action: FailJobSet}", "{name: b, action: FailJobSet}",
                            "{name: a, action: FailJobSet}", "{name: a, action: RestartJobSet}")
    assert lint(three) == [("spec.failurePolicy.rules[2].name", "rule names are not unique, rules with indices "
                                                                "[0 2 3] all have the same name 'a'")]


@pytest.mark.parametrize("name,messages", [
    ("1bad-", ["invalid failure policy rule name '1bad-', a failure policy rule name must start with an alphabetic "
               "character, optionally followed by a string of alphanumeric characters or '_,:', and must end with "
               "an alphanumeric character or '_'"]),
    ("a" * 129, ["invalid failure policy rule name of length 129, the rule name must be at least 1 characters long "
                 "and at most 128 characters long"]),
    ("a" * 128, []),
    ("ok_name:x,1_", []),
])
def test_length_and_pattern_in_the_webhooks_words(name, messages):
    assert [m for _, m in JS.rule_name_rejections([{"name": name}])] == messages


def test_a_runtime_rule_is_read_as_the_jobset_trainer_creates_from_it():
    rt = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt, labels: {trainer.kubeflow.org/framework: torch}}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      failurePolicy:
        rules: [{name: failurePolicyRule1, action: FailJobSet}, {name: '', action: FailJobSet}]
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec: {template: {spec: {containers: [{name: node, image: "img:1"}]}}}
"""
    assert lint(rt) == [("spec.template.spec.failurePolicy.rules[1].name", "rule names are not unique, rules with "
                         "indices [0 1] all have the same name 'failurePolicyRule1'")]


def test_jobset_v0_12_refuses_gated_actions_and_strategies_while_their_gates_are_off():
    """v0.12.0 pkg/features/features.go: RestartJob and InPlaceRestart are alpha, off by default; the webhook
    (ValidateCreate, validateFailurePolicy) refuses what needs them, once per JobSet for the actions."""
    v12, v10 = JS.RELEASES["v0.12.0"], JS.RELEASES["v0.10.1"]
    spec = {"failurePolicy": {"restartStrategy": "InPlaceRestart",
                              "rules": [{"action": "RestartJobSet"}, {"action": "RestartJobAndIgnoreMaxRestarts"},
                                        {"action": "RestartJob"}]}}
    assert JS.gate_rejections(spec, v12) == [
        (("failurePolicy", "restartStrategy"),
         "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled"),
        (("failurePolicy", "rules", 1, "action"), "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy "
                                                  "actions are not allowed when RestartJob feature gate is disabled")]
    assert JS.gate_rejections(spec, v12, {"RestartJob": True, "InPlaceRestart": True}) == []
    assert JS.gate_rejections(spec, v10) == []       # neither exists there: the CRD's enums refuse them
    text = JOBSET % _rules("{name: a, action: RestartJob}")
    assert lint(text) == [("spec.failurePolicy.rules[0].action", "RestartJob and RestartJobAndIgnoreMaxRestarts "
                           "failure policy actions are not allowed when RestartJob feature gate is disabled (JobSet "
                           "v0.12.0: alpha, off by default: .kdt-cluster.yaml featureGates)")]
    assert [m for _, m in lint(text, "2.1")] == ["action 'RestartJob' is not one of FailJobSet, RestartJobSet, "
                                                 "RestartJobSetAndIgnoreMaxRestarts (the JobSet of Trainer 2.1)"]

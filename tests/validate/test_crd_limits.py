"""The value limits of the Trainer CRDs (minimum, maxLength, maxItems, ...), which the API server enforces on a
TrainJob and a runtime as it does their CEL rules (kdt.schemas.crd_rules LIMITS, extracted per release)."""
from kdt.documents import load_stream
from kdt.schemas import crd_rules
from kdt.validate import validate_documents


def _trainjob(spec: str):
    docs, findings = load_stream("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                                 "metadata: {name: tj, namespace: ns}\nspec: {runtimeRef: {name: rt}" + spec + "}\n", "t.yaml")
    assert findings == []
    return docs


def _patch_grace(value) -> str:
    return (", runtimePatches: [{manager: a.io/m, trainingRuntimeSpec: {template: {spec: {replicatedJobs: [{name: node, "
            "template: {spec: {template: {spec: {terminationGracePeriodSeconds: %s}}}}}]}}}}]" % value)


def test_a_negative_grace_period_in_a_runtime_patch_is_refused():
    """trainjob_types.go PodSpecPatch.TerminationGracePeriodSeconds +kubebuilder:validation:Minimum=0 (v2.3.0): the
    patch's pod spec is Trainer's type, not a Pod's (Kubernetes itself takes a negative pod grace period and
    makes it 1), so the CRD's minimum is the check."""
    [f] = validate_documents(_trainjob(_patch_grace(-1)), trainer_version="2.3")
    assert (f.rule, f.level) == ("schema", "error")
    assert f.path.endswith("template.spec.template.spec.terminationGracePeriodSeconds") and "greater than or equal to 0" in f.message
    assert validate_documents(_trainjob(_patch_grace(0)), trainer_version="2.3") == []


def test_command_and_args_items_over_max_length_and_counts():
    long = "a" * (1048576 + 1)
    for key in ("command", "args"):
        [f] = validate_documents(_trainjob(f', trainer: {{{key}: ["{long}"]}}'), trainer_version="2.3")
        assert f.path == f"spec.trainer.{key}[0]" and "Too long: may not be more than 1048576" in f.message
        assert validate_documents(_trainjob(f', trainer: {{{key}: ["{long[1:]}"]}}'), trainer_version="2.3") == []
    [f] = validate_documents(_trainjob(", trainer: {command: [%s]}" % ", ".join(["x"] * 129)), trainer_version="2.3")
    assert f.path == "spec.trainer.command" and "at most 128" in f.message


def test_limits_are_extracted_outside_a_runtimes_job_template_only():
    rules = crd_rules.rules_for("2.3", "trainer.kubeflow.org/v1alpha1", "TrainJob")
    limits = {(".".join(r["path"]), r["limit"]): r["value"] for r in rules if "limit" in r}
    assert limits[("spec.trainer.command.*", "maxLength")] == 1048576
    assert limits[("spec.runtimePatches.*.trainingRuntimeSpec.template.spec.replicatedJobs.*.template.spec.template"
                   ".spec.terminationGracePeriodSeconds", "minimum")] == 0
    runtime = crd_rules.rules_for("2.3", "trainer.kubeflow.org/v1alpha1", "TrainingRuntime")
    inside = [r["path"] for r in runtime if "limit" in r and "replicatedJobs" in r["path"]]
    assert inside and all("template" not in p[p.index("replicatedJobs"):] for p in inside)   # dependsOn: JobSet's
    assert crd_rules._limit_broken("maxItems", 2, [1, 2]) == "" and crd_rules._limit_broken("maxItems", 2, [1, 2, 3])

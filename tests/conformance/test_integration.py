"""The merge preview against Trainer's integration tests (kubeflow/trainer test/integration/controller/
trainjob_controller_test.go at v2.1.0 and v2.3.0), restated under tests/conformance/integration: every fact of
every restated case holds; bench/trainer_integration.py prints the figures and lists every upstream spec."""
import copy
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "bench"))
from conformance import fixtures, run  # noqa: E402

FIXTURES = fixtures(HERE / "integration")
CASES = [c for f in FIXTURES for c in f.cases]


def test_both_releases_are_restated():
    assert {f.source["tag"] for f in FIXTURES} == {"v2.1.0", "v2.3.0"}
    assert all(f.source["file"] == "test/integration/controller/trainjob_controller_test.go" for f in FIXTURES)
    for f in FIXTURES:
        assert all(lo.get("reason") for lo in f.left_out)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_integration_case_agrees(case):
    assert [(fact, got) for fact, ok, got in run(case) if not ok] == []


def test_a_wrong_fact_fails_and_the_listing_parses_ginkgo_specs():
    import trainer_integration as TI
    case = copy.deepcopy(next(c for c in CASES if "RuntimePatches" in c.case or "PodTemplateOverrides" in c.case))
    # the env order of the integration tests, swapped: the preview must disagree
    for fact in case.facts:
        if fact[1].endswith("initContainers[override-init-container].env"):
            fact[2] = [fact[2][0], fact[2][2], fact[2][1]]
    assert [ok for _, ok, _ in run(case)].count(False) == 1
    text = ('var _ = ginkgo.Describe("X", func() {\n\tginkgo.Context("Ctx", func() {\n'
            '\t\tginkgo.It("does a", func() {})\n\t\tginkgo.It("does b", func() {})\n')
    assert TI.upstream_specs(text) == [("Ctx", "does a"), ("Ctx", "does b")]


def test_the_bench_agrees_on_every_case():
    import trainer_integration as TI
    assert TI.main(["--brief"]) == 0

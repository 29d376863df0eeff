"""The merge preview against the operators' own unit tests, restated as manifests (tests/conformance/fixtures).

Every case of every fixture runs through kdt.merge_preview in process and every fact it states must hold;
bench/merge_conformance.py prints the figures per operator and release and checks that every upstream
case is either here or left out with a reason.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conformance import Case, fixtures, get, parse_path, run, same  # noqa: E402

FIXTURES = fixtures()
CASES = [c for f in FIXTURES for c in f.cases]


def test_every_area_has_fixtures():
    """Each upstream area the issue names has a fixture: Trainer core, plugins and webhooks at both
    releases, the Training Operator's controller and webhook, JobSet's job construction at both releases."""
    have = {(f.source["repository"], f.source["tag"], f.source["file"].rsplit("/", 1)[0]) for f in FIXTURES}
    for tag in ("v2.1.0", "v2.3.0"):
        for area in ("pkg/runtime/core", "pkg/runtime/framework/plugins/torch", "pkg/runtime/framework/plugins/jobset",
                     "pkg/runtime/framework/plugins/coscheduling", "pkg/runtime/framework/plugins/volcano",
                     "pkg/runtime/framework/plugins/plainml", "pkg/webhooks"):
            assert ("kubeflow/trainer", tag, area) in have, (tag, area)
    for area in ("pkg/controller.v1/pytorch", "pkg/webhooks/pytorch"):
        assert ("kubeflow/trainer", "v1.9.4", area) in have, area
    for tag in ("v0.10.1", "v0.12.0"):
        assert ("kubernetes-sigs/jobset", tag, "pkg/controllers") in have, tag


def test_case_names_are_unique_and_cited():
    seen = set()
    for f in FIXTURES:
        assert set(f.source) >= {"repository", "tag", "file"}, f.path
        for c in f.cases:
            assert c.id not in seen, c.id
            seen.add(c.id)
            assert c.fact_count, f"{c.id}: no fact"
        for lo in f.left_out:
            assert lo.get("reason"), (f.path, lo)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_agrees_with_upstream(case: Case):
    wrong = [(fact, got) for fact, ok, got in run(case) if not ok]
    assert wrong == []


def test_the_fact_checker_can_fail():
    """A fact the preview does not give fails: a wrong value, a missing object, an absent key."""
    obj = {"spec": {"containers": [{"name": "node", "env": [{"name": "A", "value": "1"}]}]}}
    assert parse_path('spec.containers[node].env[A].value') == ["spec", "containers", ("name", "node"), "env",
                                                                 ("name", "A"), "value"]
    assert same(get(obj, "spec.containers[node].env[A].value"), "1")
    assert not same(get(obj, "spec.containers[node].env[A].value"), 1)
    assert not same(get(obj, "spec.containers[node].env[B].value"), "1")
    assert same(get(obj, "spec.containers[0].ports"), {"absent": True})
    assert same({"cpu": "500m"}["cpu"], {"quantity": "0.5"})
    bad = Case("x", {"tag": "t", "file": "f"}, "T", "c",
               manifests=[{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"},
                           "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
                               "containers": [{"name": "pytorch", "image": "i"}]}}}}}}],
               facts=[["Pod/j-worker-0", "spec.containers[pytorch].env[PET_NNODES].value", "2"],
                      ["Pod/j-worker-9", "metadata.name", "j-worker-9"], ["count", "Pod", 1]],
               rejected=[])
    assert [ok for _, ok, _ in run(bad)] == [False, False, True]

"""The official CRDs' enums, formats and CEL rules are enforced; webhook defaults are not errors (#13)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kdt.documents import load_stream
from kdt.validate import validate_documents

ROOT = Path(__file__).resolve().parents[2]
# The workplace's shared corpus: beside this checkout, or beside a folder above it (a worktree under wt/).
CORPUS = next((p / "shared" / "corpus" / "kubeflow" for p in ROOT.parents
               if (p / "shared" / "corpus" / "kubeflow").is_dir()), ROOT.parent / "shared" / "corpus" / "kubeflow")

JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  failurePolicy:
    maxRestarts: 3
    rules:
    - action: RestartJob
    - action: Bogus
  replicatedJobs:
  - name: w
    template:
      spec:
        template:
          spec:
            containers: [{name: c, image: x}]
"""


def _findings(text: str, trainer: str):
    docs, problems = load_stream(text, "t.yaml")
    assert problems == []
    return [(f.line, f.col, f.path, f.message) for f in validate_documents(docs, trainer_version=trainer)]


def test_jobset_actions_follow_the_release_and_unnamed_rules_are_defaulted():
    got23 = _findings(JOBSET, "2.3")
    assert len(got23) == 1 and got23[0][:3] == (9, 15, "spec.failurePolicy.rules[1].action")
    assert '"Bogus" is not one of' in got23[0][3] and '"RestartJobAndIgnoreMaxRestarts"' in got23[0][3]
    got21 = _findings(JOBSET, "2.1")   # RestartJob came with the JobSet of Trainer 2.3
    assert [f[2] for f in got21] == ["spec.failurePolicy.rules[0].action", "spec.failurePolicy.rules[1].action"]
    # No "missing required field 'name'": the JobSet webhook names the rules.
    assert not any("name" in f[3] for f in got21 + got23)


def test_a_runtime_rule_needs_its_name_no_webhook_names_it_there():
    rt = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata: {name: rt}\nspec:\n"
          "  template:\n    spec:\n      failurePolicy:\n        rules:\n        - action: FailJobSet\n"
          "      replicatedJobs: []\n")
    assert [f[3] for f in _findings(rt, "2.3")] == ["missing required field 'name'"]


@pytest.mark.parametrize("trainer,message", [
    ("2.3", "Only one of the policy can be configured (CEL rule `[has(self.torch), has(self.mpi)"),
    ("2.1", "Only one of the policy can be configured (CEL rule `!(has(self.torch) && has(self.mpi))`)"),
])
def test_cel_rules_with_the_crds_own_message(trainer, message):
    rt = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata: {name: rt}\nspec:\n"
          "  mlPolicy:\n    numNodes: 2\n    torch: {}\n    mpi: {}\n  template:\n    spec:\n      replicatedJobs: []\n")
    (f,) = _findings(rt, trainer)
    assert f[:3] == (6, 5, "spec.mlPolicy") and f[3].startswith(message)


def test_trainjob_name_and_managed_by_rules():
    tj = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: Bad_Name}\nspec:\n"
          "  runtimeRef: {name: torch-distributed}\n  managedBy: me\n")
    got = sorted(_findings(tj, "2.3"))
    # The CRD's CEL rule, and the API server's own check of a custom resource's name (a DNS-1123 subdomain).
    assert [(f[0], f[2]) for f in got] == [(1, ""), (3, "metadata.name"), (6, "spec.managedBy")]
    assert got[0][3].startswith("metadata.name must match RFC 1035 DNS label format")
    ok = tj.replace("Bad_Name", "good-name").replace("managedBy: me", "managedBy: kueue.x-k8s.io/multikueue")
    assert _findings(ok, "2.3") == []


def test_numproc_21_cel_rule_refuses_words_it_does_not_know():
    rt = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata: {name: rt}\nspec:\n"
          "  mlPolicy:\n    torch: {numProcPerNode: %s}\n  template:\n    spec:\n      replicatedJobs: []\n")
    assert _findings(rt % "auto", "2.1") == [] and _findings(rt % "4", "2.1") == []
    (f,) = _findings(rt % "many", "2.1")
    assert f[2] == "spec.mlPolicy.torch.numProcPerNode" and f[3].startswith("NumProcPerNode must be equal to auto")


needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not beside the repository ({CORPUS})")


@needs_corpus
@pytest.mark.parametrize("release", ["2.1", "2.3"])
def test_committed_rules_are_what_the_official_crds_say(release):
    proc = subprocess.run([sys.executable, "-m", "kdt.schemas.crd_rules", "--check",
                           "--crds", str(CORPUS / "crds" / f"trainer-v{release}.0"), "--trainer", release],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads((ROOT / f"src/kdt/schemas/crd-rules/crd-rules-{release}.json").read_text())
    assert payload["kinds"]["jobset.x-k8s.io/v1alpha2"]["JobSet"], "JobSet rules come from the runtimes' embedded spec"


@needs_corpus
@pytest.mark.parametrize("folder,release", [("trainer-v2.1.0", "2.1"), ("trainer-v2.3.0", "2.3"),
                                            ("training-operator-v1.8.1", "2.3"), ("training-operator-v1.9.4", "2.3")])
def test_every_upstream_manifest_is_valid_for_its_release(validate_cli, folder, release):
    files = sorted(p for p in (CORPUS / folder).rglob("*.yaml") if p.name != "kustomization.yaml")
    code, out, err = validate_cli("--trainer-version", release, *files)
    assert (code, err) == (0, ""), out


def test_a_cel_verdict_on_the_projected_value_is_the_verdict_on_the_whole():
    """The cache key is the part of the value a rule reads; the verdict must not depend on the rest."""
    from kdt.schemas import crd_rules as R
    values = {
        "spec.mlPolicy": [{"numNodes": 2, "torch": {"numProcPerNode": 4}}, {"torch": {}, "mpi": {"x": 1}},
                          {"jax": {}}, {}],
        "spec.template.spec": [
            {"startupPolicy": {"startupPolicyOrder": "InOrder"}, "replicatedJobs": [{"name": "a"}, {"name": "b", "dependsOn": [{"name": "a"}]}]},
            {"startupPolicy": {"startupPolicyOrder": "AnyOrder"}, "replicatedJobs": [{"name": "b", "dependsOn": []}]},
            {"startupPolicy": {"startupPolicyOrder": "InOrder"}, "replicatedJobs": [{"name": "a", "template": {"x": 1}}]}],
        "": [{"metadata": {"name": "ok-name", "labels": {"a": "b"}}, "spec": {}}, {"metadata": {"name": "Bad"}}],
    }
    checked = 0
    for release in ("2.1", "2.3"):
        for ks in R.load(release)["kinds"].values():
            for rules in ks.values():
                for r in rules:
                    if "cel" not in r:
                        continue
                    path = ".".join(p for p in r["path"] if p != "*")
                    for v in values.get(path, []):
                        chains = R._chains(r["cel"])
                        whole = R._program(r["cel"]).execute({"self": v})
                        assert R._program(r["cel"]).execute({"self": R._project(v, chains)}) == whole, (r["cel"], v)
                        checked += 1
    assert checked >= 20

"""Checks in other people's repositories (#27): the run's CRDs are schemas, the Training Operator per release,
the schedulers' committed CRDs, the Trainer release a repository pins or its objects' shape, each real folder
walked once. Fixtures are scratch repositories written here, in tmp_path."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kdt import kinds as K
from kdt import targets as T
from kdt import trainer_release as TR
from kdt.documents import load_stream
from kdt.schemas import crd_sets
from kdt.schemas.crds import RunCrds
from kdt.validate import validate_documents

ROOT = Path(__file__).resolve().parents[2]

# A CRD of a made-up operator: a default, a CEL rule that reads the defaulted field, one that needs a function
# of the API server's CEL libraries this engine lacks, an int32 field.
WIDGET_CRD = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.example.com}
    spec:
      group: example.com
      names: {kind: Widget, plural: widgets}
      scope: Namespaced
      versions:
      - name: v1
        served: true
        storage: true
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec:
                type: object
                required: [size, mode]
                x-kubernetes-validations:
                - rule: "self.mode == 'fast' ? self.size <= 10 : true"
                  message: a fast widget is at most 10
                - rule: "quantity(self.memory).isGreaterThan(quantity('1Gi'))"
                  message: needs the API server's quantity library
                properties:
                  size: {type: integer, format: int32}
                  mode: {type: string, default: fast, enum: [fast, slow]}
                  memory: {type: string}
    """)


def _docs(text: str, name: str = "t.yaml"):
    docs, problems = load_stream(text, name)
    assert problems == []
    return docs


def _widget(spec: str) -> str:
    return f"apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w}}\nspec: {spec}\n"


def test_a_crd_of_the_run_is_a_schema_with_its_defaults_and_cel_rules():
    found = RunCrds(_docs(WIDGET_CRD, "crd.yaml"))
    assert found.found == ["Widget (example.com v1) from crd.yaml"]

    def check(spec):
        return [(f.path, f.message) for f in validate_documents(_docs(_widget(spec)), found=found)]
    # mode is required but has a default: the API server fills it before validating (and before CEL runs).
    assert check("{size: 5, memory: 2Gi}") == []
    # The CEL rule reads the defaulted mode (fast): 11 breaks it, with the CRD's own message.
    got = check("{size: 11, memory: 2Gi}")
    assert got == [("spec", "a fast widget is at most 10 (CEL rule `self.mode == 'fast' ? self.size <= 10 : true`)")]
    assert check("{size: 11, mode: slow, memory: 2Gi}") == []
    # Structure, enums and int32 come from the same CRD; a rule needing `quantity()` is never reported.
    assert [p for p, _ in check("{size: 1, mode: slow, colour: red}")] == ["spec.colour"]
    assert [m for _, m in check("{size: 1, mode: medium}")] == ['"medium" is not one of: "fast", "slow"']
    assert [m for _, m in check("{size: 4294967296, mode: slow}")] == ["4294967296 is out of the int32 range"]


def test_without_the_crd_the_kind_is_unknown_and_two_crds_of_one_kind_both_count():
    doc = _docs(_widget("{size: 1, extra: true}"))
    (missing,) = validate_documents(doc)
    assert missing.path == "kind" and "no schema for kind Widget" in missing.message
    # A second CRD of the kind that has `extra`: the document fits one of them, so it is valid.
    wider = WIDGET_CRD.replace("memory: {type: string}", "memory: {type: string}\n              extra: {type: boolean}")
    assert validate_documents(doc, found=RunCrds(_docs(WIDGET_CRD + "---\n" + wider))) == []
    # The same CRD met twice (a base rendered by two overlays) counts once.
    assert len(RunCrds(_docs(WIDGET_CRD + "---\n" + WIDGET_CRD)).pools) == 1


def test_a_crd_whose_schema_cannot_compile_gives_no_schema_instead_of_a_crash():
    broken = WIDGET_CRD.replace("memory: {type: string}", "memory: {type: string, pattern: '(?<=x)y['}")
    (f,) = validate_documents(_docs(_widget("{size: 1}")), found=RunCrds(_docs(broken, "crd.yaml")))
    assert (f.level, f.path) == ("warning", "kind")
    assert f.message == ("no usable schema for kind Widget (example.com/v1): the schema of CRD widgets.example.com "
                         "(crd.yaml) cannot be compiled here, so this object is not checked")


TRAINING_JOB = """\
apiVersion: kubeflow.org/v1
kind: {kind}
metadata: {{name: j}}
spec:
  {field}:
    Worker:
      replicas: 1
      template: {{spec: {{containers: [{{name: c, image: i}}]}}}}
"""


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob", "MPIJob", "PaddleJob", "XGBoostJob", "JAXJob"])
def test_every_training_operator_kind_is_checked_per_release(kind):
    field = K.lookup("kubeflow.org", kind).replica_specs
    doc = _docs(TRAINING_JOB.format(kind=kind, field=field))
    assert validate_documents(doc, training_operator="1.9") == []
    got = validate_documents(doc, training_operator="1.8")
    if kind == "JAXJob":      # JAXJob came with 1.9 (manifests/base/crds at v1.9.4; not at v1.8.1)
        assert len(got) == 1 and "no schema for kind JAXJob" in got[0].message and "v1.8.1" in got[0].message
    else:
        assert got == []
    # Its pod templates are checked against the Kubernetes schemas: an unknown container field is an error.
    bad = _docs(TRAINING_JOB.format(kind=kind, field=field).replace("image: i", "image: i, imag: j"))
    assert [f.path for f in validate_documents(bad)] == [f"spec.{field}.Worker.template.spec.containers[0].imag"]


def test_managed_by_is_a_1_9_field_and_the_mpi_operators_mpijob_is_another_kind():
    job = _docs(TRAINING_JOB.format(kind="PyTorchJob", field="pytorchReplicaSpecs")
                + "  runPolicy: {managedBy: kubeflow.org/training-operator}\n")
    assert validate_documents(job, training_operator="1.9") == []
    assert [f.message for f in validate_documents(job, training_operator="1.8")] == ["unknown field 'managedBy'"]
    (f,) = validate_documents(_docs("apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {name: m}\nspec: {}\n"))
    assert "no schema for kind MPIJob" in f.message and "MPI Operator" in f.message and "not served" not in f.message


SCHEDULING = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  flavorFungibility: {preference: BorrowingOverPreemption}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: gpu
      resources: [{name: nvidia.com/gpu, nominalQuota: 512}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: t}
spec:
  levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: rack}]
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg}
spec: {minMember: 2, minMembers: 2}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: pg}
spec: {minMember: 2, scheduleTimeoutSeconds: 60}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vj}
spec:
  tasks:
  - name: worker
    replicas: 2
    template: {spec: {containers: [{name: c, image: i, bogus: 1}]}}
"""


def test_the_schedulers_kinds_have_their_releases_schemas_defaults_and_cel_rules():
    got = [(f.kind, f.path, f.message) for f in validate_documents(_docs(SCHEDULING))]
    assert got[0][:2] == ("ClusterQueue", "spec.flavorFungibility")    # whenCanBorrow defaults to MayStopSearch
    assert "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor" in got[0][2]
    assert got[1][:2] == ("Topology", "spec.levels") and "lowest level" in got[1][2]
    assert got[2] == ("PodGroup", "spec.minMembers", "unknown field 'minMembers' (did you mean 'minMember'?)")
    assert got[3] == ("Job", "spec.tasks[0].template.spec.containers[0].bogus", "unknown field 'bogus'")
    assert len(got) == 4        # the coscheduling PodGroup is valid
    fixed = SCHEDULING.replace("{preference: BorrowingOverPreemption}",
                               "{preference: BorrowingOverPreemption, whenCanBorrow: TryNextFlavor}")
    assert not any(f.kind == "ClusterQueue" for f in validate_documents(_docs(fixed)))


def test_every_kind_of_the_committed_crd_sets_is_registered_with_its_scope():
    """The registry (kdt.kinds.scheduling, training_operator_v1) and the committed CRDs agree: every kind of a
    set is registered, its versions served and its scope, and lint reads a Volcano Job's pod templates."""
    for name in crd_sets.SETS:
        payload = json.loads(crd_sets.output_path(name).read_text())
        for crd in payload["crds"]:
            spec = crd["spec"]
            kind = K.lookup(spec["group"], spec["names"]["kind"])
            if kind is None and spec["names"]["kind"] == "MXJob":
                continue        # the Training Operator 1.8's MXJob: validated, not modelled
            assert kind is not None, f"{spec['group']}/{spec['names']['kind']} of {name} is not registered"
            assert kind.namespaced == (spec["scope"] == "Namespaced"), kind
            assert set(kind.versions) <= {v["name"] for v in spec["versions"]}, kind
    (job,) = _docs(SCHEDULING.split("---\n")[-1])
    assert [(pt.role, pt.replicas) for pt in K.pod_templates(job)] == [("worker", 2)]


def _corpus() -> Path | None:
    for base in (ROOT.parent, ROOT.parent.parent):     # beside the checkout, or beside wt/ for a worktree
        if (base / "shared" / "corpus" / "scheduling").is_dir():
            return base / "shared" / "corpus"
    return None


def _training_operator_crds(tag: str) -> Path | None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import repos
        folder = repos.checkout("kubeflow/trainer", tag)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return folder / "manifests" / "base" / "crds" if folder is not None else None


@pytest.mark.parametrize("name", sorted(crd_sets.SETS))
def test_regenerating_a_committed_crd_set_changes_nothing(name):
    if name.startswith("training-operator-"):
        folder = _training_operator_crds(name.removeprefix("training-operator-"))
        if folder is None:
            pytest.skip("kubeflow/trainer is not fetched (bench/repos.py: fetch github:kubeflow/trainer)")
    else:
        corpus = _corpus()
        if corpus is None:
            pytest.skip("the shared corpus (shared/corpus/scheduling) is not beside the checkout")
        folder = corpus / "scheduling" / name / "crds"
    assert crd_sets.generate(name, folder) == crd_sets.output_path(name).read_text(), \
        f"regenerate: python -m kdt.schemas.crd_sets --set {name} --crds {folder}"


# ------------------------------------------------------------------ the Trainer release of a repository
TRAINJOB_21 = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t}\nspec:\n"
               "  runtimeRef: {name: torch-distributed}\n  podTemplateOverrides: []\n")
TRAINJOB_23 = TRAINJOB_21.replace("podTemplateOverrides", "runtimePatches")
TRAINJOB_ANY = TRAINJOB_21.replace("  podTemplateOverrides: []\n", "")


@pytest.mark.parametrize("files,release,evidence", [
    ({"docs/install.md": "```sh\nexport VERSION=v2.1.0\nkubectl apply --server-side -k "
                         "\"https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=${VERSION}\"\n```\n"},
     "2.1", "an install step, Trainer 2.1.0, docs/install.md:3: kubectl apply --server-side -k "
            "\"https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=v2.1.0\""),
    ({"install.sh": "helm install kubeflow-trainer oci://ghcr.io/kubeflow/charts/kubeflow-trainer \\\n"
                    "  --version 2.2.1\n"},
     "2.3", "an install step, Trainer 2.2.1, install.sh:1"),
    ({"cluster/kustomization.yaml": "resources:\n- github.com/kubeflow/trainer//manifests/overlays/manager?ref=v2.3.0\n",
      "README.md": "kubectl apply -k github.com/kubeflow/trainer/manifests/overlays/manager?ref=v2.1.0\n"},
     "2.3", "a remote kustomize ref, Trainer 2.3.0, cluster/kustomization.yaml:2"),
    ({"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\ndependencies:\n"
                          "- {name: kubeflow-trainer, version: 2.1.0, repository: oci://ghcr.io/kubeflow/charts}\n"},
     "2.1", "a Helm dependency, Trainer 2.1.0, chart/Chart.yaml: dependency kubeflow-trainer 2.1.0"),
    ({"docs/a.md": "kubectl apply -k github.com/kubeflow/trainer/manifests/overlays/manager?ref=v2.1.0\n",
      "docs/b.md": "kubectl apply -k github.com/kubeflow/trainer/manifests/overlays/manager?ref=v2.3.0\n"},
     None, None),                       # pins that disagree pin nothing
    ({"docs/v1.md": "kubectl apply -k github.com/kubeflow/training-operator/manifests/overlays/standalone?ref=v1.8.1\n"},
     None, None),                       # a Training Operator ref is no Trainer pin
    ({"docs/prose.md": "Kustomize can read a remote base such as github.com/kubeflow/trainer//manifests?ref=v2.1.0.\n"},
     None, None),                       # prose naming a ref is no install step
])
def test_the_trainer_release_a_repository_pins(tmp_path, files, release, evidence):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    pin = TR.repository_pin(tmp_path)
    if release is None:
        assert pin is None
    else:
        assert (pin.release, pin.how) == (release, "pinned") and pin.evidence.startswith(evidence), pin


def test_a_trainer_crd_in_the_tree_pins_its_release_first(tmp_path):
    crd = ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: trainjobs.trainer.kubeflow.org}\n"
           "spec:\n  group: trainer.kubeflow.org\n  names: {kind: TrainJob, plural: trainjobs}\n  scope: Namespaced\n"
           "  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n"
           "        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n"
           + "".join(f"              {f}: {{type: object}}\n" for f in
                     ("activeDeadlineSeconds", "initializer", "managedBy", "runtimePatches", "runtimeRef", "suspend", "trainer")))
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "trainjobs.yaml").write_text(crd)
    (tmp_path / "README.md").write_text("kubectl apply -k github.com/kubeflow/trainer/manifests/overlays/manager?ref=v2.1.0\n")
    pin = TR.repository_pin(tmp_path)
    assert pin.release == "2.3" and pin.evidence.startswith("a Trainer CRD in the tree")


@pytest.mark.parametrize("text,release", [(TRAINJOB_21, "2.1"), (TRAINJOB_23, "2.3"), (TRAINJOB_ANY, None),
                                          (TRAINJOB_21 + "---\n" + TRAINJOB_23.replace("name: t", "name: u"), None)])
def test_without_a_pin_the_shape_of_the_trainer_objects_decides(text, release):
    got = TR.fitting_release(_docs(text))
    if release is None:
        assert got is None          # fits both releases, or its objects disagree: the default applies
    else:
        assert got.release == release and "fits Trainer" in got.evidence and f"fits Trainer {release} only" in got.evidence


def _kdt(command: str, cwd: Path, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "KDT_ROOT": str(cwd)}
    proc = subprocess.run([sys.executable, "-m", "kdt", command, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_new_user_validating_a_whole_repository(tmp_path):
    """One scratch repository: a pinned Trainer 2.1, a CRD and its objects, a folder reached twice by a link."""
    (tmp_path / "README.md").write_text("export VERSION=v2.1.0\nkubectl apply --server-side -k "
                                        "\"https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=${VERSION}\"\n")
    (tmp_path / "config" / "crd").mkdir(parents=True)
    (tmp_path / "config" / "crd" / "widgets.yaml").write_text(WIDGET_CRD)
    (tmp_path / "site" / "examples").mkdir(parents=True)
    (tmp_path / "site" / "examples" / "widget.yaml").write_text(_widget("{size: 11, memory: 2Gi}"))
    (tmp_path / "site" / "examples" / "trainjob.yaml").write_text(TRAINJOB_21)
    (tmp_path / "examples").symlink_to("site/examples")
    code, out, err = _kdt("validate", tmp_path)
    assert (code, err) == (1, ""), out
    lines = out.splitlines()
    # The CRD gave its kind a schema; the finding is reported once (the link does not walk the folder again).
    assert [x for x in lines if " error " in x] == [
        "site/examples/widget.yaml:4:7: error [schema] Widget/w spec: a fast widget is at most 10 "
        "(CEL rule `self.mode == 'fast' ? self.size <= 10 : true`) (doc 0)"]
    # The 2.1 TrainJob is no error: the repository pins 2.1, and the output says so with the evidence.
    assert "note: Trainer 2.1 (pinned by the repository: an install step, Trainer 2.1.0, README.md:2: kubectl apply " \
           "--server-side -k \"https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=v2.1.0\"; " \
           "--trainer-version overrides)" in lines
    assert "note: 1 CustomResourceDefinition(s) of this run give schemas to their kinds:" in lines
    assert "      Widget (example.com v1) from config/crd/widgets.yaml" in lines
    # Overridden: checked as 2.3, the 2.1 field is an error; and the json report carries the notes.
    code, out, _ = _kdt("validate", tmp_path, "--trainer-version", "2.3", "-o", "json")
    report = json.loads(out)
    assert code == 1 and any(f["path"] == "spec.podTemplateOverrides" for f in report["findings"])
    assert report["notes"][0].startswith("1 CustomResourceDefinition(s)")


def test_each_real_folder_is_walked_once_whatever_links_point_at_it(tmp_path):
    (tmp_path / "site" / "static" / "examples" / "a").mkdir(parents=True)
    (tmp_path / "site" / "static" / "examples" / "a" / "x.yaml").write_text("kind: ConfigMap\n")
    (tmp_path / "examples").symlink_to("site/static/examples")          # a link to a folder of the tree
    (tmp_path / "again.yaml").symlink_to("site/static/examples/a/x.yaml")   # a link to a file of the tree
    (tmp_path / "loop").symlink_to(".")                                 # a link to the tree itself
    (tmp_path / "dangling").symlink_to("nowhere")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "y.yaml").write_text("kind: ConfigMap\n")
    (tmp_path / "shared").symlink_to(outside)                           # a link out of the tree: walked once
    got = [t.path for t in T._walk(tmp_path)]
    assert sorted(p.resolve() for p in got) == sorted([(outside / "y.yaml").resolve(),
                                                       (tmp_path / "site/static/examples/a/x.yaml").resolve()])
    assert tmp_path / "site/static/examples/a/x.yaml" in got      # the real path, not a link's


JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  volumeClaimPolicies:
  - templates:
    - metadata: {name: checkpoints}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  replicatedJobs:
  - name: w
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: c
              image: i
              restartPolicy: Never
              volumeMounts: [{name: checkpoints, mountPath: /ckpt}, {name: other, mountPath: /o}]
"""


def test_what_jobsets_own_examples_use_is_no_api_error():
    """Found by bench/repos_real.py on kubernetes-sigs/jobset v0.12.0's examples: the volumes the JobSet
    controller adds for volumeClaimPolicies (pkg/controllers/volume_claim_policy.go addVolumes) need no volume
    of their own, and a regular container's restartPolicy is allowed from Kubernetes 1.34 (ContainerRestartRules;
    dropped, not refused, where the gate is off: pkg/api/pod/util.go dropContainerRestartRules)."""
    docs = _docs(JOBSET)
    prefix = "spec.replicatedJobs[0].template.spec.template.spec.containers[0]"
    got = [(f.path, f.message) for f in validate_documents(docs, kubernetes_version="1.35")]
    assert got == [(f"{prefix}.volumeMounts[1].name", 'Not found: "other": no volume of the pod has this name')]
    got = [f.path for f in validate_documents(docs, kubernetes_version="1.33")]
    assert sorted(got) == [f"{prefix}.restartPolicy", f"{prefix}.volumeMounts[1].name"]

"""The judge's admission step (kdt.live.admission) on a recording stand-in for kubectl: which documents go
to which kubectl call, with which flags, in which order, and what is applied for real or deleted.

The stand-in answers as kubectl v1.37.1 and the API server answered the live judge (kubectl's `-o name`
lines, `Error from server ...` on stderr, exit 1 when one object is refused); the only refusals it models
are those these cases turn on, each with the real component's words: Trainer v2.3.0's TrainJob webhook
(pkg/runtime/core/clustertrainingruntime.go: the runtime must exist), server-side apply's field ownership
conflict (a second manager applying a field another set), kubectl's refusal of generateName in apply
(k8s.io/kubectl pkg/cmd/apply/apply.go "cannot use generate name with apply").
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

from kdt import targets as T
from kdt.documents import load_stream
from kdt.live import admission as A
from kdt.live import install
from kdt.live.judge import Result, judge

RESOURCES = [  # api-resources: (apiVersion, namespaced, kind)
    ("v1", "true", "ConfigMap"), ("v1", "false", "Namespace"), ("v1", "true", "ServiceAccount"),
    ("batch/v1", "true", "Job"), ("scheduling.k8s.io/v1", "false", "PriorityClass"),
    ("admissionregistration.k8s.io/v1", "false", "ValidatingWebhookConfiguration"),
    ("apiextensions.k8s.io/v1", "false", "CustomResourceDefinition"),
    ("trainer.kubeflow.org/v1alpha1", "false", "ClusterTrainingRuntime"),
    ("trainer.kubeflow.org/v1alpha1", "true", "TrainJob"),
]
# JobSet v0.12.0 config/components/webhook: the configuration the control plane installs under this name
JOBSET_WEBHOOK = ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "",
                  "validating-webhook-configuration")


class Kubectl:
    """Records every call; keeps what is applied for real; refuses as described above."""

    def __init__(self, installed=()):
        self.calls: list[tuple[tuple, list[dict]]] = []
        self.store: dict[str, dict] = {}
        self.installed = set(installed)

    def _items(self, text):
        if text is None:
            return []
        assert '"kind": "List"' not in text        # kubectl would validate a List on the client first
        return [json.loads(part) for part in text.split("\n---\n") if part.strip()]

    def _refusal(self, obj: dict, args: tuple) -> str | None:
        meta = obj.get("metadata") or {}
        if "apply" in args and not meta.get("name"):
            return f"error: from {meta.get('generateName')}: cannot use generate name with apply"
        if obj["kind"] == "TrainJob":
            name = obj["spec"]["runtimeRef"]["name"]
            if f"clustertrainingruntime.trainer.kubeflow.org/{name}" not in self.store:
                return ('Error from server (Forbidden): admission webhook "validator.trainjob.trainer.kubeflow.org" '
                        f'denied the request: spec.RuntimeRef: Invalid value: {{"name":"{name}"}}: '
                        f'ClusterTrainingRuntime.trainer.kubeflow.org "{name}" not found: specified '
                        'clusterTrainingRuntime must be created before the TrainJob is created')
        if install.key(obj) in self.installed and not ("--force-conflicts" in args
                                                       and f"--field-manager={install.MANAGER}" in args):
            return ('error: Apply failed with 1 conflict: conflict with "kdt-live-install": .webhooks[name="x"]'
                    '.clientConfig.url')
        if meta.get("name", "").startswith("bad-"):
            return f'The ConfigMap "{meta["name"]}" is invalid: data: Invalid value: "x": refused here'
        return None

    def __call__(self, *args, input=None, check=True, timeout=120):
        items = self._items(input)
        self.calls.append((args, items))
        out, err, rc = [], [], 0
        if args[0] == "api-resources":
            out = [f"{k.lower()}s  {v}  {ns}  {k}" for v, ns, k in RESOURCES]
        elif args[0] == "api-versions":
            out = [v for v, _, _ in RESOURCES]
        elif args[0] in ("apply", "create"):
            for obj in items:
                msg = self._refusal(obj, args)
                if msg:
                    err.append(msg)
                    rc = 1
                    continue
                meta = obj["metadata"]
                named = meta if meta.get("name") else {**meta, "name": meta["generateName"] + "x7k2p"}
                name = A.object_name({**obj, "metadata": named})
                out.append(name)
                if "--dry-run=server" not in args:
                    self.store[name] = obj
        return subprocess.CompletedProcess(args, rc, "\n".join(out) + "\n", "\n".join(err) + ("\n" if err else ""))


class Cluster:
    def __init__(self, installed=()):
        self.kubectl = Kubectl(installed)
        self.installed = set(installed)

    def check(self):
        pass


def _docs(text: str, name: str = "f.yaml"):
    docs, findings = load_stream(text, name)
    assert not findings
    return docs


def _calls(c, verb, *flags):
    return [(args, items) for args, items in c.kubectl.calls if args[0] == verb and all(f in args for f in flags)]


WEBHOOKS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
  - name: vjobset.kb.io
    clientConfig: {service: {name: jobset-webhook-service, namespace: jobset-system, path: /validate}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: kueue-validating-webhook-configuration}
webhooks:
  - name: vjob.kb.io
    clientConfig: {service: {name: kueue-webhook-service, namespace: kueue-system, path: /validate}}
"""


def test_the_control_planes_own_objects_are_judged_by_dry_run_as_their_installer_and_never_applied():
    c = Cluster(installed={JOBSET_WEBHOOK})
    res = judge(c, "config/components/webhook", _docs(WEBHOOKS), "2.3", compare=True)
    assert [a.refused for a in res.admissions] == [None, None]
    assert [a.how for a in res.admissions] == ["guarded", "guarded"]
    installed = _calls(c, "apply", "--dry-run=server", f"--field-manager={install.MANAGER}", "--force-conflicts")
    assert [i["metadata"]["name"] for _, items in installed for i in items] == ["validating-webhook-configuration"]
    other = _calls(c, "apply", "--dry-run=server", "--field-manager=kdt-judge", "--force-conflicts")
    assert [i["metadata"]["name"] for _, items in other for i in items] == ["kueue-validating-webhook-configuration"]
    # neither is applied for real, even when the controllers' objects are compared (`compare`)
    real = [args for args, _ in c.kubectl.calls if args[0] == "apply" and "--dry-run=server" not in args]
    assert real == [] and not [k for k in c.kubectl.store if "webhook" in k]
    A.cleanup(c, res)
    assert not [args for args, _ in c.kubectl.calls if args[0] == "delete" and args[1] != "namespace"]


def test_before_the_fix_an_installed_object_met_a_conflict():
    """The stand-in holds the conflict the judge used to meet (jobset v0.12.0 config/components/webhook,
    judged as any document): it is the flags above that avoid it."""
    c = Cluster(installed={JOBSET_WEBHOOK})
    doc = _docs(WEBHOOKS)[0]
    assert "conflict" in A.dry_run(c, [doc], ["--field-manager=kdt-judge"])[id(doc)]


GENERATED = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: upgrade-sql-schema
  annotations: {argocd.argoproj.io/hook: PreSync}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: postgres}]
"""


def test_generate_name_is_judged_by_create_and_created_for_real_only_when_compared():
    c = Cluster()
    res = judge(c, "helm-hooks/manifests.yaml", _docs(GENERATED), "2.3", compare=False)
    (a,) = res.admissions
    assert a.refused is None and a.how == "create" and a.agree
    (dry,) = _calls(c, "create", "--dry-run=server")
    assert dry[1][0]["metadata"]["generateName"] == "upgrade-sql-schema"
    assert not _calls(c, "apply") and not [k for k in c.kubectl.store if k.startswith("job")]
    c = Cluster()
    res = A.admit(c, Result("t", "2.3", namespace="ns"), A.place(_docs(GENERATED), "ns", A.served(c)), {}, True)
    assert len(res) == 1 and [k for k in c.kubectl.store if k.startswith("job")] == ["job.batch/upgrade-sql-schemax7k2p"]


RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: pytorch-runtime}
spec: {mlPolicy: {numNodes: 1}, template: {spec: {replicatedJobs: []}}}
"""
TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: pytorch-distributed-simple}
spec: {runtimeRef: {name: pytorch-runtime}}
"""


def _rendered(tmp_path: Path, files: dict[str, str], in_folder=True, kind=T.FILE):
    out = []
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        docs, _ = load_stream(text, name)
        docs = [dataclasses.replace(d, target=name) for d in docs]
        out.append(SimpleNamespace(ok=True, target=T.Target(name, kind, p, in_folder=in_folder), documents=docs))
    return out


def test_a_folders_files_are_judged_together_runtimes_first_each_finding_in_its_own_file(tmp_path):
    # a walk meets the TrainJob's file first; kubectl applies a folder by file name, and the judge puts runtimes
    # before the jobs naming them whatever the order
    rendered = _rendered(tmp_path, {"runtimes/pytorch/a-trainjob.yaml": TRAINJOB, "runtimes/pytorch/runtime.yaml": RUNTIME,
                                    "runtimes/other/trainjob.yaml": TRAINJOB})
    units = A.units(rendered, lambda t, docs: "2.3")
    assert [(u.name, [d.file for d in u.documents]) for u in units] == [
        ("runtimes/pytorch/", ["runtimes/pytorch/a-trainjob.yaml", "runtimes/pytorch/runtime.yaml"]),
        ("runtimes/other/trainjob.yaml", ["runtimes/other/trainjob.yaml"])]
    c = Cluster()
    res = judge(c, units[0].name, units[0].documents, "2.3", compare=False)
    assert [(a.doc.file, a.doc.line, a.refused) for a in res.admissions] == [
        ("runtimes/pytorch/runtime.yaml", 1, None), ("runtimes/pytorch/a-trainjob.yaml", 1, None)]
    # the runtime is applied for real (a TrainJob's admission reads it); the TrainJob is not (nothing reads it)
    assert [k for k in c.kubectl.store if "trainer" in k] == ["clustertrainingruntime.trainer.kubeflow.org/pytorch-runtime"]
    # alone, a folder's TrainJob meets no runtime: Trainer's webhook refuses it, as a cluster would
    alone = judge(Cluster(), units[1].name, units[1].documents, "2.3", compare=False)
    assert "must be created before the TrainJob" in alone.admissions[0].refused
    assert alone.admissions[0].server_fields == ["spec.RuntimeRef"]


def test_files_named_together_are_one_unit_and_kustomizations_units_of_their_own(tmp_path):
    """#55: `kubectl apply -f a/trainjob.yaml -f a/runtime.yaml` applies both: one unit, in the order named."""
    rendered = (_rendered(tmp_path, {"a/trainjob.yaml": TRAINJOB, "a/runtime.yaml": RUNTIME}, in_folder=False)
                + _rendered(tmp_path, {"b/kustomization.yaml": RUNTIME}, kind=T.KUSTOMIZE))
    units = A.units(rendered, lambda t, docs: "2.3")
    assert [u.name for u in units] == ["a/trainjob.yaml + a/runtime.yaml", "b/kustomization.yaml"]
    assert [d.kind for d in units[0].documents] == ["TrainJob", "ClusterTrainingRuntime"]


def test_a_folder_decided_apart_is_judged_at_the_release_its_documents_fit_together(tmp_path):
    rendered = _rendered(tmp_path, {"tf/runtime.yaml": RUNTIME, "tf/trainjob.yaml": TRAINJOB})
    decide = lambda t, docs: "2.1" if "trainjob" in t.name else "2.3"   # noqa: E731
    (unit,) = A.units(rendered, decide, lambda docs: "2.1")
    assert unit.release == "2.1" and len(unit.documents) == 2
    # where nothing decides them together, the folder is split by release
    assert [u.release for u in A.units(rendered, decide, lambda docs: None)] == ["2.3", "2.1"]


CONFIGMAPS = "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}}}\ndata: {{a: b}}\n"
                     for n in ("one", "bad-two", "three", "bad-four"))


def test_one_kubectl_call_per_tier_and_a_refused_document_asked_alone_only_when_needed():
    c = Cluster()
    docs = _docs(CONFIGMAPS)
    res = judge(c, "cms.yaml", docs[:3], "2.3", compare=False)
    assert [bool(a.refused) for a in res.admissions] == [False, True, False]
    assert "refused here" in res.admissions[1].refused
    assert len(_calls(c, "apply", "--dry-run=server")) == 1      # the only refusal: kubectl's message is its own
    c = Cluster()
    res = judge(c, "cms.yaml", docs, "2.3", compare=False)
    assert [a.server_fields for a in res.admissions] == [[], ["data"], [], ["data"]]
    assert '"bad-four"' in res.admissions[3].refused and '"bad-two"' not in res.admissions[3].refused
    assert len(_calls(c, "apply", "--dry-run=server")) == 3      # the batch, then each refused one alone


def test_kinds_not_served_cost_no_call_and_are_said():
    c = Cluster()
    docs = _docs("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: app}\n")
    res = judge(c, "apps.yaml", docs, "2.3", compare=False)
    assert res.admissions[0].skipped == "argoproj.io/v1alpha1 Application is not served by this control plane"
    assert not _calls(c, "apply") and not _calls(c, "create", "--dry-run=server")


def test_cleanup_deletes_what_the_unit_created_outside_its_namespace():
    c = Cluster()
    text = ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 10\n---\n"
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n"
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: trainer, namespace: team}\n---\n"
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: mine}\n")
    res = judge(c, "setup.yaml", _docs(text), "2.3", namespace="kdt-judge-7", compare=False)
    assert all(a.refused is None for a in res.admissions)
    A.cleanup(c, res)
    deleted = [(args, items) for args, items in c.kubectl.calls if args[0] == "delete"]
    assert [(i["kind"], i["metadata"]["name"]) for i in deleted[0][1]] == [("PriorityClass", "high"),
                                                                          ("ServiceAccount", "trainer")]
    assert deleted[1][0][:3] == ("delete", "namespace", "kdt-judge-7")   # the Namespace `team` stays


EXPORTED = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: exported, uid: 6826f086-8a5a-11e6-8d09-42010a800005}
data: {a: b}
"""


def test_an_object_with_a_uid_is_judged_by_create_as_kubectl_apply_creates_it():
    """kueue v0.19.2 vendors k8s.io/apimachinery pkg/util/managedfields/endpoints.yaml, an object exported with
    its uid: server-side apply refused it ("uid mismatch ... no existing object was found"); `kubectl apply`
    creates a new object and the API server gives it its own uid."""
    c = Cluster()
    res = judge(c, "endpoints.yaml", _docs(EXPORTED), "2.3", compare=False)
    assert [(a.how, a.refused) for a in res.admissions] == [("create", None)]
    assert _calls(c, "create", "--dry-run=server") and not _calls(c, "apply", "--dry-run=server")

"""The judge on a real control plane (kdt.live): each class of difference the references found has a live
case here, and the API server's and the operators' answers are set beside kdt's.

Fixtures are written here. The control plane: Kubernetes v1.36.3, Trainer 2.3.0 with JobSet v0.12.0, the
Training Operator v1.9.4, Kueue's and scheduler-plugins' CRDs (kdt.live.controlplane), one for the checks.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kdt.documents import load_stream
from kdt.live.judge import cleanup, judge
from kdt.validate import validate_documents

KDT = [sys.executable, "-m", "kdt"]

RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: kdt-live-torch
  labels: {trainer.kubeflow.org/framework: torch}
spec:
  mlPolicy:
    numNodes: 2
    torch: {}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: ghcr.io/example/trainer:1
                      command: [torchrun, train.py]
                      env:
                        - {name: A, value: from-runtime}
                        - {name: B, value: $(A)-b}
"""

TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: kdt-live-job
spec:
  runtimeRef: {name: kdt-live-torch}
  trainer:
    numNodes: 2
    env:
      - {name: C, value: from-trainjob}
      - {name: A, value: overridden}
"""


def _docs(text: str, name: str = "live-fixture.yaml"):
    docs, findings = load_stream(text, name)
    assert not findings, findings
    return docs


def _create_dry(live, text: str) -> subprocess.CompletedProcess:
    """`kubectl create --dry-run=server`: the API server's validation and admission, as `kubectl create` and
    client-side `kubectl apply` meet them (server-side apply refuses some earlier, building its typed patch)."""
    return live.kubectl("create", "--dry-run=server", "-f", "-", input=text, check=False)


def _options():
    from kdt import cluster_file
    return cluster_file.load().options


def _errors(text: str, name: str = "live-fixture.yaml"):
    """validate's errors, the CustomResourceDefinitions among the documents giving their kinds a schema (as
    `kdt validate` reads every CRD the run meets)."""
    from kdt import kinds as K
    from kdt.schemas.crds import RunCrds
    docs = _docs(text, name)
    found = RunCrds(d for d in docs if K.CRD.matches(d)) or None
    return [f for f in validate_documents(docs, found=found) if f.level == "error"]


def check_trainjob_the_controller_creates_is_the_preview(c):
    """Trainer 2.3 on a TrainJob: the JobSet (suspend copied from the TrainJob's defaulted suspend, env in the
    order the merge gives), its Jobs and pods, the runtime snapshot ConfigMap: field by field."""
    docs = _docs(RUNTIME + "---\n" + TRAINJOB)
    res = judge(c, "live-trainjob", docs, "2.3", namespace="kdt-live-tj", options=_options())
    try:
        jobset = c.get_json("jobset", "kdt-live-job", "-n", "kdt-live-tj")
        assert jobset["spec"].get("suspend") is False          # the live fact the preview must show
        c.get_json("configmap", "kdt-live-job-runtime-snapshot", "-n", "kdt-live-tj")   # Trainer 2.3 creates it
        assert all(a.refused is None for a in res.admissions), [a.refused for a in res.admissions]
        assert res.objects >= 5 and not res.missing and not res.extra, (res.missing, res.extra)
        assert not res.unexplained, "\n".join(f"{d.kind} {d.name} {d.path}: preview {d.preview!r} live {d.live!r}"
                                              for d in res.unexplained)
    finally:
        cleanup(c, res)


def check_pytorchjob_the_training_operator_creates_is_the_preview(c):
    text = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: kdt-live-ptj}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: ghcr.io/example/trainer:1, command: [python, train.py]}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: pytorch, image: ghcr.io/example/trainer:1, command: [python, train.py]}]
"""
    docs = _docs(text)
    res = judge(c, "live-ptj", docs, "2.3", namespace="kdt-live-ptj", options=_options())
    try:
        assert res.objects >= 5 and not res.missing and not res.extra, (res.missing, res.extra)
        assert not res.unexplained, "\n".join(f"{d.kind} {d.name} {d.path}: preview {d.preview!r} live {d.live!r}"
                                              for d in res.unexplained)
    finally:
        cleanup(c, res)


def check_a_crd_the_api_server_refuses_kdt_refuses(c):
    """kubectl-validate's testcases/crds: an unknown type (`strign`) is refused by the API server
    (apiextensions-apiserver validation.go); kdt's validate must refuse it too."""
    crd = """\
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
            spec: {type: strign}
"""
    proc = _create_dry(c, crd)
    assert proc.returncode != 0 and "strign" in proc.stderr
    assert _errors(crd), "kdt accepts a CRD the API server refuses"


def check_a_map_list_with_duplicate_keys_is_refused_by_both(c):
    """JobSet's replicatedJobs is `x-kubernetes-list-type: map` keyed by name: two items with one name."""
    js = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: dup, namespace: default}
spec:
  replicatedJobs:
    - name: w
      template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}
    - name: w
      template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}
"""
    proc = _create_dry(c, js)
    assert proc.returncode != 0 and "Duplicate value" in proc.stderr, proc.stderr
    assert any("Duplicate" in f.message or "duplicate" in f.message for f in _errors(js)), _errors(js)


def check_a_cel_rule_on_a_list_item_is_evaluated_by_both(c):
    """Kueue v0.19.2's ClusterQueue: a flavor listing a resource not in its group's coveredResources is
    refused by the CEL rule on the resourceGroups item."""
    cq = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-cel}
spec:
  resourceGroups:
    - coveredResources: [cpu]
      flavors:
        - name: default
          resources:
            - {name: cpu, nominalQuota: 1}
            - {name: memory, nominalQuota: 1Gi}
"""
    proc = _create_dry(c, cq)
    assert proc.returncode != 0, "the API server accepted it"
    assert _errors(cq), "kdt accepts a ClusterQueue the CRD's CEL rule refuses: " + proc.stderr[-300:]


def check_duplicate_container_ports_warn_on_both(c):
    pod = """\
apiVersion: v1
kind: Pod
metadata: {name: ports, namespace: default}
spec:
  containers:
    - name: c
      image: busybox
      ports:
        - {containerPort: 8080}
        - {containerPort: 8080}
"""
    proc = _create_dry(c, pod)
    assert proc.returncode == 0 and "Warning:" in proc.stderr, proc.stderr
    # server-side apply refuses the same pod: its typed patch keys ports by (containerPort, protocol)
    ssa = c.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=pod, check=False)
    assert ssa.returncode != 0 and "duplicate entries for key" in ssa.stderr, ssa.stderr
    warnings = [f for f in validate_documents(_docs(pod)) if f.level == "warning"]
    # the API server's own warning, path and words (pkg/api/pod/warnings.go)
    assert any(f"{f.path}: {f.message}" in proc.stderr for f in warnings), (warnings, proc.stderr)


MPI_WAITS = """\
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: kdt-live-mpi, namespace: default}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          initContainers:
            - name: wait-hostfile
              image: ghcr.io/example/mpi:1
              command: [sh, -c, "until [ -s /etc/mpi/hostfile ]; do sleep 5; done"]
              volumeMounts: [{name: mpi-job-config, mountPath: /etc/mpi}]
          containers:
            - name: launcher
              image: ghcr.io/example/mpi:1
              command: [mpirun, -np, "2", /opt/app]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: worker, image: ghcr.io/example/mpi:1}]
"""
# the same launcher mounting the hostfile's volume in its main container instead: the operator mounts it there
MPI_COLLIDES = MPI_WAITS.replace("kdt-live-mpi", "kdt-live-mpi-b").replace(
    "          initContainers:\n            - name: wait-hostfile\n              image: ghcr.io/example/mpi:1\n"
    "              command: [sh, -c, \"until [ -s /etc/mpi/hostfile ]; do sleep 5; done\"]\n"
    "              volumeMounts: [{name: mpi-job-config, mountPath: /etc/mpi}]\n", "").replace(
    "              command: [mpirun, -np, \"2\", /opt/app]\n",
    "              command: [mpirun, -np, \"2\", /opt/app]\n"
    "              volumeMounts: [{name: mpi-job-config, mountPath: /etc/mpi}]\n")


def _launcher(c, job: str, timeout: float = 30) -> tuple[dict | None, str]:
    """The launcher pod the operator created, or None and the operator's event saying why not."""
    end = time.monotonic() + timeout
    why = ""
    while time.monotonic() < end:
        got = c.kubectl("get", "pod", f"{job}-launcher", "-n", "default", "-o", "json", check=False)
        if got.returncode == 0:
            return json.loads(got.stdout), ""
        ev = c.kubectl("get", "events", "-n", "default", "--field-selector", f"involvedObject.name={job}",
                       "-o", "jsonpath={.items[*].message}", check=False).stdout
        if "launcher pod created failed" in ev:
            return None, ev
        time.sleep(0.5)
    return None, why


def check_an_mpijob_launcher_mounting_what_the_operator_adds(c):
    """The Training Operator's kubeflow.org/v1 MPIJob (v1.9.4 pkg/controller.v1/mpi/mpijob_controller.go newLauncher
    adds the `mpi-job-config` volume and mounts it at /etc/mpi in the launcher's first container; issue 43's
    public MPIJobs): an init container that mounts it (waiting for the hostfile, as public repositories write
    launchers) is what the operator completes into a pod the API server creates, and kdt says nothing; the main
    container mounting it too makes the pod the operator builds invalid ("must be unique"), and kdt says so."""
    try:
        assert c.kubectl("apply", "--server-side", "-f", "-", input=MPI_WAITS, check=False).returncode == 0
        pod, why = _launcher(c, "kdt-live-mpi")
        assert pod is not None, f"the Training Operator created no launcher pod: {why}"
        assert "mpi-job-config" in [v["name"] for v in pod["spec"].get("volumes") or []]
        assert [f for f in _errors(MPI_WAITS) if f.rule == "api-volume"] == []
        assert c.kubectl("apply", "--server-side", "-f", "-", input=MPI_COLLIDES, check=False).returncode == 0
        pod, why = _launcher(c, "kdt-live-mpi-b")
        assert pod is None and "must be unique" in why, why
        ours = [f for f in _errors(MPI_COLLIDES) if f.rule == "api-volume"]
        assert ours and all("must be unique" in f.message for f in ours), ours
    finally:
        for job in ("kdt-live-mpi", "kdt-live-mpi-b"):
            c.kubectl("delete", "mpijob", job, "-n", "default", "--ignore-not-found", "--wait=false", check=False)


def _ssa_dry(live, text: str) -> subprocess.CompletedProcess:
    return live.kubectl("apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-", input=text, check=False)


FP_JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: %s, namespace: default}
spec:
  failurePolicy:
    maxRestarts: 1
    rules: [%s]
  replicatedJobs:
    - name: w
      template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: "busybox:1"}]}}}}
"""


def check_jobset_failure_policy_rule_names_as_the_webhook_reads_them(c):
    """JobSet v0.12.0 (and v0.10.1 alike): the CRD requires a rule's name, but the mutating webhook (Default,
    pkg/webhooks/jobset_webhook.go) names a missing or empty one `failurePolicyRule<i>` before the schema is
    checked, so the failure-policy examples of the JobSet site (site/static/examples/failure-policy/*, unnamed
    rules) are accepted, as kdt says; the names it gives can repeat an explicit one, which the validating webhook
    refuses in the words lint reports (kdt.operators.jobset.facts.rule_name_rejections); so are the actions and
    the restart strategy of alpha feature gates left off (kdt.operators.jobset.facts.gate_rejections)."""
    from kdt.lint import lint_documents
    from kdt.operators.jobset import facts as JS
    crd = c.get_json("crd", "jobsets.jobset.x-k8s.io")
    rule_schema = (crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                   ["failurePolicy"]["properties"]["rules"]["items"])
    assert "name" in rule_schema["required"]                 # it is the webhook, not the schema, that accepts them
    unnamed = FP_JOBSET % ("kdt-live-fp", "{action: FailJobSet, targetReplicatedJobs: [w]}, "
                                          "{name: '', action: RestartJobSet}")
    for proc in (_ssa_dry(c, unnamed), c.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=unnamed,
                                                 check=False)):
        assert proc.returncode == 0, proc.stderr
        rules = json.loads(proc.stdout)["spec"]["failurePolicy"]["rules"]
        assert [r["name"] for r in rules] == JS.rule_names([{}, {"name": ""}]), rules
    docs = _docs(unnamed)
    assert _errors(unnamed) == [] and [f for f in lint_documents(docs, trainer_version="2.3")
                                       if f.rule == "jobset-failure-policy"] == []
    repeated = FP_JOBSET % ("kdt-live-fp2", "{name: failurePolicyRule1, action: FailJobSet}, {action: FailJobSet}")
    proc = _ssa_dry(c, repeated)
    ours = [f.message for f in lint_documents(_docs(repeated), trainer_version="2.3") if f.rule == "jobset-failure-policy"]
    assert proc.returncode != 0 and len(ours) == 1 and ours[0] in proc.stderr, (proc.stderr, ours)
    # the alpha gates RestartJob and InPlaceRestart are off as installed (pkg/features/features.go): the JobSet
    # site's restartjob-action and in-place-restart examples are refused, in the words lint quotes
    for name, rules, strategy in (("kdt-live-fp3", "{name: a, action: RestartJob}", ""),
                                  ("kdt-live-fp4", "{name: a, action: FailJobSet}", "InPlaceRestart")):
        text = FP_JOBSET % (name, rules)
        if strategy:
            text = text.replace("    maxRestarts: 1\n", f"    maxRestarts: 1\n    restartStrategy: {strategy}\n")
        proc = _ssa_dry(c, text)
        ours = [f.message for f in lint_documents(_docs(text), trainer_version="2.3") if f.rule == "jobset-failure-policy"]
        assert proc.returncode != 0 and len(ours) == 1 and ours[0].split(" (JobSet")[0] in proc.stderr, (proc.stderr, ours)


NULLABLES_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: nullables.kdt-live.example.com}
spec:
  group: kdt-live.example.com
  names: {kind: Nullable, plural: nullables}
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
              properties:
                policy: {type: object, properties: {max: {type: integer}}}
                mode: {type: string, default: fast}
                note: {type: string, nullable: true}
"""


def check_a_null_server_side_apply_keeps_is_refused_by_both(c):
    """A custom resource's null that its schema does not allow: `kubectl create` drops it (apiextensions-apiserver
    v0.36.3 prunenulls.go, as the body is decoded) and server-side apply keeps it and is refused ("in body must be
    of type object"); a default replaces its null either way, a nullable field keeps it. kdt: an error naming
    server-side apply, in the API server's words. A JobSet with `spec: null` (the JobSet repository's
    config/samples) is accepted both ways: the JobSet webhook's Default writes the spec, and kdt accepts it."""
    try:
        assert c.kubectl("apply", "--server-side", "-f", "-", input=NULLABLES_CRD, check=False).returncode == 0
        c.kubectl("wait", "--for=condition=Established", "crd/nullables.kdt-live.example.com", "--timeout=30s")
        cr = "apiVersion: kdt-live.example.com/v1\nkind: Nullable\nmetadata: {name: kdt-live-nulls, namespace: default}\nspec: {%s}\n"
        refused = cr % "policy: null, mode: null, note: null"
        created = c.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=refused, check=False)
        assert created.returncode == 0 and json.loads(created.stdout)["spec"] == {"mode": "fast", "note": None}, \
            created.stdout + created.stderr
        applied = _ssa_dry(c, refused)
        assert applied.returncode != 0 and "spec.policy in body must be of type object" in applied.stderr, applied.stderr
        assert "spec.mode" not in applied.stderr and "spec.note" not in applied.stderr, applied.stderr
        ours = _errors(NULLABLES_CRD + "---\n" + refused)
        assert [f.path for f in ours] == ["spec.policy"], ours
        words = ours[0].message.split('"')[1]             # the API server's words, as kdt quotes them
        assert words in applied.stderr and "server-side apply" in ours[0].message, (words, applied.stderr)
        fine = cr % "mode: null, note: null"
        assert _ssa_dry(c, fine).returncode == 0 and _errors(NULLABLES_CRD + "---\n" + fine) == []
        js = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: kdt-live-null, namespace: default}\nspec:\n"
        proc = _ssa_dry(c, js)
        assert proc.returncode == 0 and json.loads(proc.stdout)["spec"]["successPolicy"] == {"operator": "All"}, proc.stderr
        assert _errors(js) == []
    finally:
        c.kubectl("delete", "crd", "nullables.kdt-live.example.com", "--ignore-not-found", "--wait=false", check=False)


HOOK_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: kdt-live-hook-
  annotations: {argocd.argoproj.io/hook: PreSync}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"""


def check_what_a_user_applies_together_is_judged_as_applied(c, tmp_path):
    """Three ways the judge used to refuse what a cluster accepts (bench/live_repos.py on public repositories):
    JobSet v0.12.0's own webhook configuration as its repository has it (config/components/webhook, naming a
    Service) met the control plane's copy and its field manager; an Argo CD hook Job (`generateName`) cannot be
    applied; a TrainJob whose runtime is in another file of its folder met no runtime. Now: all accepted as kdt
    accepts them, and the control plane's own configuration is untouched."""
    from kdt import targets as T
    from kdt.live import install
    from kdt.live import releases as R
    from kdt.live.admission import units
    trainer, jobset = R.trainer("2.3")
    name, upstream = next((m, d) for m, d in install.webhooks(trainer, jobset, R.training_operator())
                          if m == "jobset" and d["kind"] == "ValidatingWebhookConfiguration")
    before = c.get_json("validatingwebhookconfiguration", upstream["metadata"]["name"])
    folder = tmp_path / "runtimes"
    folder.mkdir()
    (folder / "runtime.yaml").write_text(RUNTIME.replace("kdt-live-torch", "kdt-live-folder-rt"))
    (folder / "trainjob.yaml").write_text(TRAINJOB.replace("kdt-live-torch", "kdt-live-folder-rt")
                                          .replace("kdt-live-job", "kdt-live-folder-job"))
    rendered = []
    for t in T.from_args([str(folder)]):
        docs, _ = load_stream(Path(t.path).read_text(), t.name)
        rendered.append(SimpleNamespace(ok=True, target=t, documents=[dataclasses.replace(d, target=t.name)
                                                                      for d in docs]))
    (unit,) = units(rendered, lambda t, docs: "2.3")
    docs = _docs(json.dumps(upstream) + "\n---\n" + HOOK_JOB, "together.yaml") + unit.documents
    res = judge(c, "together", docs, "2.3", namespace="kdt-live-together", compare=False)
    try:
        assert [(Path(a.doc.file).name, a.how, a.refused) for a in res.admissions] == [
            ("together.yaml", "guarded", None), ("runtime.yaml", "apply", None),
            ("together.yaml", "create", None), ("trainjob.yaml", "apply", None)], res.admissions
        assert not _errors(json.dumps(upstream)) and not _errors(HOOK_JOB)
        after = c.get_json("validatingwebhookconfiguration", upstream["metadata"]["name"])
        assert after["webhooks"] == before["webhooks"] and "url" in after["webhooks"][0]["clientConfig"]
    finally:
        cleanup(c, res)


def check_a_builtin_object_without_its_spec_is_refused_by_both(c):
    """#55: a built-in object with its spec deleted. The API server validates the zero spec: the kinds of
    kdt.apivalidation.required are refused by both, the kinds whose zero spec is valid accepted by both."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validate"))
    from test_apivalidation import NO_SPEC_ACCEPTED, NO_SPEC_REFUSED, no_spec
    for api_kind in NO_SPEC_REFUSED + NO_SPEC_ACCEPTED:
        text = no_spec(api_kind)
        proc = _create_dry(c, text)
        refused = api_kind in NO_SPEC_REFUSED
        assert (proc.returncode != 0) == refused, f"{api_kind}: the API server said {proc.stderr[-300:]!r}"
        assert bool(_errors(text)) == refused, f"{api_kind}: kdt said {_errors(text)}"


CHECKS = [check_what_a_user_applies_together_is_judged_as_applied, check_a_builtin_object_without_its_spec_is_refused_by_both,
          check_an_mpijob_launcher_mounting_what_the_operator_adds,
          check_trainjob_the_controller_creates_is_the_preview,
          check_pytorchjob_the_training_operator_creates_is_the_preview,
          check_a_crd_the_api_server_refuses_kdt_refuses, check_a_map_list_with_duplicate_keys_is_refused_by_both,
          check_a_cel_rule_on_a_list_item_is_evaluated_by_both, check_duplicate_container_ports_warn_on_both,
          check_jobset_failure_policy_rule_names_as_the_webhook_reads_them,
          check_a_null_server_side_apply_keeps_is_refused_by_both]


def test_each_class_on_the_real_control_plane(tmp_path):
    """One control plane (Trainer 2.3.0, JobSet v0.12.0, the Training Operator v1.9.4), started for these
    checks and stopped after them, so it costs the suite its start (about 20 s) and no idle time: every check
    runs, and the failures are reported together."""
    from kdt import cluster_file
    from kdt.live import releases as R
    from kdt.live.controlplane import Cluster
    failures = []
    with Cluster.start(R.ReleaseSet(trainer="2.3"), folder=tmp_path / "cp", cluster_file=cluster_file.load()) as c:
        for check in CHECKS:
            try:
                check(c, tmp_path) if "tmp_path" in inspect.signature(check).parameters else check(c)
            except AssertionError as exc:
                failures.append(f"{check.__name__}: {exc}")
    assert not failures, "\n\n".join(failures)


def test_a_component_that_dies_is_named_and_nothing_is_left(tmp_path):
    """`kdt cluster up` of a control plane alone; its kube-apiserver killed: the daemon ends naming it,
    `status` says so, `down` leaves no process behind."""
    name = f"pytest-death-{os.getpid()}"
    env = {**os.environ, "KDT_LIVE_OWNER_PID": str(os.getpid())}
    up = subprocess.run([*KDT, "cluster", "up", "--name", name, "--control-plane-only"], capture_output=True,
                        text=True, env=env, timeout=600)
    assert up.returncode == 0, up.stderr[-1500:]
    from kdt.live import build
    state = json.loads((build.cache_root() / "clusters" / name / "state.json").read_text())
    pids = dict(state["components"])
    try:
        os.kill(pids["kube-apiserver"], signal.SIGKILL)
        end = time.monotonic() + 30
        st = None
        while time.monotonic() < end:
            st = subprocess.run([*KDT, "cluster", "status", "--name", name], capture_output=True, text=True,
                                timeout=60)
            if "not running" in st.stdout:
                break
            time.sleep(0.5)
        assert st is not None and st.returncode == 1 and "kube-apiserver" in st.stdout, st.stdout
    finally:
        subprocess.run([*KDT, "cluster", "down", "--name", name], capture_output=True, timeout=120)
    time.sleep(0.5)
    left = []
    for n, pid in pids.items():
        try:
            os.kill(pid, 0)
            left.append(n)
        except ProcessLookupError:
            pass
    assert not left, f"left running: {left}"
    assert not (build.cache_root() / "clusters" / name).exists()


def test_validate_live_judges_named_files_together_on_a_kept_control_plane(tmp_path):
    """#55: `kdt validate --live job.yaml runtime.yaml` on the control plane `kdt cluster up` keeps (no start of
    its own): a TrainJob and its namespaced TrainingRuntime named together are one unit, as `kubectl apply -f
    job.yaml -f runtime.yaml` applies them, and both are accepted; the run ends with one line of what the server
    judged. A TrainJob whose runtime is nowhere: one line naming it and how to provide it."""
    root = Path(__file__).resolve().parents[2]
    name = f"pytest-judge-{os.getpid()}"
    env = {**os.environ, "KDT_LIVE_OWNER_PID": str(os.getpid())}
    up = subprocess.run([*KDT, "cluster", "up", "--name", name], capture_output=True, text=True, env=env,
                        timeout=600, cwd=root)
    assert up.returncode == 0, up.stderr[-1500:]
    try:
        rt = (RUNTIME.replace("ClusterTrainingRuntime", "TrainingRuntime")
              .replace("name: kdt-live-torch", "name: kdt-named-rt\n  namespace: kdt-named"))
        job = (TRAINJOB.replace("{name: kdt-live-torch}", "{name: kdt-named-rt, kind: TrainingRuntime}")
               .replace("name: kdt-live-job", "name: kdt-named-job\n  namespace: kdt-named"))
        (tmp_path / "job.yaml").write_text(job)
        (tmp_path / "runtime.yaml").write_text(rt)
        (tmp_path / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: kdt-named}\n")
        use = {**os.environ, "KDT_LIVE_CLUSTER": name}      # this session's own (it owns it: not found otherwise)
        p = subprocess.run([*KDT, "validate", "--live", str(tmp_path / "ns.yaml"), str(tmp_path / "job.yaml"),
                            str(tmp_path / "runtime.yaml")], capture_output=True, text=True, timeout=300, cwd=root,
                           env=use)
        assert p.returncode == 0, p.stdout + p.stderr[-1500:]
        assert "judging on the control plane `kdt cluster up --name" in p.stderr and "starting Kubernetes" not in p.stderr
        assert p.stderr.strip().splitlines()[-1] == ("live: the API server judged 3 document(s): 3 accepted, "
                                                     "0 refused; 0 not judged"), p.stderr
        (tmp_path / "alone.yaml").write_text(TRAINJOB.replace("kdt-live-torch", "kdt-nowhere"))
        p = subprocess.run([*KDT, "validate", "--live", str(tmp_path / "alone.yaml")], capture_output=True, text=True,
                           timeout=300, cwd=root, env=use)
        line = next((ln for ln in p.stdout.splitlines() if "live-admission" in ln), "")
        assert p.returncode == 1 and "ClusterTrainingRuntime 'kdt-nowhere' is defined neither in the files checked" \
            in line and "webhook: " in line, p.stdout + p.stderr[-800:]
        assert "1 refused" in p.stderr.strip().splitlines()[-1]
    finally:
        subprocess.run([*KDT, "cluster", "down", "--name", name], capture_output=True, timeout=120)

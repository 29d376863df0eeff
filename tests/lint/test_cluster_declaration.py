"""#55: the cluster the repository declares (`.kdt-cluster.yaml`: featureGates, apply, operators) is what
offline kdt judges against, as the live control plane runs it (kdt.live.install.manager_config)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kdt import cluster_file as cluster
from kdt.documents import load_stream
from kdt.errors import UsageError
from kdt.findings import ERROR, WARNING
from kdt.lint import lint_documents

KDT = [sys.executable, "-m", "kdt"]

JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  failurePolicy:
    maxRestarts: 3
    rules:
      - {name: one, action: RestartJob}
  replicatedJobs:
    - name: w
      template:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: c, image: busybox:1}]
"""

MPI_V2_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: mpijobs.kubeflow.org}
spec:
  group: kubeflow.org
  names: {kind: MPIJob, plural: mpijobs}
  scope: Namespaced
  versions:
    - {name: v2beta1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"""

WIDGET_CRD = """\
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
            spec: {type: object, properties: {command: {type: array, items: {type: string}}}}
"""


def declared(tmp_path, text: str) -> cluster.Cluster:
    (tmp_path / "c.yaml").write_text(text)
    return cluster.load(str(tmp_path / "c.yaml"))


def rule(docs_text: str, c, rule_id: str, release: str = "2.3"):
    docs, _ = load_stream(docs_text, "x.yaml")
    return [(f.level, f.path) for f in lint_documents(docs, release, cluster=c) if f.rule == rule_id]


def test_the_declaration_is_read_and_bad_shapes_are_one_line(tmp_path):
    c = declared(tmp_path, "featureGates: {trainer: {TrainJobStatus: true}, jobset: {RestartJob: false}}\n"
                           "apply: server-side\noperators: [trainer, jobset]\n")
    assert c.feature_gates == {"trainer": {"TrainJobStatus": True}, "jobset": {"RestartJob": False}}
    assert c.gate("trainer", "TrainJobStatus") and not c.gate("jobset", "RestartJob") and not c.gate("jobset", "X")
    assert c.apply == "server-side" and c.operators == ("trainer", "jobset")
    bare = declared(tmp_path, "objects: []\n")
    assert bare.apply == "client-side" and bare.operators == cluster.OPERATORS and bare.feature_gates == {}
    assert c.fingerprint != bare.fingerprint
    for bad, said in (("featureGates: {kueue: {A: true}}\n", "featureGates maps an operator"),
                      ("featureGates: {trainer: {TrainJobStatus: yes please}}\n", "each GATE: true or false"),
                      ("apply: sometimes\n", "apply is client-side or server-side"),
                      ("operators: [volcano]\n", "operators is a list of")):
        with pytest.raises(UsageError, match=said):
            declared(tmp_path, bad)


def test_jobset_restart_job_is_refused_only_while_the_declared_gate_is_off(tmp_path):
    off = rule(JOBSET, declared(tmp_path, "objects: []\n"), "jobset-failure-policy")
    assert off == [(ERROR, "spec.failurePolicy.rules[0].action")]
    on = declared(tmp_path, "featureGates: {jobset: {RestartJob: true}}\n")
    assert rule(JOBSET, on, "jobset-failure-policy") == []
    assert on.options["jobset_feature_gates"] == frozenset({"RestartJob"})     # the merge preview's too


def test_the_live_managers_run_with_the_declared_gates():
    from kdt.live import install
    from kdt.live import releases as R
    trainer, jobset = R.trainer("2.3")
    text = install.manager_config("trainer", trainer, 1, "/c", {"TrainJobStatus": True})
    assert "featureGates: {TrainJobStatus: true}" in text.splitlines()
    assert "featureGates" not in install.manager_config("jobset", jobset, 1, "/c", None)


def test_the_mpijob_crd_conflict_is_a_warning_where_the_training_operator_runs(tmp_path):
    assert rule(MPI_V2_CRD, None, "mpijob-crd-conflict") == [(WARNING, "spec.versions")]
    assert rule(MPI_V2_CRD, declared(tmp_path, "objects: []\n"), "mpijob-crd-conflict") == [(WARNING, "spec.versions")]
    assert rule(MPI_V2_CRD, declared(tmp_path, "operators: [trainer, jobset]\n"), "mpijob-crd-conflict") == []
    assert rule(MPI_V2_CRD.replace("- {name: v2beta1", "- {name: v1, served: true, storage: false}\n    - {name: v2beta1"),
                None, "mpijob-crd-conflict") == []


def test_a_null_only_server_side_apply_keeps_is_an_error_or_a_warning_as_the_repository_applies(tmp_path):
    (tmp_path / "crd.yaml").write_text(WIDGET_CRD)
    (tmp_path / "w.yaml").write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
                                     "spec: {command: null}\n")

    def validate(*args):
        p = subprocess.run([*KDT, "validate", "--crd", str(tmp_path / "crd.yaml"), *args, str(tmp_path / "w.yaml")],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120)
        return p.returncode, [ln for ln in p.stdout.splitlines() if "spec.command" in ln or "null" in ln]
    code, lines = validate("--apply", "server-side")
    assert code == 1 and len(lines) == 1 and "error" in lines[0] and "for server-side apply" in lines[0], lines
    code, lines = validate("--apply", "client-side")
    assert code == 0 and len(lines) == 1 and "warning" in lines[0] and "applies client-side" in lines[0], lines
    (tmp_path / ".kdt-cluster.yaml").write_text("apply: server-side\n")
    (tmp_path / ".git").mkdir()
    code, lines = validate()
    assert code == 1 and "error" in lines[0], lines

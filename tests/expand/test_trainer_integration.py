"""The merge preview held to what Trainer's controller creates in its integration tests (kubeflow/trainer
v2.1.0 and v2.3.0 test/integration/controller/trainjob_controller_test.go, test/integration/webhooks/): the
JobSet's suspend, the order of merged lists, the runtime snapshot ConfigMap, and what the API server refuses.
Cases restated here in this project's words; bench/trainer_integration.py runs the per-release restatement."""
from kdt.documents import load_stream
from kdt.merge_preview import expand_documents

RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: rt, namespace: ns}
spec:
  mlPolicy: {numNodes: 1}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers:
                    - {name: node, image: "img:1"}
                    - name: sidecar
                      image: "side:1"
                      env: [{name: A, value: "1"}, {name: C, value: "3"}]
"""


def docs(trainjob_spec: str, runtime: str = RUNTIME, name: str = "tj"):
    text = runtime + f"""---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: {name}, namespace: ns}}
spec: {{runtimeRef: {{kind: TrainingRuntime, name: rt}}{trainjob_spec}}}
"""
    d, f = load_stream(text, "inline.yaml")
    assert f == []
    return d


def one(objs, kind):
    [e] = [e for e in objs if e.kind == kind]
    return e


def test_jobset_suspend_is_the_trainjobs_defaulted_suspend():
    """jobset.go Build Suspend(trainJob.Spec.Suspend) and the CRD's default false: every JobSet has it."""
    for version in ("2.1", "2.3"):
        for spec, want in (("", False), (", suspend: false", False), (", suspend: true", True)):
            objs, findings = expand_documents(docs(spec), trainer_version=version)
            assert [f for f in findings if f.level == "error"] == []
            js = one(objs, "JobSet").obj
            assert js["spec"]["suspend"] is want, (version, spec)
            job = [e for e in objs if e.kind == "Job"][0].obj
            assert job["spec"].get("suspend", False) is want

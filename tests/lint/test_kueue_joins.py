"""A job joined to the queue objects of its run and of the cluster (rules kueue-*): the 512-rank targets
queue into the shipped ClusterQueue, a job one GPU over it never does, and objects the cluster file
declares are its whole truth while objects found in the run alone are not."""
from __future__ import annotations

import dataclasses

import pytest

from kdt import cluster_file as cluster, targets as T
from kdt.documents import load_stream
from kdt.findings import ERROR, WARNING
from kdt.lint import lint_documents, lint_target
from kdt.lint.rules import _kueue
from kdt.render import render_all

REPO = cluster.load()      # .kdt-cluster.yaml: deploy/cluster, deploy/cluster/kueue, deploy/cluster/volcano
SCALE = ["overlays/scale-512-pytorchjob", "overlays/scale-512-trainjob", "overlays/scale-512-statefulset",
         "charts/trainer/ci/scale-512-pytorchjob.yaml", "charts/trainer/ci/scale-512-trainjob.yaml",
         "charts/trainer/ci/scale-512-statefulset.yaml"]
QUEUE_RULES = ("kueue-local-queue", "kueue-quota", "kueue-flavor", "kueue-topology", "gang-min-member")


@pytest.fixture(scope="module")
def scale():
    results = render_all(T.resolve(SCALE))
    assert all(r.ok for r in results), [f.message for r in results for f in r.findings]
    return results


def mine(findings, rules=QUEUE_RULES):
    return [f for f in findings if f.rule in rules]


def test_the_512_rank_targets_queue_into_the_shipped_cluster_queue(scale):
    run_docs = [d for r in scale for d in r.documents]
    for r in scale:
        found = lint_target(r.target, r.documents, "2.3", run_docs=run_docs, cluster=REPO)
        assert [f for f in found if f.level == ERROR] == [], r.target.name
        # joined for real: the job's Workload, its LocalQueue and the ClusterQueue training
        ctx = dataclasses.replace(_ctx(run_docs), trainer_version="2.3")
        (job,) = [d for d in r.documents if _kueue.workload(d, r.documents, ctx) is not None]
        w = _kueue.workload(job, r.documents, ctx)
        assert w.total()["nvidia.com/gpu"] == 512 and w.queue == "training"
        objs = _kueue.queue_objects(r.documents, ctx)
        assert [cq.name for cq in _kueue.cluster_queues_of(job, w, objs)] == ["training"]
        assert all(ps.topology is not None and ps.topology.preferred == "topology.k8s.aws/network-node-layer-2"
                   for ps in w.pod_sets)
        assert _kueue.admit(w, objs.get(_kueue.CLUSTER_QUEUE, "training"), objs) == []


def _ctx(run_docs):
    from kdt.lint.engine import Context
    return Context(run_docs=run_docs, cluster=REPO)


def _one_gpu_over(docs):
    """The scale-512 PyTorchJob with 9 GPUs on its Master: 513 in all."""
    text = next(d for d in docs if d.kind == "PyTorchJob").text
    master = text.index("Master:")
    head, tail = text[:master], text[master:]
    tail = tail.replace('nvidia.com/gpu: "8"', 'nvidia.com/gpu: "9"', 2)
    assert tail.count('nvidia.com/gpu: "9"') == 2          # the Master's request and limit
    (job,), _ = load_stream(head + tail, "job.yaml")
    return job


def test_a_job_one_gpu_over_the_cluster_queue_is_never_admitted(scale):
    job = _one_gpu_over(scale[0].documents)
    found = mine(lint_documents([job], cluster=REPO))
    assert [(f.rule, f.level) for f in found] == [("kueue-quota", ERROR)], found
    (f,) = found
    assert "never admitted" in f.message and "nvidia.com/gpu 513 in flavor gpu-g6e-48xlarge (master 9, worker 504)" \
        in f.message and "ClusterQueue training can ever hold: 512 (nominal 512, plus 0 its cohort gpu-cluster" \
        in f.message, f.message
    assert f.path == "spec.pytorchReplicaSpecs.Worker.template.spec" and f.line


QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  cohortName: shared
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: BORROW}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: lender}
spec:
  cohortName: shared
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
"""
JOB = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s, namespace: team, labels: {kueue.x-k8s.io/queue-name: QUEUE}}
spec:
  serviceName: s
  replicas: REPLICAS
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec: {containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 4}}}]}
"""


def lint_files(tmp_path, files: dict, cluster=None):
    """Lint files as one run (each file a target: references resolve across them); a folder of their own
    each time (a run renders a path once)."""
    folder = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    results = render_all(T.resolve([str(folder / n) for n in files]))
    run_docs = [d for r in results for d in r.documents]
    return mine([f for r in results for f in lint_target(r.target, r.documents, "2.3", run_docs=run_docs,
                                                          cluster=cluster)])


def job(queue="q", replicas=4):
    return JOB.replace("QUEUE", queue).replace("REPLICAS", str(replicas))


def test_borrowing_from_the_cohort_across_files_and_its_limit(tmp_path):
    # 4 x 4 = 16 GPUs: 8 of the queue's own and 8 the lender's, in another file of the run
    assert lint_files(tmp_path, {"job.yaml": job(), "queues.yaml": QUEUES.replace(", borrowingLimit: BORROW", "")}) == []
    found = lint_files(tmp_path, {"job.yaml": job(), "queues.yaml": QUEUES.replace("BORROW", "4")})
    assert [(f.rule, f.level) for f in found] == [("kueue-quota", ERROR)]      # capped by the limit: certain
    assert "nvidia.com/gpu 16 in flavor f is more than ClusterQueue cq can ever hold: 12 (nominal 8, plus 4" \
        in found[0].message
    # over what the cohort's members in the run lend, with no limit: others on the cluster may lend more
    found = lint_files(tmp_path, {"job.yaml": job(replicas=5), "queues.yaml": QUEUES.replace(", borrowingLimit: BORROW", "")})
    assert [(f.rule, f.level) for f in found] == [("kueue-quota", WARNING)]


def test_a_missing_local_queue_is_a_warning_in_the_run_and_an_error_in_the_cluster_file(tmp_path):
    queues = QUEUES.replace(", borrowingLimit: BORROW", "")
    found = lint_files(tmp_path, {"job.yaml": job("typo"), "queues.yaml": queues})
    assert [(f.rule, f.level) for f in found] == [("kueue-local-queue", WARNING)]
    assert "no LocalQueue 'typo' in the files checked (team/q)" in found[0].message
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "queues.yaml").write_text(queues)
    (tmp_path / "kdt-cluster.yaml").write_text("objects: [cluster]\n")
    declared = cluster.load(str(tmp_path / "kdt-cluster.yaml"))
    found = lint_files(tmp_path, {"job.yaml": job("typo")}, cluster=declared)
    assert [(f.rule, f.level) for f in found] == [("kueue-local-queue", ERROR)]
    assert found[0].path == 'metadata.labels["kueue.x-k8s.io/queue-name"]'
    # the cluster's objects join as the run's do: the right name queues, and the quota is checked
    assert lint_files(tmp_path, {"job.yaml": job()}, cluster=declared) == []
    assert [f.rule for f in lint_files(tmp_path, {"job.yaml": job(replicas=5)}, cluster=declared)] == ["kueue-quota"]


def test_no_queue_objects_anywhere_checks_nothing(tmp_path):
    """Other people's repositories: their queues live on the cluster. A queued job is not an error there."""
    assert lint_files(tmp_path, {"job.yaml": job("anything", replicas=1000)}) == []


def test_a_job_with_no_namespace_is_refused_only_where_every_local_queue_of_its_name_refuses(tmp_path):
    two = QUEUES.replace(", borrowingLimit: BORROW", "") + """\
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: other}
spec: {clusterQueue: small}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: small}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
"""
    unnamespaced = job(replicas=2).replace("namespace: team, ", "")
    assert lint_files(tmp_path, {"job.yaml": unnamespaced, "queues.yaml": two}) == []       # fits cq, not small
    found = lint_files(tmp_path, {"job.yaml": job(replicas=2).replace("namespace: team", "namespace: other"),
                                  "queues.yaml": two})
    assert [f.rule for f in found] == ["kueue-quota"] and "ClusterQueue small" in found[0].message


def test_the_cluster_file_objects_are_paths_that_exist_and_render(tmp_path):
    from kdt.errors import UsageError
    f = tmp_path / "c.yaml"
    for text, said in (("objects: deploy/cluster\n", "objects is a list of paths"),
                       ("objects: [nowhere]\n", "objects: nowhere does not exist")):
        f.write_text(text)
        with pytest.raises(UsageError, match=said):
            cluster.load(str(f))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    f.write_text("objects: [broken]\n")
    with pytest.raises(UsageError, match="objects: .*broken"):
        cluster.load(str(f)).objects


@pytest.mark.parametrize("rule", ["kueue-local-queue", "kueue-quota", "kueue-flavor", "kueue-topology",
                                  "gang-min-member"])
def test_each_bad_fixture_is_an_error_and_its_good_twin_is_clean(rule):
    from lint_support import FIXTURES
    from kdt.documents import load_paths
    for kind, want in (("bad", True), ("good", False)):
        docs, problems = load_paths([str(FIXTURES / rule / f"{kind}.yaml")])
        assert not problems
        errors = [f for f in lint_documents(docs) if f.rule == rule and f.level == ERROR]
        assert bool(errors) == want, (kind, [f.message for f in lint_documents(docs) if f.rule == rule])


def test_partial_admission_judges_a_batch_job_by_the_fewest_pods_it_accepts(tmp_path):
    queues = QUEUES.replace(", borrowingLimit: BORROW", "").replace("  cohortName: shared\n", "")
    batch = ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  namespace: team\n"
             "  labels: {kueue.x-k8s.io/queue-name: q}\nANN"
             "spec:\n  parallelism: 4\n  template:\n    spec:\n      restartPolicy: Never\n"
             "      containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 4}}}]\n")
    found = lint_files(tmp_path, {"job.yaml": batch.replace("ANN", ""), "queues.yaml": queues})
    assert [(f.rule, f.level) for f in found] == [("kueue-quota", ERROR)]      # 16 GPUs, 8 in the queue
    ann = "  annotations: {kueue.x-k8s.io/job-min-parallelism: \"2\"}\n"
    assert lint_files(tmp_path, {"job.yaml": batch.replace("ANN", ann), "queues.yaml": queues}) == []


def test_a_trainjob_left_to_multikueue_needs_multikueues_objects(tmp_path):
    """trainjob-multikueue: missing among the run's objects, a warning; among the cluster file's (the repository's
    declares Kueue's objects and no MultiKueue), an error; the AdmissionCheck, its config and a cluster: clean."""
    from lint_support import FIXTURES
    fx = FIXTURES / "trainjob-multikueue"
    bad, _ = load_stream((fx / "bad.yaml").read_text(), "bad.yaml")
    good, _ = load_stream((fx / "good.yaml").read_text(), "good.yaml")
    rule = ("trainjob-multikueue",)
    found = {f.name: f for f in mine(lint_documents(bad, "2.3"), rule)}
    assert found["tj"].level == WARNING and "no AdmissionCheck with controllerName kueue.x-k8s.io/multikueue in the " \
        "files checked" in found["tj"].message and found["tj"].path == "spec.managedBy"
    assert found["tj-unqueued"].level == ERROR and "without the kueue.x-k8s.io/queue-name label" in \
        found["tj-unqueued"].message
    on_repo = {f.name: f for f in mine(lint_documents(bad, "2.3", cluster=REPO), rule)}
    assert on_repo["tj"].level == ERROR and "among the cluster's objects (.kdt-cluster.yaml)" in on_repo["tj"].message
    assert mine(lint_documents(good, "2.3", cluster=REPO), rule) == []
    no_cluster = [d for d in good if d.kind != "MultiKueueCluster"]
    (f,) = mine(lint_documents(no_cluster, "2.3"), rule)
    assert "MultiKueueConfig workers lists no MultiKueueCluster there is (worker-1)" in f.message

"""The Kueue Workload a job becomes (kdt.operators.kueue.expand): pod sets, counts and requests as Kueue v0.19.2's
integrations compute them, and the admission primitives (flavor match, quota tree) as its scheduler does.
Each expectation is worked out by hand from the upstream function the module cites."""
from __future__ import annotations

import pytest

from kdt import kinds as K
from kdt.documents import load_stream
from kdt.operators.kueue import expand as XK
from kdt.expand.model import Loader
from kdt.merge_preview import expand_documents, kueue_workloads, workload_line


def docs_of(text: str):
    docs, problems = load_stream(text, "t.yaml")
    assert not problems
    return docs


def workload(text: str, trainer_version: str | None = "2.3"):
    docs = docs_of(text)
    ctx = K.ExpandContext(docs, Loader(), trainer_version, {})
    ws = [w for d in docs if (w := K.kueue_workload(d, ctx)) is not None]
    assert len(ws) == 1
    return ws[0]


PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ddp, namespace: team, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  runPolicy: {schedulingPolicy: {priorityClass: urgent}}
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      template:
        metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: rack}}
        spec:
          priorityClassName: low
          containers:
            - name: pytorch
              image: i
              resources: {limits: {nvidia.com/gpu: 2, memory: 8Gi}, requests: {cpu: 1500m}}
    Master:
      template:
        spec:
          containers: [{name: pytorch, image: i, resources: {requests: {cpu: "0.25", memory: 1G}}}]
"""


def test_a_pytorchjob_is_a_master_then_a_worker_pod_set_with_limits_standing_in_for_requests():
    w = workload(PYTORCHJOB)
    assert [(ps.name, ps.count) for ps in w.pod_sets] == [("master", 1), ("worker", 3)]   # order, not the YAML's
    master, worker = w.pod_sets
    assert master.requests() == {"cpu": 250, "memory": 10 ** 9}          # CPU in thousandths
    assert worker.requests() == {"cpu": 1500, "memory": 8 * 2 ** 30, "nvidia.com/gpu": 2}
    assert w.total() == {"cpu": 250 + 4500, "memory": 10 ** 9 + 24 * 2 ** 30, "nvidia.com/gpu": 6}
    assert worker.topology == XK.TopologyRequest(required="rack") and master.topology is None
    assert w.queue == "q" and w.namespace == "team"
    # runPolicy.schedulingPolicy.priorityClass wins over the pods' (KubeflowJob.PriorityClass)
    assert w.priority_class == ("scheduling.k8s.io", "PriorityClass", "urgent")
    obj = w.as_object()
    assert obj["metadata"] == {"generateName": "pytorchjob-ddp-", "namespace": "team"}
    assert obj["status"]["resourceRequests"][1] == {"name": "worker", "resources": {
        "cpu": "4500m", "memory": "24Gi", "nvidia.com/gpu": "6"}}
    assert obj["spec"]["podSets"][1]["topologyRequest"] == {"required": "rack"}


def test_the_workload_priority_class_label_wins_and_an_unqueued_job_has_no_workload():
    text = PYTORCHJOB.replace("labels: {kueue.x-k8s.io/queue-name: q}",
                              "labels: {kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/priority-class: wpc}")
    assert workload(text).priority_class == ("kueue.x-k8s.io", "WorkloadPriorityClass", "wpc")
    docs = docs_of(PYTORCHJOB.replace("labels: {kueue.x-k8s.io/queue-name: q}", "labels: {}"))
    assert K.kueue_workload(docs[0], K.ExpandContext(docs, Loader())) is None


@pytest.mark.parametrize("spec,per_pod", [
    # init containers run before the others: the pod needs the larger of their peak and the sum
    ({"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}],
      "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}},
                     {"name": "b", "resources": {"requests": {"cpu": "2"}}}]}, {"cpu": 4000}),
    # a sidecar (restartPolicy Always) runs beside everything after it, and adds to the containers
    ({"initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                         {"name": "i", "resources": {"requests": {"cpu": "3"}}}],
      "containers": [{"name": "a", "resources": {"requests": {"cpu": "2"}}}]}, {"cpu": 4000}),
    # pod-level requests replace the containers' cpu and memory, not the GPUs; overhead adds
    ({"resources": {"requests": {"cpu": "10", "memory": "1Gi"}},
      "overhead": {"cpu": "250m"},
      "containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"cpu": "2"}}}]},
     {"cpu": 10250, "memory": 2 ** 30, "nvidia.com/gpu": 1}),
    # not a quantity: left to the schema's finding, never a crash
    ({"containers": [{"name": "a", "resources": {"requests": {"cpu": "two", "memory": "1.5Gi"}}}]},
     {"memory": 1610612736}),
])
def test_pod_requests_as_component_helpers_computes_them(spec, per_pod):
    assert XK.pod_set("main", 1, {"spec": spec}).requests() == per_pod


def test_a_jobset_pod_set_is_replicas_times_the_smaller_of_parallelism_and_completions():
    js = {"spec": {"replicatedJobs": [
        {"name": "Driver", "template": {"spec": {"template": {"spec": {}}}}},
        {"name": "workers", "replicas": 2,
         "template": {"spec": {"parallelism": 4, "completions": 3, "template": {"spec": {}}}}}]}}
    assert [(p.name, p.count) for p in XK.jobset_pod_sets(js)] == [("driver", 1), ("workers", 6)]


RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                metadata: {annotations: {kueue.x-k8s.io/podset-preferred-topology: block}}
                spec:
                  containers: [{name: node, image: i}]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  runtimeRef: {name: rt}
  trainer:
    numNodes: 5
    resourcesPerNode: {limits: {nvidia.com/gpu: 8}, requests: {cpu: "96", memory: 768Gi}}
"""


def test_a_trainjob_is_the_pod_sets_of_the_jobset_its_runtime_becomes():
    w = workload(RUNTIME)
    (node,) = w.pod_sets
    assert (node.name, node.count) == ("node", 5)                       # numNodes -> parallelism = completions
    assert node.requests() == {"cpu": 96000, "memory": 768 * 2 ** 30, "nvidia.com/gpu": 8}
    assert node.topology == XK.TopologyRequest(preferred="block")       # the runtime's pod template
    assert node.path == ()                                              # built by the operator, not written


def test_the_merge_preview_reuses_its_own_jobset_and_says_the_workload_in_one_line():
    docs = docs_of(RUNTIME)
    expanded, findings = expand_documents(docs, trainer_version="2.3")
    assert findings == []
    ((job, w),) = kueue_workloads(docs, expanded, "2.3")
    assert job.name == "tj"
    assert workload_line(w) == ("Kueue Workload trainjob-tj-<hash> (queue q): node 5 x {cpu 96, memory 768Gi, "
                                "nvidia.com/gpu 8}; total cpu 480, memory 3840Gi, nvidia.com/gpu 40; "
                                "topology preferred block")


def test_a_statefulset_is_one_pod_group_of_its_replicas():
    w = workload("""\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  serviceName: s
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec: {priorityClassName: p, containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 8}}}]}
""")
    assert [(p.name, p.count, p.path) for p in w.pod_sets] == [("main", 1, ("spec", "template"))]
    assert w.priority_class == ("scheduling.k8s.io", "PriorityClass", "p")


@pytest.mark.parametrize("annotations,expected", [
    ({"kueue.x-k8s.io/podset-required-topology": "a", "kueue.x-k8s.io/podset-preferred-topology": "b"},
     XK.TopologyRequest(required="a")),                               # Build() reads required first
    ({"kueue.x-k8s.io/podset-unconstrained-topology": "true"}, XK.TopologyRequest(unconstrained=True)),
    ({"kueue.x-k8s.io/podset-slice-required-topology": "rack", "kueue.x-k8s.io/podset-slice-size": "4"},
     XK.TopologyRequest(slice_required="rack", slice_size="4")),
    ({"kueue.x-k8s.io/podset-slice-required-topology": "rack"}, None),  # no size: no slice layer
    ({"kueue.x-k8s.io/podset-preferred-topology": "b", "kueue.x-k8s.io/podset-group-name": "g"},
     XK.TopologyRequest(preferred="b", group="g")),
    ({"kueue.x-k8s.io/podset-slice-required-topology-constraints": '[{"topology": "block", "size": 8}, '
                                                                  '{"topology": "rack", "size": 2}]'},
     XK.TopologyRequest(constraints=("block", "rack"))),
    ({}, None),
])
def test_topology_requests_read_as_new_pod_set_topology_request_builds_them(annotations, expected):
    assert XK.topology_request({"annotations": annotations}) == expected


# ---------------------------------------------------------------- flavors
TAINTED = {"nodeLabels": {"pool": "gpu", "zone": "a"},
           "nodeTaints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                          {"key": "soft", "effect": "PreferNoSchedule"}]}


@pytest.mark.parametrize("spec,flavor,refused", [
    ({}, TAINTED, "untolerated taint nvidia.com/gpu=true:NoSchedule in flavor f"),
    ({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}, TAINTED, None),   # PreferNoSchedule ignored
    ({"tolerations": [{"key": "nvidia.com/gpu", "value": "false", "effect": "NoSchedule"}]}, TAINTED, "untolerated"),
    ({"tolerations": [{"operator": "Exists"}]}, TAINTED, None),                             # tolerates everything
    ({}, {**TAINTED, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}, None),
    ({"nodeSelector": {"pool": "cpu"}}, {"nodeLabels": {"pool": "gpu"}}, "doesn't match node affinity"),
    ({"nodeSelector": {"pool": "gpu", "disk": "ssd"}}, {"nodeLabels": {"pool": "gpu"}}, None),  # keys it names only
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}}},
     {"nodeLabels": {"zone": "a"}}, "no required nodeSelectorTerm"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
        {"matchExpressions": [{"key": "other", "operator": "Exists"}]}]}}}},                # a term on no flavor key
     {"nodeLabels": {"zone": "a"}}, None),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}]}}}},
     {"nodeLabels": {"gen": "5"}}, None),
])
def test_flavor_match_as_check_flavor_for_pod_sets(spec, flavor, refused):
    got = XK.flavor_mismatch(spec, flavor, "f")
    assert (got is None) if refused is None else (got is not None and refused in got), got


# ---------------------------------------------------------------- quota
FR = ("gpu", "nvidia.com/gpu")


def tree(*cqs, cohorts=()):
    t = XK.QuotaTree()
    for name, cohort, nominal, borrow, lend in cqs:
        t.add_cluster_queue(name, cohort, {FR: XK.Quota(nominal, borrow, lend)})
    for name, parent, nominal in cohorts:
        t.add_cohort(name, parent, {FR: XK.Quota(nominal)})
    t.link()
    return t


def test_potential_available_is_nominal_plus_what_the_cohort_can_lend_capped_by_the_borrowing_limit():
    assert tree(("a", None, 16, None, None)).potential(("cq", "a"), FR) == 16
    # b lends all of its 8: a can reach 24; with lendingLimit 3 only 3 of them
    assert tree(("a", "co", 16, None, None), ("b", "co", 8, None, None)).potential(("cq", "a"), FR) == 24
    assert tree(("a", "co", 16, None, None), ("b", "co", 8, None, 3)).potential(("cq", "a"), FR) == 19
    # a borrowingLimit caps what a takes from the cohort
    assert tree(("a", "co", 16, 2, None), ("b", "co", 8, None, None)).potential(("cq", "a"), FR) == 18
    # a lendingLimit of a's own keeps the rest for a alone: still all of it is a's to use
    assert tree(("a", "co", 16, None, 4), ("b", "co", 8, None, None)).potential(("cq", "a"), FR) == 24
    # nested cohorts: the root's own quota and a sibling cohort's queues lend too
    t = tree(("a", "left", 10, None, None), ("b", "right", 5, None, None),
             cohorts=(("left", "root", 0), ("right", "root", 0), ("root", None, 7)))
    assert t.potential(("cq", "a"), FR) == 22 and t.root(("cq", "a")) == "root"
    # a cohort named but not defined: implicit, no quota of its own
    assert tree(("a", "ghost", 4, None, None)).potential(("cq", "a"), FR) == 4


def test_a_batch_job_is_one_pod_set_that_partial_admission_may_cut_down():
    w = workload("""\
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  labels: {kueue.x-k8s.io/queue-name: q}
  annotations: {kueue.x-k8s.io/job-min-parallelism: "2"}
spec:
  parallelism: 6
  completions: 4
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
""")
    (main,) = w.pod_sets
    assert (main.name, main.count, main.min_count) == ("main", 4, 2)       # min(parallelism, completions)
    assert main.total() == {"cpu": 4000} and main.total(least=True) == {"cpu": 2000}

"""A TrainJob left to MultiKueue (`spec.managedBy: kueue.x-k8s.io/multikueue`) has MultiKueue to run it.

Trainer's controller creates nothing for a TrainJob whose `managedBy` is MultiKueue's: Kueue's MultiKueue
dispatches it to a worker cluster, through an AdmissionCheck with `controllerName: kueue.x-k8s.io/multikueue`
whose `parameters` name a MultiKueueConfig listing MultiKueueClusters (the check is inactive when none of
them exists), and only for a queued job (its `kueue.x-k8s.io/queue-name` label). Without them the TrainJob
stays as created, with no pod and no condition saying why.

The objects are those of the run and the cluster's (`.kdt-cluster.yaml` `objects`): missing among the
objects the cluster file declares, an error; missing among the run's only (no cluster file, or one that
declares no Kueue object), a warning: the cluster may have them. A TrainJob with no queue label is an
error either way: Kueue does not manage it.

Source: kubeflow/trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go ManagedBy, pkg/util/trainjob
IsManagedByExternalController; kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2/multikueue_types.go
(MultiKueueControllerName, MultiKueueConfigSpec.Clusters), admissioncheck_types.go (ControllerName,
Parameters), pkg/controller/admissionchecks/multikueue/admissioncheck.go (NoUsableClusters),
pkg/controller/jobs/trainjob/trainjob_multikueue_adapter.go; kdt.operators.kueue.facts.
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators.kueue import facts as KQ
from ...operators.trainer_v2 import facts as TV2
from ._kueue import cluster_objects
from ._util import d, lst, trainjobs

ID = "trainjob-multikueue"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("Nothing runs the TrainJob: Trainer leaves it to MultiKueue, which is not there (missing only among the "
       "objects of the run: a warning, the cluster may have them).")
_PATH = ("spec", "managedBy")


def _multikueue(objs) -> tuple[list, str]:
    """The usable MultiKueue AdmissionChecks among `objs`, and what is missing when there is none."""
    by: dict = {}
    for o in objs:
        if isinstance(o.data, dict) and o.name:
            by.setdefault(K.of(o), {})[o.name] = o
    checks = [c for c in by.get(K.ADMISSION_CHECK, {}).values()
              if c.get(("spec", "controllerName")) == KQ.MULTIKUEUE_CONTROLLER]
    if not checks:
        return [], f"no AdmissionCheck with controllerName {KQ.MULTIKUEUE_CONTROLLER}"
    usable, why = [], ""
    for c in checks:
        params = d(c.get(("spec", "parameters")))
        named = K.lookup(str(params.get("apiGroup") or KQ.GROUP), str(params.get("kind")))
        config = by.get(K.MULTIKUEUE_CONFIG, {}).get(str(params.get("name"))) if named is K.MULTIKUEUE_CONFIG else None
        if config is None:
            why = f"AdmissionCheck {c.name} names no MultiKueueConfig there is ({params.get('name')!r})"
            continue
        clusters = [str(n) for n in lst(config.get(("spec", "clusters")))]
        if not any(n in by.get(K.MULTIKUEUE_CLUSTER, {}) for n in clusters):
            why = f"MultiKueueConfig {config.name} lists no MultiKueueCluster there is ({', '.join(clusters) or 'none'})"
            continue
        usable.append(c)
    return usable, why


def check(docs, ctx):
    jobs = [j for j in trainjobs(docs) if d(j.get(("spec",))).get("managedBy") == TV2.MULTIKUEUE]
    if not jobs:
        return
    declared = [o for o in cluster_objects(ctx) if o.group == KQ.GROUP]
    run = [o for o in ctx.pool(docs) if o.group == KQ.GROUP]
    usable, why = _multikueue(declared + run)
    for job in jobs:
        if d(job.get(("metadata", "labels"))).get(KQ.QUEUE_LABEL) is None:
            yield job.finding(ID, f"spec.managedBy {TV2.MULTIKUEUE} without the {KQ.QUEUE_LABEL} label: Trainer leaves "
                                  "the TrainJob to MultiKueue and Kueue manages only queued jobs: nothing runs it", _PATH)
            continue
        if usable:
            continue
        if declared:
            yield job.finding(ID, f"spec.managedBy {TV2.MULTIKUEUE}: {why} among the cluster's objects (.kdt-cluster.yaml"
                                  "): Trainer leaves the TrainJob to MultiKueue and nothing runs it", _PATH)
        else:
            yield job.finding(ID, f"spec.managedBy {TV2.MULTIKUEUE}: {why} in the files checked: MultiKueue's objects "
                                  "must exist on the cluster, or nothing runs the TrainJob", _PATH, WARNING)

"""The batch schedulers' kinds: Kueue (every kind of v0.19), Volcano (PodGroup, Queue, Job) and the
scheduler-plugins' coscheduling (PodGroup, ElasticQuota).

Their schemas are the official CRDs of the releases in kdt.versions (KUEUE, VOLCANO, SCHEDULER_PLUGINS),
committed by kdt.schemas.crd_sets. All but Volcano's Job are objects other objects read (queues, flavors,
quotas, pod groups): role DATA. A Volcano Job is a job whose tasks are pod templates (role JOB), so lint
reads its pods. Facts: kdt.operators.scheduling.
"""
from __future__ import annotations

from typing import Iterator

from .. import versions as V
from ..fields import as_dict, as_int, as_list
from ..operators import scheduling as S
from ..operators.framework.kind import DATA, JOB, Kind, PodTemplate

_CRDS = "the official CRDs ({}), committed by kdt.schemas.crd_sets"


class _SchedulerKind(Kind):
    role = DATA

    def __init__(self, group: str, kind: str, versions: tuple[str, ...], namespaced: bool, operator: str,
                 release: str):
        self.group, self.kind, self.versions, self.namespaced = group, kind, versions, namespaced
        if group == S.KUEUE_GROUP and kind == "LocalQueue":
            self.tier = 2          # a job's queue, applied before the jobs (kdt.operators.framework.kind.JOB_TIER)
        self.operator, self.releases = operator, (release,)
        self.schema_source = _CRDS.format(f"{operator} {release}")


class VolcanoJob(_SchedulerKind):
    """`batch.volcano.sh/v1alpha1` Job: each task makes `replicas` pods of its `template`."""
    role = JOB

    def __init__(self):
        super().__init__(S.VOLCANO_BATCH_GROUP, "Job", ("v1alpha1",), True, "Volcano", V.VOLCANO)

    def pod_templates(self, doc) -> Iterator[PodTemplate]:
        spec = as_dict(doc.data.get("spec")) if isinstance(doc.data, dict) else {}
        for i, task in enumerate(as_list(spec.get(S.VOLCANO_JOB_TASKS))):
            task = as_dict(task)
            base = ("spec", S.VOLCANO_JOB_TASKS, i, "template")
            yield PodTemplate(doc, base + ("spec",), as_dict(as_dict(task.get("template")).get("spec")),
                              str(task.get("name", "")), as_int(task.get("replicas", 1), 1), base + ("metadata",))


KINDS = (
    *(_SchedulerKind(S.KUEUE_GROUP, kind, S.KUEUE_VERSIONS, namespaced, "Kueue", V.KUEUE)
      for kind, namespaced in S.KUEUE_KINDS.items()),
    _SchedulerKind(S.VOLCANO_SCHEDULING_GROUP, "PodGroup", ("v1beta1",), True, "Volcano", V.VOLCANO),
    _SchedulerKind(S.VOLCANO_SCHEDULING_GROUP, "Queue", ("v1beta1",), False, "Volcano", V.VOLCANO),
    VolcanoJob(),
    _SchedulerKind(S.COSCHEDULING_GROUP, "PodGroup", ("v1alpha1",), True, "scheduler-plugins", V.SCHEDULER_PLUGINS),
    _SchedulerKind(S.COSCHEDULING_GROUP, "ElasticQuota", ("v1alpha1",), True, "scheduler-plugins",
                   V.SCHEDULER_PLUGINS),
)

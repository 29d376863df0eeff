"""JobSet (`jobset.x-k8s.io/v1alpha2`): replicated jobs of Indexed Jobs; what Trainer v2 renders a runtime into.

Its pods carry the JobSet's labels (jobset-name, replicatedjob-name, ...; kdt.operators.jobset.facts); the Job
and JobSet controllers' rules for a local run are kdt.operators.jobset.controller.JobSetController, the pods of a
JobSet object kdt.operators.jobset.expand.pods.
"""
from __future__ import annotations

from typing import Iterator

from . import expand as XJ
from ..kueue import expand as XK
from ...fields import as_dict, as_int, as_list
from . import facts as JS
from .controller import JobSetController
from ..framework.pods import LocalPod, pod_containers
from ..framework.kind import JOB, Kind, PodTemplate


def replicated_job_templates(doc, js_spec: dict, base: tuple) -> Iterator[PodTemplate]:
    """The pod template of each replicated job of a JobSet spec at `base` in `doc` (a JobSet or a runtime)."""
    for i, rj in enumerate(as_list(js_spec.get("replicatedJobs"))):
        rj = as_dict(rj)
        job = as_dict(as_dict(rj.get("template")).get("spec"))
        ps = as_dict(as_dict(job.get("template")).get("spec"))
        n = as_int(rj.get("replicas", 1), 1) * as_int(job.get("parallelism", 1), 1)
        path = base + ("replicatedJobs", i, "template", "spec", "template")
        yield PodTemplate(doc, path + ("spec",), ps, str(rj.get("name", "")), n, path + ("metadata",))


class JobSet(Kind):
    group, kind, versions = JS.GROUP, JS.KIND, ("v1alpha2",)
    role = JOB
    ends = JS.JOBSET_ENDS
    rest = True
    operator = "JobSet"
    schema_source = ("generated from kubeflow-trainer-api's models (kdt.schemas.generate) + the CRD's enums and "
                     "CEL rules, after the JobSet webhook's defaults (kdt.operators.jobset.facts)")

    def admitted(self, data: dict) -> dict:
        return JS.admission_defaults(data)

    def reencodes(self, data: dict) -> bool:
        return JS.WEBHOOK_REENCODES

    def pod_templates(self, doc) -> Iterator[PodTemplate]:
        yield from replicated_job_templates(doc, as_dict(doc.data.get("spec")) if isinstance(doc.data, dict) else {},
                                            ("spec",))

    def own_pod_labels(self, doc, tmpl) -> dict:
        return {JS.LABEL_JOBSET_NAME: doc.name, JS.LABEL_REPLICATED_JOB: tmpl.role}

    def expand(self, doc, ctx):
        """What the JobSet and Job controllers create from a JobSet document: its headless Service, Jobs and
        pods (kdt.operators.jobset.expand), or nothing (and why) for one another controller manages."""
        return XJ.expand(doc, ctx.load, ctx.options)

    def kueue_workload(self, doc, ctx, expanded=None):
        # Kueue's jobset.x-k8s.io/jobset integration (jobs/jobset/jobset_controller.go PodSets)
        return XK.workload(self.kind, doc.data, XK.jobset_pod_sets(doc.data))

    def local_pods(self, e) -> list:
        """The pods of a JobSet object (one a TrainJob became): its Indexed Jobs' pods."""
        if not self.matches(e.obj):
            return []
        out = []
        for jp in XJ.pods(e.obj):
            doc, base = e.source, ()
            if e.base_doc is not None:
                # The JobSet's spec is the runtime's spec.template.spec after the TrainJob was merged in.
                doc, base = e.base_doc, tuple(e.base_path) + jp.path + ("spec",)
            pod = LocalPod(jp.name, jp.obj, self, e.name, jp.job, jp.completion_index, e.source,
                           job_spec=jp.job_spec, owner_obj=e.obj, facts=e.facts)
            pod_containers(pod, base, doc)
            out.append(pod)
        return out

    def controller(self, pods, ctx):
        """The JobSet release is the one the TrainJob's Trainer release ships (a JobSet of no TrainJob: the
        newest release modelled); feature gates as the JobSet controller was started with."""
        version = pods[0].facts.get("version") if pods else None
        release = JS.release_for_trainer(version) if version else JS.RELEASES[max(JS.RELEASES, key=_release_key)]
        return JobSetController(pods, pods[0].owner_obj if pods else {}, release, ctx.get("jobset_feature_gates"))


def _release_key(name: str) -> tuple:
    return tuple(int(x) for x in name.lstrip("v").split("."))


KINDS = (JobSet(),)

"""apps/v1 StatefulSet, the training path with no operator: pod `<set>-<ordinal>`, the ordinal is the rank.

Expansion: kdt.operators.statefulset.expand (the StatefulSet controller, stateful_set_utils.go). Local run: the
kubelet's restartPolicy Always and the controller recreating a lost pod under the same name
(kdt.operators.statefulset.controller.StatefulSetController).
"""
from __future__ import annotations

from typing import Iterator

from ..kueue import expand as XK
from . import expand as expand_sts
from ...fields import as_dict, as_int, as_list
from .controller import StatefulSetController
from ..framework.pods import LocalPod, pod_containers
from ..framework.kind import JOB, Kind, PodTemplate, Workload
from ...resources import pod_gpus, pod_requests, procs_per_node


class StatefulSet(Kind):
    group, kind, versions = "apps", "StatefulSet", ("v1",)
    role = JOB
    explained = (("Pod", r"^metadata\.labels\.controller-revision-hash$",
                  "the StatefulSet's current ControllerRevision (<set>-<hash of its template>, kubernetes "
                  "pkg/controller/statefulset/stateful_set_utils.go setPodRevision): a name the cluster assigns", True),)
    releases = ("1.28+",)      # the apps.kubernetes.io/pod-index label (Kubernetes 1.28)

    def pod_templates(self, doc) -> Iterator[PodTemplate]:
        spec = as_dict(doc.data.get("spec")) if isinstance(doc.data, dict) else {}
        yield PodTemplate(doc, ("spec", "template", "spec"), as_dict(as_dict(spec.get("template")).get("spec")),
                          self.kind, as_int(spec.get("replicas", 1)), ("spec", "template", "metadata"))

    def expand(self, doc, ctx):
        return expand_sts.expand(doc, ctx.load, (ctx.options or {}).get("limit"))

    def describe(self, items) -> str:
        names = ", ".join(e.name for e in items[:4]) + (f", ... {items[-1].name}" if len(items) > 4 else "")
        total = items[0].facts.get("replicas", len(items))
        return (f"{total:,} pod{'s' if total != 1 else ''} ({names}), rank = ordinal, "
                f"rendezvous {items[0].facts.get('master')}")

    def workload(self, doc, docs) -> Workload | None:
        spec = as_dict(doc.data.get("spec"))
        n = as_int(spec.get("replicas", 1), 0)
        pod = as_dict(as_dict(spec.get("template")).get("spec"))
        gpus = pod_gpus(pod)
        env = {e.get("name"): e.get("value") for c in as_list(pod.get("containers")) if isinstance(c, dict)
               for e in as_list(c.get("env")) if isinstance(e, dict)}
        procs, p = procs_per_node(env.get("NPROC_PER_NODE") or env.get("PET_NPROC_PER_NODE"), gpus)
        cpu, mem = pod_requests(pod)
        return Workload(self.kind, doc.name, str(n), n, gpus, procs, str(n * p), cpu * n, mem * n)

    def kueue_workload(self, doc, ctx, expanded=None):
        # Kueue's statefulset integration: its pods as one pod group (statefulset_pod_reconciler.go)
        return XK.workload(self.kind, doc.data, XK.pod_group_pod_sets(doc.data))

    def local_pods(self, e) -> list:
        pod = LocalPod(e.name, e.obj, self, e.source.name, e.source.name, int(e.facts.get("rank", 0)), e.source)
        pod_containers(pod, ("spec", "template", "spec"), e.source)
        # Claims the set makes per pod (volumeClaimTemplates): `<template>-<pod>` (stateful_set_utils.go).
        pod.claim_templates = {str(as_dict(t.get("metadata")).get("name"))
                               for t in as_list(as_dict(e.source.data.get("spec")).get("volumeClaimTemplates"))
                               if isinstance(t, dict)}
        return [pod]

    def controller(self, pods, ctx):
        return StatefulSetController(pods, ctx.get("max_pod_restarts", 10))


KINDS = (StatefulSet(),)

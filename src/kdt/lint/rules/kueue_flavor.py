"""A queued job's pods match a ResourceFlavor of its ClusterQueue: nodeSelector, affinity, tolerations.

Kueue gives each pod set a flavor of its ClusterQueue's resource group before it counts quota: a flavor
whose `nodeTaints` (NoSchedule, NoExecute) neither the pods nor the flavor's own `tolerations` tolerate is
skipped, and so is one whose `nodeLabels` disagree with the pods' nodeSelector or required node affinity
(only the keys the flavor names are compared). A pod set no flavor takes is never admitted ("no matching
flavor"), however much quota is free: the job stays suspended. A run with no ClusterQueue or flavors
checks nothing (kueue-local-queue).

Source: kubernetes-sigs/kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go
(checkFlavorForPodSets, flavorSelector); k8s.io/api core/v1 toleration.go (ToleratesTaint);
kdt.operators.kueue.expand.flavor_mismatch.
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR, WARNING
from ._kueue import FLAVOR_MISMATCH, pod_set_path, refusals

ID = "kueue-flavor"
LEVEL = ERROR
BASIS = "breaks"
WHY = "A pod set no flavor of the ClusterQueue takes is never admitted: the job stays suspended for good."


def check(docs, ctx):
    for doc in docs:
        k = K.of(doc)
        if k is None:
            continue
        for w, r in refusals(doc, docs, ctx, FLAVOR_MISMATCH):
            field = "tolerations" if "taint" in r.message else "nodeSelector"
            yield doc.finding(ID, f"never admitted: pod set {r.pod_set.name} matches no flavor of its ClusterQueue: "
                                  f"{r.message}" + (f" ({r.doubt})" if r.doubt else ""),
                              pod_set_path(doc, r.pod_set, "spec", field) if r.pod_set.path
                              else pod_set_path(doc, r.pod_set), ERROR if r.certain else WARNING)

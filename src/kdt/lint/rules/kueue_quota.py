"""A queued job asks for no more than its ClusterQueue can ever hold.

Kueue admits a Workload only when every pod set fits in a flavor of its ClusterQueue: the requests of
all its pods (`count` x what one pod requests, limits standing in for missing requests, init containers
as peaks: the Workload the merge preview shows) against the flavor's maximum capacity, which is the
ClusterQueue's nominal quota plus what its cohort can lend it, capped by its borrowingLimit. A Workload
above that is never admitted, on an empty cluster too: Kueue marks it "insufficient quota ... > maximum
capacity" and the job stays suspended. A resource no resourceGroup of the ClusterQueue covers is never
admitted either ("resource ... unavailable in ClusterQueue"). Pod sets are assigned in order and each
takes the first flavor that matches its pods and has room for it after the pod sets before it.

The cohort's lending counts every ClusterQueue and Cohort the run and the cluster file show. When the
cohort's members come from the run only, others may exist on the cluster and lend more: then the
finding is a warning. A run with no ClusterQueue checks nothing (kueue-local-queue).

Source: kubernetes-sigs/kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go (assignFlavors,
findFlavorForPodSets, fitsResourceQuota), pkg/cache/scheduler/resource_node.go (potentialAvailable,
localQuota, accumulateFromChild), pkg/workload/workload.go (totalRequestsFromPodSets),
pkg/workload/resources.go (UseLimitsAsMissingRequestsInPod); kdt.operators.kueue.expand.
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators.kueue import facts as KQ
from ._kueue import QUOTA, pod_set_path, refusals

ID = "kueue-quota"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("Kueue never admits a Workload its ClusterQueue cannot hold even empty: the job stays suspended for good "
       "(a warning when the cohort may have lenders the files checked do not show).")


def check(docs, ctx):
    for doc in docs:
        k = K.of(doc)
        if k is None:
            continue
        for w, r in refusals(doc, docs, ctx, QUOTA):
            n = r.pod_set
            per_pod = n.requests().get(r.resource)
            size = f"{n.count} x {KQ.show_value(r.resource, per_pod)}" if per_pod is not None else f"{n.count} pods"
            msg = f"never admitted: pod set {n.name} ({size} {r.resource}): {r.message}"
            yield doc.finding(ID, msg + (f" ({r.doubt})" if r.doubt else ""), pod_set_path(doc, n, "spec"),
                              ERROR if r.certain else WARNING)

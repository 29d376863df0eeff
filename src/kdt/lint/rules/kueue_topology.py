"""A queued job's topology request is one Kueue accepts, naming a level of its flavor's Topology.

Kueue's topology-aware scheduling reads a pod template's annotations
`kueue.x-k8s.io/podset-required-topology`, `-preferred-topology` (a level: the node label of one of the
Topology's levels) or `-unconstrained-topology` (a boolean), and the slice annotations. Its webhook
refuses a job with more than one of the three, a level that is no label name, an unconstrained value
that is no boolean, a slice size without a slice level or the other way round, a podset-group-name
without required or preferred topology. A request is admitted only into a flavor whose Topology
(`topologyName`) has every level it names, and a flavor with a Topology takes only pod sets that ask for
topology (unless all of the ClusterQueue's flavors have one): otherwise the pod set never gets a flavor
and the job stays suspended. A run with no ClusterQueue, flavor or Topology checks only the webhook's part.

Source: kubernetes-sigs/kueue v0.19.2 pkg/controller/jobframework/tas_validation.go
(ValidateTASPodSetRequest), jobframework/tas.go (NewPodSetTopologyRequest),
pkg/scheduler/flavorassigner/tas_flavorassigner.go (checkPodSetAndFlavorMatchForTAS),
pkg/cache/scheduler/tas_flavor_snapshot.go (HasLevel); apis/kueue/v1beta2/topology_types.go.
"""
from __future__ import annotations

import re

from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators.kueue import facts as KQ
from ._kueue import TOPOLOGY_MISMATCH, pod_set_path, refusals
from ._util import d

ID = "kueue-topology"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("Kueue's webhook refuses the job, or no flavor takes the pod set: the job never starts.")
# metav1validation.ValidateLabelName: an optional DNS-subdomain prefix and a name of 63 characters at most.
_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                   r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_BOOLS = ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False")   # strconv.ParseBool


def _webhook(doc, pt):
    """ValidateTASPodSetRequest on one pod template's annotations (the job is refused)."""
    if pt.metadata_path is None:
        return
    ann = {str(k): v for k, v in d(doc.get(pt.metadata_path + ("annotations",))).items()}
    base = pt.metadata_path + ("annotations",)
    modes = [a for a in KQ.TOPOLOGY_MODES if a in ann]
    if len(modes) > 1:
        yield doc.finding(ID, f"refused by Kueue's webhook: {', '.join(modes)} together (at most one topology "
                              "annotation)", base + (modes[1],))
    for a in (KQ.REQUIRED_TOPOLOGY, KQ.PREFERRED_TOPOLOGY, KQ.SLICE_REQUIRED_TOPOLOGY):
        if a in ann and (len(str(ann[a].rpartition("/")[2])) > 63 or not _NAME.match(str(ann[a]))):
            yield doc.finding(ID, f"refused by Kueue's webhook: {a} {ann[a]!r} is no node label name", base + (a,))
    if KQ.UNCONSTRAINED_TOPOLOGY in ann and str(ann[KQ.UNCONSTRAINED_TOPOLOGY]) not in _BOOLS:
        yield doc.finding(ID, f"refused by Kueue's webhook: {KQ.UNCONSTRAINED_TOPOLOGY} must be a boolean",
                          base + (KQ.UNCONSTRAINED_TOPOLOGY,))
    if (KQ.SLICE_REQUIRED_TOPOLOGY in ann) != (KQ.SLICE_SIZE in ann):
        have = KQ.SLICE_REQUIRED_TOPOLOGY if KQ.SLICE_REQUIRED_TOPOLOGY in ann else KQ.SLICE_SIZE
        other = KQ.SLICE_SIZE if have == KQ.SLICE_REQUIRED_TOPOLOGY else KQ.SLICE_REQUIRED_TOPOLOGY
        yield doc.finding(ID, f"refused by Kueue's webhook: {have} without {other}", base + (have,))
    if KQ.SLICE_SIZE in ann:
        size = str(ann[KQ.SLICE_SIZE])
        if not re.fullmatch(r"[+-]?[0-9]+", size) or int(size) < 1:
            yield doc.finding(ID, f"refused by Kueue's webhook: {KQ.SLICE_SIZE} {size!r} must be a whole number of "
                                  "at least 1", base + (KQ.SLICE_SIZE,))
    if KQ.PODSET_GROUP in ann and not (KQ.REQUIRED_TOPOLOGY in ann or KQ.PREFERRED_TOPOLOGY in ann):
        yield doc.finding(ID, f"refused by Kueue's webhook: {KQ.PODSET_GROUP} without {KQ.REQUIRED_TOPOLOGY} or "
                              f"{KQ.PREFERRED_TOPOLOGY}", base + (KQ.PODSET_GROUP,))


def check(docs, ctx):
    for doc in docs:
        k = K.of(doc)
        if k is None or k.role not in (K.JOB, K.PODS, K.RUNTIME):
            continue
        for pt in K.pod_templates(doc):
            yield from _webhook(doc, pt)
        if k.role == K.RUNTIME:
            continue
        for w, r in refusals(doc, docs, ctx, TOPOLOGY_MISMATCH):
            ps = r.pod_set
            levels = ps.topology.levels() if ps.topology is not None else []
            path = (pod_set_path(doc, ps, "metadata", "annotations", levels[0][0]) if ps.path and levels
                    else pod_set_path(doc, ps))
            yield doc.finding(ID, f"never admitted: pod set {ps.name}: {r.message}" + (f" ({r.doubt})" if r.doubt else ""),
                              path, ERROR if r.certain else WARNING)

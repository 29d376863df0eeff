"""Every pod of a PyTorchJob or StatefulSet gets a hostname of at most 63 characters.

A pod's hostname (and, for a PyTorchJob, the Service of each replica) is a
DNS label: at most 63 characters. The longest comes with the highest index:
`<job>-<replica type>-<index>` (PyTorchJob), `<statefulset>-<ordinal>`. A name
that fits at 2 nodes can fail at 64: the operator or the StatefulSet
controller then cannot create the pod, and the job starts without it.

Source: kubernetes apimachinery validation IsDNS1123Label (63); training-operator
pkg/controller.v1/common/pod.go (pod and service name GenGeneralName
`<job>-<rtype>-<index>`); apps/v1 StatefulSet pod names `<name>-<ordinal>`.
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import ERROR
from ..pods import as_int
from ._util import d, replica_specs

ID = "pod-hostname-length"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The API server refuses the pods whose hostname passes 63 characters: the operator cannot create "
       "them.")
MAX = 63


def check(docs, ctx):
    for doc in docs:
        if K.PYTORCHJOB.matches(doc):
            for rtype, spec in replica_specs(doc).items():
                n = as_int(d(spec).get("replicas", 1)) or 1
                longest = f"{doc.name}-{str(rtype).lower()}-{n - 1}"
                if len(longest) > MAX:
                    yield doc.finding(ID, f"pod {longest!r} ({len(longest)} characters) is longer than a hostname "
                                          f"may be ({MAX}): shorten the job's name", ("metadata", "name"))
        elif K.STATEFULSET.matches(doc):
            n = as_int(doc.get(("spec", "replicas"), 1)) or 1
            longest = f"{doc.name}-{n - 1}"
            if len(longest) > MAX:
                yield doc.finding(ID, f"pod {longest!r} ({len(longest)} characters) is longer than a hostname may be "
                                      f"({MAX}): shorten the StatefulSet's name", ("metadata", "name"))

"""No `hostPath` volumes.

A hostPath ties the pod to one node's disk (checkpoints vanish when the pod
moves) and exposes the node's filesystem. Use a PersistentVolumeClaim, or an
emptyDir for scratch space.
"""
from ...findings import WARNING
from ..pods import pod_templates
from ._util import d, lst

ID = "host-path"
LEVEL = WARNING


def check(docs, ctx):
    for doc in docs:
        for pt in pod_templates(doc):
            for i, v in enumerate(lst(pt.spec.get("volumes"))):
                if "hostPath" in d(v):
                    yield doc.finding(ID, f"volume {d(v).get('name')!r} is a hostPath ({d(d(v)['hostPath']).get('path')})",
                                      pt.path + ("volumes", i, "hostPath"))

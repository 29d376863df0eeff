"""No host network, PID or IPC namespace.

`hostNetwork`, `hostPID` and `hostIPC` share the node's namespaces: ports
collide between jobs on one node, and the pod sees every process. Use the
RDMA/SR-IOV device plugins for fast networking and a memory-backed /dev/shm for IPC.
"""
from ...findings import WARNING
from ..pods import pod_templates

ID = "host-namespace"
LEVEL = WARNING


def check(docs, ctx):
    for doc in docs:
        for pt in pod_templates(doc):
            for key in ("hostNetwork", "hostPID", "hostIPC"):
                if pt.spec.get(key) is True:
                    yield doc.finding(ID, f"{key}: true shares the node's namespace", pt.path + (key,))

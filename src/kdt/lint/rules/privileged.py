"""No privileged containers.

`securityContext.privileged: true` gives the container every device and
capability of the node. GPUs and RDMA devices come through device plugins; a
training job does not need it.
"""
from ...findings import ERROR
from ..pods import all_containers
from ._util import d

ID = "privileged"
LEVEL = ERROR


def check(docs, ctx):
    for doc in docs:
        for pt, path, c in all_containers(doc):
            if d(c.get("securityContext")).get("privileged") is True:
                yield doc.finding(ID, f"container {c.get('name')!r} is privileged", path + ("securityContext", "privileged"))

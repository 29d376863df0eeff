"""No `allowPrivilegeEscalation: true`.

It lets a process gain more privileges than its parent (setuid binaries); a
training process never needs it.
"""
from ...findings import WARNING
from ..pods import all_containers
from ._util import d

ID = "privilege-escalation"
LEVEL = WARNING


def check(docs, ctx):
    for doc in docs:
        for pt, path, c in all_containers(doc):
            if d(c.get("securityContext")).get("allowPrivilegeEscalation") is True:
                yield doc.finding(ID, f"container {c.get('name')!r} allows privilege escalation",
                                  path + ("securityContext", "allowPrivilegeEscalation"))

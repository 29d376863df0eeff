"""Workers restart in place only with a c10d (or etcd) rendezvous, not torchrun's static one.

Without `--rdzv-backend` torchrun uses its static rendezvous: the master
address and node rank come from PET_MASTER_ADDR/PET_NODE_RANK (a PyTorchJob
without elasticPolicy, a TrainJob: Trainer injects exactly these). Static
rendezvous never re-forms the group: each agent restarts its own workers and
counts its own restarts, and the store keys of a restart carry that count.
When one node needs an extra attempt (its fresh worker reached the peer before
the peer's old worker was gone), the counts diverge and the new group waits
for ranks that will never come: a hang until the process-group timeout, with
nothing in the logs. Measured here: 2 of 6 trials hung with warm workers, 0
of 5 with torchrun's slower fresh ones; the race is the same. Use
`--rdzv-backend=c10d` for in-place restarts (the PyTorchJob and StatefulSet
recipes do), or restart nothing in place and let the operator restart the pods
(the TrainJob recipes: JobSet's failurePolicy).

Source: torch 2.13 torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py (no
re-rendezvous; the agent's store is shared) and elastic/agent/server/api.py
(_restart_workers increments the agent's own restart count); pytorch/pytorch#135712
(per-agent restart counts are not globally consistent).
"""
from ... import kinds as K
from ...findings import WARNING
from ..pods import all_containers
from ._torchrun import rdzv_backend, restarts
from ._util import d

ID = "torchrun-static-restart"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The first run works; an in-place restart may hang when the nodes' restart counts diverge.")


def check(docs, ctx):
    for doc in docs:
        if K.TRAINJOB.matches(doc):
            trainer = d(doc.get(("spec", "trainer")))
            r = restarts(doc, trainer)
            if r and rdzv_backend(doc, trainer) == "static":
                yield doc.finding(ID, f"{r[1]} with torchrun's static rendezvous (Trainer's PET_* env, no "
                                      f"--rdzv-backend): the nodes' restart counts can diverge and the next group "
                                      f"hang; leave restarts to JobSet's failurePolicy or use --rdzv-backend=c10d",
                                  ("spec", "trainer", "command"))
            continue
        for pt, path, c in all_containers(doc, init=False):
            if pt is None:
                continue
            r = restarts(doc, c)
            if r and rdzv_backend(doc, c) == "static":
                yield doc.finding(ID, f"{r[1]} with torchrun's static rendezvous (no --rdzv-backend): the nodes' "
                                      f"restart counts can diverge and the next group hang; use "
                                      f"--rdzv-backend=c10d (see overlays/ddp)",
                                  path + (("command",) if "command" in c else ("args",) if "args" in c else ()))

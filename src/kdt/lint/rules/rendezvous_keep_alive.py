"""A large job's c10d rendezvous does not declare live nodes dead.

Every agent writes a heartbeat into the rendezvous state on the store
(`keep_alive_interval`, default 5 s) and every agent removes the nodes whose
last heartbeat is older than `keep_alive_interval x keep_alive_max_attempt`
(default 15 s). Each write is a compare-and-set of the whole state, so with
many nodes the writes collide and a heartbeat can take longer to land than a
short expiry allows: live nodes are removed, add themselves again, are removed
again, and the group never forms (no error, agents spinning until the join
timeout). A short expiry finds a lost node sooner, which pays off in a job of a
few nodes; at 16 nodes and more it is the risk.

Warns when a job of `min_nodes` nodes or more (option, default 16) sets an
expiry shorter than torch's default 15 s. Measured by bench/rendezvous.py on
2 cores (README "Rendezvous at scale"): with 1 s x 2, 16 agents never formed a
group (live nodes removed 274 times in 90 s) while 5 s x 3 formed it in 62 s,
and 8 agents formed with either; the expiry that formed a group grew with the
count (30 s at 32 agents, 90 s at 64), an upper bound for real nodes that do
not share two cores, so the rule only flags what is below torch's default.

Source: torch 2.13 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py
(_sanitize removes nodes whose heartbeat is older than keep_alive_interval *
keep_alive_max_attempt; create_handler defaults 5 and 3; state writes are
compare_set of the pickled state in c10d_rendezvous_backend.py).
"""
from __future__ import annotations

from ...findings import WARNING
from ..pods import all_containers, as_int
from ._torchrun import launches_distributed, node_count, rdzv_backend, rdzv_settings, setting_path

ID = "rendezvous-keep-alive"
LEVEL = WARNING
BASIS = "risk"
WHY = ("Whether heartbeats collide depends on the number of nodes and the store's load; measured, not "
       "certain.")
OPTIONS = {"min_nodes": 16}

DEFAULT_INTERVAL, DEFAULT_ATTEMPTS = 5, 3      # torch create_handler
DEFAULT_EXPIRY = DEFAULT_INTERVAL * DEFAULT_ATTEMPTS


def check(docs, ctx):
    min_nodes = int(ctx.opt("min_nodes") or OPTIONS["min_nodes"])
    pool = ctx.pool(docs)
    for doc in docs:
        for pt, path, c in all_containers(doc, init=False):
            if pt is not None and not launches_distributed(c):
                continue
            if rdzv_backend(doc, c) != "c10d":
                continue
            settings, where = rdzv_settings(doc, c)
            if "keep_alive_interval" not in settings and "keep_alive_max_attempt" not in settings:
                continue
            interval = as_int(settings.get("keep_alive_interval", DEFAULT_INTERVAL))
            attempts = as_int(settings.get("keep_alive_max_attempt", DEFAULT_ATTEMPTS))
            nodes = node_count(doc, c, pt.replicas if pt is not None else None, pool)
            if interval is None or attempts is None or not nodes or nodes < min_nodes:
                continue
            expiry = interval * attempts
            if expiry >= DEFAULT_EXPIRY:
                continue
            field = setting_path(path, c, "keep_alive_interval" if "keep_alive_interval" in settings
                                 else "keep_alive_max_attempt", where)
            yield doc.finding(ID, f"keep_alive_interval={interval} x keep_alive_max_attempt={attempts} ({where}) "
                                  f"declares a node dead after {expiry} s of silence: with {nodes} nodes heartbeats "
                                  f"collide on the store and live nodes are removed over and over, so the group "
                                  f"may never form (16 agents never did at 1 s x 2 in bench/rendezvous.py); use "
                                  f"torch's defaults (5 x 3 = {DEFAULT_EXPIRY} s) or longer", field)
            break                            # one finding a job: its replica types share the setting

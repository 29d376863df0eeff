"""The fewest replica groups a torchft job may train with is not above the groups it has.

The Lighthouse forms no quorum with fewer than its `--min_replicas` groups, and
trainkit commits no step with fewer than `TRAINKIT_FT_MIN_GROUPS` (torchft's
`min_replica_size`): set above the job's groups (the pods: replicas, `numNodes`),
the job starts, every pod waits, and no step is ever taken, with nothing but
quorum messages in the logs. `NUM_REPLICA_GROUPS` must be the number of groups
too (trainkit refuses an id past it). Each group is compared with the Lighthouse
its `TORCHFT_LIGHTHOUSE` names (the Service of the same name, the pods it selects).

Source: torchft 0.2.0 src/lighthouse.rs quorum_compute ("New quorum not ready, only have N
participants, need min_replicas"), torchft/manager.py should_commit (enough_replicas);
training/trainkit/args.py check_ft_args.
"""
from __future__ import annotations

import re

from ... import kinds as K
from ...findings import ERROR
from ...operators.torchft import facts as TFT
from ..pods import all_containers, as_int, command_line
from ._torchft import group_pods, lighthouse_url, runs_lighthouse, setting, url_host_port
from ._torchrun import env_value, flag
from ._util import d

ID = "torchft-min-groups"
LEVEL = ERROR
BASIS = "breaks"
WHY = ('Accepted and started, but no quorum forms or no step commits: every pod waits forever.')


def _lighthouse_minimum(docs, host: str | None):
    """(min_replicas, doc, path) of the Lighthouse behind Service `host` in `docs`, or None."""
    svc = next((s for s in docs if K.SERVICE.matches(s) and s.name == (host or "").split(".")[0]), None)
    sel = d(d(svc.get(("spec",))).get("selector")) if svc is not None else {}
    for doc in docs:
        for pt, path, c in all_containers(doc, init=False):
            if not runs_lighthouse(c):
                continue
            labels = d(doc.get(pt.metadata_path + ("labels",))) if pt is not None and pt.metadata_path else {}
            if svc is not None and sel and any(labels.get(k) != v for k, v in sel.items()):
                continue
            v = flag(command_line(c), (TFT.LIGHTHOUSE_MIN_REPLICAS,))
            m = re.fullmatch(r"\$\((\w+)\)", v or "")
            if m:
                v = env_value(c, m.group(1))
            if as_int(v) is not None:
                return as_int(v), doc, path + (("args",) if "args" in c else ("command",))
    return None


def check(docs, ctx):
    pool = ctx.pool(docs)
    for gp in group_pods(docs, pool):
        n = gp.groups
        if n is None:
            continue
        where = gp.where if gp.owner is K.TRAINJOB else gp.where + ("env",)
        low, _ = setting(gp.container, TFT.ENV_MIN_GROUPS, ("--min-replica-groups",))
        if as_int(low) is not None and as_int(low) > n:
            yield gp.doc.finding(ID, f"{TFT.ENV_MIN_GROUPS} {low} is above the job's {n} replica group(s): no step "
                                     "would ever commit", where, level=LEVEL)
        total, _ = setting(gp.container, TFT.ENV_NUM_GROUPS, ("--num-replica-groups",))
        if as_int(total) is not None and as_int(total) != n:
            yield gp.doc.finding(ID, f"{TFT.ENV_NUM_GROUPS} {total} but the job has {n} pod(s), one group each",
                                 where, level=LEVEL)
        url, _ = lighthouse_url(gp.container)
        found = _lighthouse_minimum(pool, url_host_port(url)[0] if url else None)
        if found and found[0] > n:
            m, lh, path = found
            yield lh.finding(ID, f"the Lighthouse's {TFT.LIGHTHOUSE_MIN_REPLICAS} {m} is above the {n} replica "
                                 f"group(s) of {gp.doc.kind}/{gp.doc.name}: no quorum would ever form", path,
                             level=LEVEL)

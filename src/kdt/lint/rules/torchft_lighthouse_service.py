"""A torchft replica group names a Lighthouse whose Service is there.

Every group asks the Lighthouse at `TORCHFT_LIGHTHOUSE` (or `--lighthouse`) for
each step's quorum; a group without it does not start, and one whose address
matches no Service (a renamed Lighthouse, a prefix kustomize added to the Service
but not to the URL, another port) retries its connection until it gives up.
Reported as an error when the rendered objects hold a Lighthouse (a workload
running `torchft_lighthouse`) but the address reaches no Service of it, as a
warning when they hold none (it may be deployed on its own). An address by IP,
or in another namespace than the Service's, is not checked.

Source: torchft 0.2.0 torchft/manager.py (the Lighthouse address from
TORCHFT_LIGHTHOUSE); training/trainkit/args.py; components/torchft/lighthouse.
"""
from __future__ import annotations

import ipaddress

from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators.torchft import facts as TFT
from ..pods import all_containers
from ._torchft import group_pods, lighthouse_url, runs_lighthouse, url_host_port
from ._util import d, lst

ID = "torchft-lighthouse-service"
LEVEL = ERROR
BASIS = "breaks"
WHY = ('The groups start and cannot reach the Lighthouse: none trains. A warning when the stream holds no Lighthouse at all, since it may be deployed on its own.')


def _ports(svc) -> set:
    out = set()
    for p in lst(svc.get(("spec", "ports"))):
        out |= {d(p).get("port")}
    return out


def check(docs, ctx):
    pool = ctx.pool(docs)
    has_lighthouse = any(runs_lighthouse(c) for doc in pool for _, _, c in all_containers(doc, init=False))
    for gp in group_pods(docs, pool):
        url, entry = lighthouse_url(gp.container)
        where = gp.where if gp.owner is K.TRAINJOB else gp.where + (("env",) if entry is not None else ())
        if not url:
            yield gp.doc.finding(ID, f"a replica group without {TFT.ENV_LIGHTHOUSE} (or --lighthouse): it does not "
                                     "start", where, level=LEVEL)
            continue
        host, port = url_host_port(url)
        if host is None or "$(" in url:
            continue
        try:
            ipaddress.ip_address(host)
            continue
        except ValueError:
            pass
        name, _, rest = host.partition(".")
        ns = rest.split(".")[0] if rest else None
        svcs = [s for s in pool if K.SERVICE.matches(s) and s.name == name and (ns is None or s.namespace in (None, ns))]
        if svcs and any(port in _ports(s) for s in svcs):
            continue
        level = ERROR if has_lighthouse else WARNING
        what = (f"Service {name!r} has no port {port}" if svcs else f"no Service {name!r} in the rendered objects")
        yield gp.doc.finding(ID, f"{TFT.ENV_LIGHTHOUSE} {url}: {what}"
                                 + ("" if has_lighthouse else " (none of them runs a Lighthouse: deployed elsewhere?)"),
                             where, level=level)

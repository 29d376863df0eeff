"""A StatefulSet's rendezvous address names one pod, not the bare headless Service.

The headless Service name resolves to the IPs of all ready pods in random
order: each rank may pick a different "master". Use the stable name of pod 0,
`<statefulset>-0.<service>` (optionally with the namespace and
`.svc.cluster.local`). Checked in MASTER_ADDR, PET_MASTER_ADDR,
PET_RDZV_ENDPOINT and `--master_addr`/`--rdzv_endpoint`/`--rdzv-endpoint`.

Source: kubernetes DNS for Services and Pods (headless Service A records, pod hostname.subdomain).
"""
from ... import kinds as K
from ...findings import ERROR
from ..pods import containers, pod_templates
from ._util import d, lst

ID = "statefulset-rdzv-address"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("Each rank may resolve a different pod as master: the rendezvous splits or hangs.")
_ENV = ("MASTER_ADDR", "PET_MASTER_ADDR", "PET_RDZV_ENDPOINT", "RDZV_ENDPOINT")
_FLAGS = ("--master_addr", "--master-addr", "--rdzv_endpoint", "--rdzv-endpoint")


def _host(v: str) -> str:
    return v.strip().split(":")[0].split("/")[0]


def _bare(host: str, services: set[str], ns: str) -> bool:
    parts = host.split(".")
    if parts[0] not in services:
        return False
    rest = parts[1:]
    return rest in ([], [ns], [ns, "svc"], [ns, "svc", "cluster", "local"]) or (len(rest) >= 1 and rest[-1:] == ["local"] and rest[0] != parts[0])


def check(docs, ctx):
    headless = {dd.name for dd in docs if K.SERVICE.matches(dd) and dd.get(("spec", "clusterIP")) == "None"}
    for doc in docs:
        if not K.STATEFULSET.matches(doc):
            continue
        services = headless | {str(doc.get(("spec", "serviceName")) or "")} - {""}
        ns = doc.namespace or "default"
        for pt in pod_templates(doc):
            for path, c in containers(pt, init=False):
                for i, e in enumerate(lst(c.get("env"))):
                    e = d(e)
                    if e.get("name") in _ENV and isinstance(e.get("value"), str) and _bare(_host(e["value"]), services, ns):
                        yield doc.finding(ID, f"{e['name']}={e['value']} is the headless Service: it resolves to every pod; "
                                              f"use {doc.name}-0.{_host(e['value']).split('.')[0]}", path + ("env", i, "value"))
                for key in ("command", "args"):
                    toks = " ".join(str(t) for t in lst(c.get(key))).split()
                    for j, t in enumerate(toks):
                        flag, _, val = t.partition("=")
                        if flag in _FLAGS:
                            val = val or (toks[j + 1] if j + 1 < len(toks) else "")
                            if val and _bare(_host(val.strip("'\"")), services, ns):
                                yield doc.finding(ID, f"{flag} {val} is the headless Service: use "
                                                      f"{doc.name}-0.{_host(val).split('.')[0]}", path + (key,))

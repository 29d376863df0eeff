"""A torch runtime keeps JobSet's default network: no `network.subdomain`, no `enableDNSHostnames: false`.

PET_MASTER_ADDR is `<trainjob>-node-0-0.<trainjob>`: it resolves only through
the headless Service JobSet names after the JobSet (the TrainJob) with DNS
hostnames enabled. Another subdomain or disabled hostnames leave the workers
unable to find node 0.

Source: trainer v2.1/v2.3 pkg/runtime/framework/plugins/torch/torch.go (PET_MASTER_ADDR);
jobset v0.8 pkg/webhooks/jobset_webhook.go Default (enableDNSHostnames defaults true, subdomain = JobSet name).
"""
from ...findings import ERROR
from ._util import is_torch_runtime, runtimes

ID = "runtime-torch-network"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("PET_MASTER_ADDR does not resolve: the workers never find node 0.")


def check(docs, ctx):
    for rt in runtimes(docs):
        if not is_torch_runtime(rt):
            continue
        base = ("spec", "template", "spec", "network")
        if rt.get(base + ("subdomain",)):
            yield rt.finding(ID, "network.subdomain breaks PET_MASTER_ADDR (<trainjob>-node-0-0.<trainjob>)",
                             base + ("subdomain",))
        if rt.get(base + ("enableDNSHostnames",)) is False:
            yield rt.finding(ID, "enableDNSHostnames: false: pods cannot resolve node 0 by name",
                             base + ("enableDNSHostnames",))

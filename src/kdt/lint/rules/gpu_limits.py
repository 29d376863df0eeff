"""GPU requests come with equal limits.

GPUs are extended resources: Kubernetes rejects a pod whose GPU request has no
limit or a different one ("must be equal to limit"). Set the limit (a limit
alone is enough: the request defaults to it).

Source: kubernetes pkg/apis/core/validation/validation.go ValidateResourceRequirements
(extended resources: request must equal limit).
"""
from ...findings import ERROR
from ..pods import GPU_SUFFIX, all_containers, resources
from ._util import d

ID = "gpu-limits"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The API server refuses a pod whose GPU request has no equal limit (validateResourceRequirements: "
       "extended resources are not overcommitted).")


def check(docs, ctx):
    for doc in docs:
        for pt, path, c in all_containers(doc):
            res = resources(c)
            key = "resourcesPerNode" if "resourcesPerNode" in c else "resources"
            req, lim = d(res.get("requests")), d(res.get("limits"))
            for name, v in req.items():
                if str(name).endswith(GPU_SUFFIX) and str(lim.get(name)) != str(v):
                    got = "no limit" if name not in lim else f"limit {lim.get(name)}"
                    yield doc.finding(ID, f"{name} request {v} with {got}: GPU requests must equal limits",
                                      path + (key, "requests", name))

"""Override and patch targets exist in the runtime: replicated jobs and containers.

A `podTemplateOverrides[].targetJobs[].name` (2.1) or
`runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].name`
(2.2+) must name a replicated job of the referenced runtime, and each
container or initContainer named in the override must exist in that job.
An override of a missing job or container is dropped without a word.

Checked only when the runtime is in the same stream.

Source: trainer v2.1 pkg/runtime/core/trainingruntime.go (overrides applied by target job name),
v2.3 runtimePatches (merged by replicated job and container name).
"""
from ...findings import ERROR
from ..pods import job_containers, runtime_for, runtime_jobs
from ._util import d, lst, trainjobs

ID = "trainjob-override-targets"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("Trainer drops an override of a missing job or container without a word.")


def overrides(job):
    """(path to pod spec override or None, [(path of job name, job name)]) for each override/patch."""
    for i, o in enumerate(lst(job.get(("spec", "podTemplateOverrides")))):
        names = [(("spec", "podTemplateOverrides", i, "targetJobs", j, "name"), d(t).get("name"))
                 for j, t in enumerate(lst(d(o).get("targetJobs")))]
        yield ("spec", "podTemplateOverrides", i, "spec"), d(d(o).get("spec")), names
    for i, p in enumerate(lst(job.get(("spec", "runtimePatches")))):
        base = ("spec", "runtimePatches", i, "trainingRuntimeSpec", "template", "spec", "replicatedJobs")
        for j, rj in enumerate(lst(d(d(d(d(p).get("trainingRuntimeSpec")).get("template")).get("spec")).get("replicatedJobs"))):
            ps = d(d(d(d(d(rj).get("template")).get("spec")).get("template")).get("spec"))
            yield base + (j, "template", "spec", "template", "spec"), ps, [(base + (j, "name"), d(rj).get("name"))]


def check(docs, ctx):
    for job in trainjobs(docs):
        rt = runtime_for(job, ctx.pool(docs))
        if rt is None:
            continue
        jobs = {str(d(j).get("name")): j for j in runtime_jobs(rt)}
        for ps_path, ps, names in overrides(job):
            for path, name in names:
                if name not in jobs:
                    yield job.finding(ID, f"replicated job {name!r} is not in runtime {rt.name!r} "
                                          f"(it has {', '.join(jobs) or 'none'})", path)
                    continue
                have = job_containers(jobs[name])
                for key in ("containers", "initContainers"):
                    for k, c in enumerate(lst(ps.get(key))):
                        cname = d(c).get("name")
                        if cname not in have:
                            yield job.finding(ID, f"{key[:-1]} {cname!r} is not in job {name!r} of runtime {rt.name!r}",
                                              ps_path + (key, k, "name"))

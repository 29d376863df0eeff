"""Names are short enough for the pod names JobSet generates (63 characters).

A TrainJob's pods are named `<trainjob>-<replicatedJob>-<jobIndex>-<podIndex>-<5 random>`;
the JobSet webhook refuses the JobSet when the longest would exceed 63
characters, so the TrainJob never starts. Checked for TrainJobs whose runtime
is in the stream (with numNodes) and for JobSets.

Source: jobset v0.8 pkg/webhooks/jobset_webhook.go ValidateCreate (podNameTooLongErrorMsg),
pkg/util/placement GenPodName.
"""
from ... import kinds as K
from ...findings import ERROR
from ...operators.jobset import facts as JS
from ...operators.trainer_v2 import facts as TV2
from ..pods import as_int, runtime_for, runtime_jobs
from ._util import d, lst, trainjobs

ID = "trainjob-name-length"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The JobSet webhook refuses the JobSet Trainer creates: the TrainJob never starts.")


def _longest(name, rjobs, nodes):
    worst = ""
    for rj in rjobs:
        rj = d(rj)
        rname = str(rj.get("name", ""))
        reps = as_int(rj.get("replicas", 1)) or 1
        comp = as_int(d(d(rj.get("template")).get("spec")).get("completions")) or \
            as_int(d(d(rj.get("template")).get("spec")).get("parallelism")) or 1
        if rname == TV2.NODE and nodes:
            comp = nodes
        pod = JS.pod_name(name, rname, reps - 1, comp - 1)
        if len(pod) > len(worst):
            worst = pod
    return worst


def check(docs, ctx):
    for job in trainjobs(docs):
        rt = runtime_for(job, ctx.pool(docs))
        rjobs = runtime_jobs(rt) if rt is not None else [{"name": TV2.NODE}]
        nodes = as_int(job.get(("spec", "trainer", "numNodes"))) or \
            (as_int(rt.get(("spec", "mlPolicy", "numNodes"))) if rt is not None else None) or 1
        pod = _longest(job.name, rjobs, nodes)
        if len(pod) > JS.MAX_NAME:
            yield job.finding(ID, f"pod names reach {len(pod)} characters ({pod}): shorten the TrainJob name "
                                  f"to at most {len(job.name) - (len(pod) - JS.MAX_NAME)}", ("metadata", "name"))
    for doc in docs:
        if K.JOBSET.matches(doc):
            pod = _longest(doc.name, lst(doc.get(("spec", "replicatedJobs"))), None)
            if len(pod) > JS.MAX_NAME:
                yield doc.finding(ID, f"pod names reach {len(pod)} characters ({pod})", ("metadata", "name"))

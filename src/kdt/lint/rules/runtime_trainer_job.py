"""A runtime's trainer replicated job is named `node`, has `replicas: 1`, the ancestor label and a `node` container.

The torch plugin finds the trainer by the label
`trainer.kubeflow.org/trainjob-ancestor-step: trainer` and its container by
the name `node`; PET_MASTER_ADDR is `<trainjob>-node-0-0.<trainjob>`, so the
job must be named `node` (checked for torch runtimes; MPI runtimes put the
ancestor label on their launcher). Nodes scale through the Job's parallelism, so the
runtime webhook rejects ancestor-labelled jobs with replicas other than 1, and
those without their required container (`node`, `dataset-initializer`,
`model-initializer`).

Its basis is "breaks": a trainer job not named `node`, or without the ancestor label, is accepted by the API
server and the runtime webhook (validateReplicatedJobs reads only the replicas and the container of an
ancestor-labelled job) and the TrainJob then runs without the torch plugin's rendezvous: silent breakage. The
webhook's own refusals (replicas, the container) are reported with the basis "rejected" on each finding
(`extra["basis"]`), so the live judge (kdt.live.verdicts) counts only those as the server's refusals.

Source: trainer v2.1/v2.3 pkg/webhooks/trainingruntime_webhook.go validateReplicatedJobs;
pkg/constants/constants.go (LabelTrainJobAncestor, Node); plugins/torch/torch.go.
"""
from ...findings import ERROR
from ...operators.trainer_v2 import facts as TV2
from ._util import d, is_torch_runtime, lst, rejections_of, runtimes

ID = "runtime-trainer-job"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("The torch plugin finds no trainer job or container to configure (silent breakage), or the runtime webhook "
       "refuses it (those findings carry the basis \"rejected\").")


def check(docs, ctx):
    for rt in runtimes(docs):
        if isinstance(rt.data, dict):
            for f in rejections_of(rt, TV2.runtime_rejections(rt.data), ID):   # the runtime webhook's
                f.extra["basis"] = "rejected"     # kdt.lint.engine.BASIS_KEY
                yield f
        base = ("spec", "template", "spec", "replicatedJobs")
        jobs = lst(rt.get(base))
        trainer_idx = []
        for i, rj in enumerate(jobs):
            rj = d(rj)
            anc = d(d(d(rj.get("template")).get("metadata")).get("labels")).get(TV2.ANCESTOR_LABEL)
            if anc == TV2.ANCESTOR_TRAINER or rj.get("name") == TV2.NODE:
                trainer_idx.append(i)
            if anc is not None and anc not in TV2.ANCESTORS:
                yield rt.finding(ID, f"ancestor label value {anc!r} is not one of {', '.join(TV2.ANCESTORS)}",
                                 base + (i, "template", "metadata", "labels", TV2.ANCESTOR_LABEL))
        if not jobs or not is_torch_runtime(rt):
            continue   # the name `node` and PET_MASTER_ADDR are the torch plugin's
        if not trainer_idx:
            yield rt.finding(ID, f"no replicated job named {TV2.NODE!r} with label {TV2.ANCESTOR_LABEL}: trainer",
                             base)
        for i in trainer_idx:
            rj = d(jobs[i])
            labels = d(d(d(rj.get("template")).get("metadata")).get("labels"))
            if rj.get("name") != TV2.NODE:
                yield rt.finding(ID, f"the trainer replicated job is named {rj.get('name')!r}; it must be {TV2.NODE!r} "
                                     "(PET_MASTER_ADDR is <trainjob>-node-0-0.<trainjob>)", base + (i, "name"))
            elif labels.get(TV2.ANCESTOR_LABEL) != TV2.ANCESTOR_TRAINER:
                yield rt.finding(ID, f"replicated job 'node' lacks the label {TV2.ANCESTOR_LABEL}: trainer",
                                 base + (i, "template", "metadata", "labels"))

"""`trainer.env` does not set the torchrun variables Trainer reserves.

PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT are injected by the
torch plugin; the TrainJob webhook rejects a TrainJob on a torch runtime that sets them ("must not have
reserved envs"), `tune run` included (Trainer 2.1 checks only a TrainJob that sets numProcPerNode: its
Validate returns before). Checked against the runtime when the run has it (the merge preview reports
the same refusal); without it, against any runtime, as a warning.

Source: trainer v2.1.0/v2.3.0 pkg/constants/constants.go TorchRunReservedEnvNames,
pkg/runtime/framework/plugins/torch/torch.go Validate.
"""
from ...findings import ERROR, WARNING
from ...operators.trainer_v2 import facts as TV2
from ._util import d, lst, trainjob_rejections, trainjobs

ID = "trainjob-reserved-env"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The TrainJob webhook refuses the TrainJob.")


def check(docs, ctx):
    yield from trainjob_rejections(docs, ctx, ID)
    pool = ctx.pool(docs)
    for job in trainjobs(docs):
        if TV2.find_runtime(job, pool) is not None:
            continue
        for i, e in enumerate(lst(d(job.get(("spec", "trainer"))).get("env"))):
            if d(e).get("name") in TV2.RESERVED_ENV:
                yield job.finding(ID, f"{d(e)['name']} is reserved: Trainer sets it for torchrun, and refuses a "
                                      "TrainJob that sets it on a torch runtime", ("spec", "trainer", "env", i, "name"),
                                  WARNING)

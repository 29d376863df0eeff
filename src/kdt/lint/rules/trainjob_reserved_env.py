"""`trainer.env` does not set the torchrun variables Trainer reserves.

PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and
PET_MASTER_PORT are injected by the torch plugin; the TrainJob webhook rejects a
TrainJob that sets them ("must not have reserved envs"), except for the
torchtune entrypoint (`tune run`).

Source: trainer v2.1/v2.3 pkg/constants/constants.go TorchRunReservedEnvNames,
pkg/runtime/framework/plugins/torch/torch.go Validate.
"""
from ...findings import ERROR
from ...operators import trainer_v2 as TV2
from ._util import d, lst, trainjobs

ID = "trainjob-reserved-env"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The TrainJob webhook refuses the TrainJob.")


def check(docs, ctx):
    for job in trainjobs(docs):
        trainer = d(job.get(("spec", "trainer")))
        if not TV2.reserved_env_applies(trainer.get("command")):
            continue
        for i, e in enumerate(lst(trainer.get("env"))):
            if d(e).get("name") in TV2.RESERVED_ENV:
                yield job.finding(ID, f"{d(e)['name']} is reserved: Trainer sets it for torchrun",
                                  ("spec", "trainer", "env", i, "name"))

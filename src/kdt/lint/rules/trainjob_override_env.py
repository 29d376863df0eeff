"""Overrides and patches do not set env on the `node` or initializer containers.

The trainer's env belongs in `spec.trainer.env`, the initializers' in
`spec.initializer`; the TrainJob webhook rejects env set for the `node`,
`dataset-initializer` and `model-initializer` containers through
podTemplateOverrides / runtimePatches.

Source: trainer v2.3.0 pkg/webhooks/trainjob_webhook.go and examples/02-runtime-patches.yaml
("RuntimePatches container env is forbidden for the node, dataset-initializer,
and model-initializer containers"); v2.1 podTemplateOverrides likewise.
"""
from ...findings import ERROR
from ...operators import trainer_v2 as TV2
from ._util import d, lst, trainjobs
from .trainjob_override_targets import overrides

ID = "trainjob-override-env"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The TrainJob webhook refuses the TrainJob.")


def check(docs, ctx):
    for job in trainjobs(docs):
        for ps_path, ps, _ in overrides(job):
            for key in ("containers", "initContainers"):
                for k, c in enumerate(lst(ps.get(key))):
                    if d(c).get("name") in TV2.ENV_FORBIDDEN_CONTAINERS and d(c).get("env"):
                        where = "spec.trainer.env" if d(c)["name"] == TV2.NODE else "spec.initializer"
                        yield job.finding(ID, f"env for container {d(c)['name']!r} may not be set here: use {where}",
                                          ps_path + (key, k, "env"))

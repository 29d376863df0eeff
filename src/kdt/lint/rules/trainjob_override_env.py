"""Overrides and patches do not set env on the `node` or initializer containers.

The trainer's env belongs in `spec.trainer.env`, the initializers' in `spec.initializer`; the TrainJob
webhook rejects env set for the `node`, `dataset-initializer` and `model-initializer` containers
through podTemplateOverrides (2.1) / runtimePatches (2.2+). Checked when the run has the runtime; the
merge preview reports the same refusal.

Source: trainer v2.1.0 / v2.3.0 pkg/runtime/framework/plugins/jobset/jobset.go Validate ("must not have
envs for the dataset-initializer, model-initializer, node containers").
"""
from ...findings import ERROR
from ._util import trainjob_rejections

ID = "trainjob-override-env"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The TrainJob webhook refuses the TrainJob.")


def check(docs, ctx):
    yield from trainjob_rejections(docs, ctx, ID)

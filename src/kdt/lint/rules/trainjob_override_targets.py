"""Override and patch targets exist in the runtime: replicated jobs and containers.

A `podTemplateOverrides[].targetJobs[].name` (2.1) or
`runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].name` (2.2+) must name a
replicated job of the referenced runtime, and each container or initContainer named in the override
must exist in that job: the TrainJob webhook refuses it otherwise. Checked when the run has the
runtime; the merge preview reports the same refusal.

Source: trainer v2.1.0 / v2.3.0 pkg/runtime/framework/plugins/jobset/jobset.go Validate ("must not have
targetJob / replicated job / container / initContainer that doesn't exist in the runtime job").
"""
from ...findings import ERROR
from ._util import trainjob_rejections

ID = "trainjob-override-targets"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("Trainer drops an override of a missing job or container without a word.")


def check(docs, ctx):
    yield from trainjob_rejections(docs, ctx, ID)

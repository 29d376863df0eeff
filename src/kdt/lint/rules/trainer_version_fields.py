"""TrainJob fields match the Trainer release: 2.1 `podTemplateOverrides`, 2.2+ `runtimePatches`.

Trainer 2.2 replaced `spec.podTemplateOverrides` with `spec.runtimePatches`
and made `trainer.numProcPerNode` an integer (2.1 also took `auto`, `cpu`,
`gpu`). Unknown fields are pruned or rejected by the API server, so an
override written for the wrong release silently does nothing. The release
comes from `--trainer-version` or the target (see docs/rules.md).

Source: trainer v2.1.0 and v2.3.0 manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml;
v2.1 pkg/runtime/framework/plugins/torch/torch.go Validate (auto/cpu/gpu).
"""
from ...findings import ERROR
from ...operators.trainer_v2 import facts as TV2
from ._util import trainjobs

ID = "trainer-version-fields"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The API server refuses or prunes fields of the other release: the override does nothing.")


def check(docs, ctx):
    v = ctx.trainer_version
    new = TV2.has_runtime_patches(v)
    for job in trainjobs(docs):
        spec = job.get(("spec",)) or {}
        if not isinstance(spec, dict):
            continue
        if new and "podTemplateOverrides" in spec:
            yield job.finding(ID, f"podTemplateOverrides is a Trainer 2.1 field; Trainer {v} uses runtimePatches",
                              ("spec", "podTemplateOverrides"))
        if not new and "runtimePatches" in spec:
            yield job.finding(ID, f"runtimePatches needs Trainer 2.2 or later (this target is for {v}: "
                                  "use podTemplateOverrides)", ("spec", "runtimePatches"))
        npp = job.get(("spec", "trainer", "numProcPerNode"))
        path = ("spec", "trainer", "numProcPerNode")
        if isinstance(npp, str):
            if new:
                yield job.finding(ID, f"numProcPerNode {npp!r}: Trainer {v} takes an integer only "
                                      "(leave it out for auto)", path)
            elif npp not in TV2.NUM_PROC_PER_NODE_WORDS_21 and not npp.isdigit():
                yield job.finding(ID, f"numProcPerNode {npp!r} must be an integer or one of "
                                      f"{', '.join(TV2.NUM_PROC_PER_NODE_WORDS_21)}", path)

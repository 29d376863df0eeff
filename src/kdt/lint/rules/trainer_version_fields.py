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
from ...operators.trainer_v2 import shapes as SH
from ._util import trainjobs

ID = "trainer-version-fields"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The API server refuses or prunes fields of the other release: the override does nothing.")


def check(docs, ctx):
    v = ctx.trainer_version
    shape = SH.of(v)
    new = not shape.proc_words         # 2.2+: numProcPerNode an integer only
    for job in trainjobs(docs):
        spec = job.get(("spec",)) or {}
        if not isinstance(spec, dict):
            continue
        for other in SH.SHAPES:
            if other.pod_changes != shape.pod_changes and other.pod_changes in spec:
                yield job.finding(ID, f"{other.pod_changes} is a Trainer {other.label} field; Trainer {v} uses "
                                      f"{shape.pod_changes}" if other.first < shape.first else
                                  f"{other.pod_changes} needs Trainer {other.label.rstrip('+')} or later (this target "
                                  f"is for {v}: use {shape.pod_changes})", ("spec", other.pod_changes))
        npp = job.get(("spec", "trainer", "numProcPerNode"))
        path = ("spec", "trainer", "numProcPerNode")
        if isinstance(npp, str):
            if new:
                yield job.finding(ID, f"numProcPerNode {npp!r}: Trainer {v} takes an integer only "
                                      "(leave it out for auto)", path)
            elif npp not in shape.proc_words and not npp.isdigit():
                yield job.finding(ID, f"numProcPerNode {npp!r} must be an integer or one of "
                                      f"{', '.join(shape.proc_words)}", path)

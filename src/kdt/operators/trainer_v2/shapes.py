"""What differs between the TrainJob's shapes: one table, read by every stage (the expansion, the webhook's
rules, torchtune, the migration, the lint rules, the chart's generated helper) instead of comparing releases.

A Trainer release has the shape of the newest row whose `first` release it reaches, and is checked as that
row's `key` release (a release of kdt.versions.TRAINER: its schemas, CRD rules and conformance fixtures).

- A Trainer release with an existing shape (a 2.4 that keeps 2.2+'s TrainJob): its line in
  kdt.versions.TRAINER and JOBSET, its generated schemas and CRD rules, its conformance fixtures; a row here
  only when it is to be checked as itself (then `key` becomes it).
- A new shape (a 2.4 that changes the TrainJob): a row below, after the 2.2+ one, with `first = (2, 4)`;
  its columns read by the modules docs/architecture.md's checklist names ("Adding a Trainer shape").

Each column cites the upstream source it is read from (kubeflow/trainer at v2.1.0 and v2.3.0).
"""
from __future__ import annotations

from dataclasses import dataclass

OVERRIDES, PATCHES = "podTemplateOverrides", "runtimePatches"


@dataclass(frozen=True)
class Shape:
    key: str                    # the release of kdt.versions.TRAINER the shape is checked as
    label: str                  # its name in the migration, its reports and the chart's trainJob.trainerVersion
    first: tuple[int, int]      # the first release of the shape
    # The TrainJob field that changes the runtime's pods (pkg/runtime/core/trainingruntime.go at v2.1.0
    # mergePodTemplateOverrides, with spec.labels/annotations onto the JobSet; at v2.3.0 mergeRuntimePatches,
    # each entry's `manager` a domain-prefixed path, trainjob_webhook.go).
    pod_changes: str
    # Spec fields only this shape has (crds/trainer.kubeflow.org_trainjobs.yaml): a TrainJob that uses one is
    # written in this shape.
    own_fields: tuple[str, ...]
    # The words trainer.numProcPerNode takes besides an integer (v2.1.0 pkg/apis/trainer/v1alpha1
    # trainjob_types.go: auto, cpu, gpu, torch.go Validate; 2.2 made it an integer, auto left out).
    proc_words: tuple[str, ...]
    # The words torch.go EnforceMLPolicy turns into the CPUs per node when no GPU is given.
    cpu_words: tuple[str, ...]
    # 2.1: the runtime's mlPolicy.torch.numProcPerNode stands in for the TrainJob's (torch.go EnforceMLPolicy),
    # and torch.go Validate checks nothing when the TrainJob sets no trainer.numProcPerNode.
    runtime_nproc: bool
    torch_validate_needs_nproc: bool
    # resourcesPerNode: merged key by key into the trainer's `node` container (v2.3.0 plugins/jobset
    # builder.go), or its block replacing the container's resources (v2.1.0 builder.go Trainer).
    merges_resources: bool
    # mlPolicy.torch.envInjection: the torch plugin also injects PET_* into these targets (2.2+, torch.go).
    env_injection: bool
    # The initializer jobs' containers must mount the initializer volume (v2.3.0 plugins/jobset/jobset.go Validate).
    initializer_volume: bool
    # torchtune (plugins/torch/torchtune.go): isUseQLoraFinetune reads `key=True` values (2.3; 2.1 the keys),
    # and LoRA is refused on more than one node (2.3).
    torchtune_reads_values: bool
    torchtune_single_node_lora: bool


SHAPES = (
    Shape(key="2.1", label="2.1", first=(2, 0), pod_changes=OVERRIDES,
          own_fields=(OVERRIDES, "labels", "annotations"), proc_words=("auto", "cpu", "gpu"),
          cpu_words=("cpu", "auto"), runtime_nproc=True, torch_validate_needs_nproc=True,
          merges_resources=False, env_injection=False, initializer_volume=False,
          torchtune_reads_values=False, torchtune_single_node_lora=False),
    Shape(key="2.3", label="2.2+", first=(2, 2), pod_changes=PATCHES,
          own_fields=(PATCHES, "activeDeadlineSeconds"), proc_words=(),
          cpu_words=("auto",), runtime_nproc=False, torch_validate_needs_nproc=False,
          merges_resources=True, env_injection=True, initializer_volume=True,
          torchtune_reads_values=True, torchtune_single_node_lora=True),
    # A 2.4 that changes the TrainJob: its row here (first=(2, 4)), see the module's docstring.
)
BY_KEY = {s.key: s for s in SHAPES}
BY_LABEL = {s.label: s for s in SHAPES}


def version_key(version: str) -> tuple[int, ...]:
    """'2.1' -> (2, 1); '2.3.0' -> (2, 3, 0); 'v2.2' -> (2, 2)."""
    out = []
    for part in str(version).lstrip("v").split("."):
        try:
            out.append(int(part))
        except ValueError:
            break
    return tuple(out)


def of(version: str) -> Shape:
    """The shape of a Trainer release ("2.1", "2.3.0", "v2.2"; or a shape's label, "2.2+")."""
    if version in BY_LABEL:
        return BY_LABEL[version]
    key = version_key(version)
    fitting = [s for s in SHAPES if key >= s.first]
    return fitting[-1] if fitting else SHAPES[0]


def of_trainjob(spec: dict) -> Shape | None:
    """The shape a TrainJob's spec is written in, by the fields only one shape has (newest first); None when it
    uses none of them."""
    for s in reversed(SHAPES):
        if any(k in spec for k in s.own_fields):
            return s
    return None


def checked_as(release: str) -> str:
    """The release of kdt.versions.TRAINER another release is checked as: its shape's `key` (2.0 as 2.1, whose
    TrainJob spells podTemplateOverrides `podSpecOverrides`, manifests/base/crds at v2.0.0; 2.2 as 2.3)."""
    return of(release).key

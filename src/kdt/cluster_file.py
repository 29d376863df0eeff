"""What the cluster runs that the job manifests cannot say: the repository's `.kdt-cluster.yaml`.

    trainingOperator:
      # The file the operator's --pytorch-init-container-template-file names (a path relative to
      # this file); without it the operator's built-in template.
      pytorchInitContainerTemplateFile: deploy/cluster/training-operator/initContainer.yaml
      pytorchInitContainerImage: alpine:3.10     # --pytorch-init-container-image, when the cluster sets it
      pytorchInitContainerMaxTries: 100          # --pytorch-init-container-max-tries, likewise
      gangSchedulerName: volcano                 # --gang-scheduler-name: the PodGroup of each PyTorchJob
    # The cluster-wide objects its administrator applies (kustomization folders or YAML files, relative to
    # this file): the PriorityClasses, Kueue's queues, flavors and quota, Volcano's queues.
    objects:
      - deploy/cluster/kueue
    # The Secrets the administrator creates in the cluster (`name`: in every namespace the jobs use, or
    # `namespace/name`), by name only: their data never belongs in the repository.
    secrets:
      - s3-credentials

Read by `kdt merge-preview`, `lint` and `preview` (the init container every Worker pod of a PyTorchJob
with a Master gets, which the lint rule pod-security judges; the PodGroup a gang scheduler makes), from
the repository root unless a command names another template (`--pytorch-init-container-template FILE`;
merge-preview's `--gang-scheduler NAME` likewise). Without the file: the operator's defaults
(kdt.operators.training_operator_v1.pytorch_init; no gang scheduler). `objects` are rendered the first time a lint rule asks
(`Cluster.objects`): the rules that join a job to the cluster's objects (kueue-*) read them beside the
documents of the run, as what the cluster has for certain; `secrets` likewise, for the rules that check a
Secret a job names exists (trainjob-initializer-secret).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from .documents import load_all
from .errors import UsageError
from .kubeyaml import KUSTOMIZE
from .operators.training_operator_v1 import pytorch_init as PI
from .operators.training_operator_v1 import facts as TO1
from .paths import ROOT

DEFAULT_FILE = ".kdt-cluster.yaml"
_KEYS = {"pytorchInitContainerTemplateFile", "pytorchInitContainerImage", "pytorchInitContainerMaxTries",
         "gangSchedulerName"}


@dataclass(frozen=True)
class Cluster:
    file: str = ""
    pytorch_init: PI.InitTemplate = field(default_factory=PI.InitTemplate)
    gang_scheduler: str | None = None     # the Training Operator's --gang-scheduler-name
    object_paths: tuple[str, ...] = ()      # `objects`, as paths the targets module resolves
    secrets: tuple[str, ...] = ()           # `secrets`: `name` or `namespace/name`

    @cached_property
    def objects(self) -> list:
        """The documents of `objects`, rendered as targets are (kustomize, helm, files); a path that does not
        render is a usage error naming it."""
        if not self.object_paths:
            return []
        from . import targets as T
        from .render import render_all
        out = []
        for r in render_all(T.resolve(list(self.object_paths))):
            if not r.ok:
                first = next((f.message for f in r.findings), "it does not render")
                raise UsageError(f"{self.file}: objects: {r.target.name}: {first.splitlines()[0]}")
            out.extend(r.documents)
        return out

    @property
    def options(self) -> dict:
        """The merge preview's per-operator settings (kdt.merge_preview.expand_documents `options`)."""
        return {PI.OPTION: self.pytorch_init, **({TO1.GANG_OPTION: self.gang_scheduler} if self.gang_scheduler else {})}


def _display(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def load(path: str | None = None, init_template: str | None = None) -> Cluster:
    """The cluster file at `path`, else `.kdt-cluster.yaml` at the repository root when present, else the
    operators' defaults; `init_template` (a command's --pytorch-init-container-template) wins over the file's."""
    p = Path(path) if path else ROOT / DEFAULT_FILE
    data: dict = {}
    if path or p.is_file():
        errors: list[str] = []
        try:
            docs = load_all(p.read_text(), (KUSTOMIZE,), errors)   # YAML 1.2 (`off` a string), bounded
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{p}: cannot read the cluster file: {str(exc).splitlines()[0]}") from None
        if errors:
            raise UsageError(f"{p}:{errors[0]}")
        data = docs[0] if docs and docs[0] is not None else {}
    shown = _display(p)
    if not isinstance(data, dict) or set(data) - {"trainingOperator", "objects", "secrets"}:
        raise UsageError(f"{shown}: expected a mapping with `trainingOperator`, `objects` and `secrets` only")
    secrets = data.get("secrets") or []
    if not isinstance(secrets, list) or not all(isinstance(x, str) and x and x.count("/") <= 1 for x in secrets):
        raise UsageError(f"{shown}: secrets is a list of Secret names (`name` or `namespace/name`)")
    objects = data.get("objects") or []
    if not isinstance(objects, list) or not all(isinstance(o, str) and o for o in objects):
        raise UsageError(f"{shown}: objects is a list of paths (kustomization folders or YAML files)")
    paths = tuple(str((p.parent / o).resolve()) for o in objects)
    missing = [o for o, q in zip(objects, paths) if not (p.parent / o).exists()]
    if missing:
        raise UsageError(f"{shown}: objects: {missing[0]} does not exist")
    to = data.get("trainingOperator") or {}
    if not isinstance(to, dict) or set(to) - _KEYS:
        raise UsageError(f"{shown}: trainingOperator takes {', '.join(sorted(_KEYS))}")
    image, tries = to.get("pytorchInitContainerImage"), to.get("pytorchInitContainerMaxTries")
    if image is not None and not isinstance(image, str) or tries is not None and (
            not isinstance(tries, int) or isinstance(tries, bool)):
        raise UsageError(f"{shown}: pytorchInitContainerImage is a string, pytorchInitContainerMaxTries an integer")
    gang = to.get("gangSchedulerName")
    if gang is not None and (not isinstance(gang, str) or not gang):
        raise UsageError(f"{shown}: gangSchedulerName is a scheduler name ({TO1.GANG_VOLCANO}, or a "
                         f"scheduler-plugins scheduler such as {TO1.GANG_SCHEDULER_PLUGINS})")
    template = PI.InitTemplate(image=image or PI.InitTemplate.image,
                               max_tries=PI.InitTemplate.max_tries if tries is None else tries)
    if init_template:
        template = PI.load(init_template, image, tries, _display(Path(init_template)))
    elif to.get("pytorchInitContainerTemplateFile"):
        file = p.parent / str(to["pytorchInitContainerTemplateFile"])
        template = PI.load(file, image, tries, _display(file))
    return Cluster(shown if data else "", template, gang, paths, tuple(secrets))

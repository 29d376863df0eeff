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
    # The feature gates each operator's manager runs with (its Configuration's featureGates: JobSet v0.12.0
    # main.go and Trainer v2.2.1 cmd/trainer-controller-manager/main.go SetFromMap(cfg.FeatureGates)); a gate
    # not named keeps the release's default (alpha gates off).
    featureGates:
      trainer: {TrainJobStatus: true}
      jobset: {RestartJob: true}
    # How the repository's manifests are applied: client-side (`kubectl apply`, the default) or server-side
    # (`kubectl apply --server-side`, Argo CD `ServerSideApply=true`); a command's --apply wins.
    apply: client-side
    # The operators the cluster runs (default: all three). Without training-operator, a CRD of the MPI
    # Operator v2 (kubeflow.org MPIJob v2beta1) is no conflict (lint mpijob-crd-conflict).
    operators: [trainer, jobset, training-operator]
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
OPERATORS = ("trainer", "jobset", "training-operator")      # kdt.live.releases.Component names
APPLY_MODES = ("client-side", "server-side")
DEFAULT_APPLY = "client-side"           # the README's `kubectl apply`
_TOP = {"trainingOperator", "objects", "featureGates", "apply", "operators", "secrets"}
_KEYS = {"pytorchInitContainerTemplateFile", "pytorchInitContainerImage", "pytorchInitContainerMaxTries",
         "gangSchedulerName"}


@dataclass(frozen=True)
class Cluster:
    file: str = ""
    pytorch_init: PI.InitTemplate = field(default_factory=PI.InitTemplate)
    gang_scheduler: str | None = None     # the Training Operator's --gang-scheduler-name
    object_paths: tuple[str, ...] = ()      # `objects`, as paths the targets module resolves
    gates: tuple = ()                       # `featureGates`: ((operator, ((gate, on), ...)), ...)
    apply_mode: str | None = None           # `apply` (None: not declared)
    operators: tuple[str, ...] = OPERATORS  # `operators`
    secrets: tuple[str, ...] = ()           # `secrets`: `name` or `namespace/name`

    @property
    def feature_gates(self) -> dict:
        """{operator: {gate: on}} as declared (kdt.live.releases.Component names: trainer, jobset, ...)."""
        return {op: dict(g) for op, g in self.gates}

    def gate(self, operator: str, gate: str, default: bool = False) -> bool:
        return self.feature_gates.get(operator, {}).get(gate, default)

    @property
    def apply(self) -> str:
        """How the manifests are applied: `apply` as declared, else client-side (the README's kubectl apply)."""
        return self.apply_mode or DEFAULT_APPLY

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

    @cached_property
    def fingerprint(self) -> str:
        """What a control plane started from this declaration depends on (the file's settings, the init
        template's text, every file of `objects`), as a digest: `--live` reuses a control plane `kdt cluster up`
        keeps only when it was started from the same (kdt.live.kept.find)."""
        import hashlib
        h = hashlib.sha256(repr((self.file, self.pytorch_init, self.pytorch_init.text, self.gang_scheduler,
                                 self.gates, self.apply_mode, self.operators)).encode())
        for path in self.object_paths:
            p = Path(path)
            for f in sorted([p] if p.is_file() else (q for q in p.rglob("*") if q.is_file())):
                h.update(str(f).encode())
                try:
                    h.update(f.read_bytes())
                except OSError:
                    pass
        return h.hexdigest()[:16]

    @property
    def options(self) -> dict:
        """The merge preview's per-operator settings (kdt.merge_preview.expand_documents `options`)."""
        gates = frozenset(g for g, on in self.feature_gates.get("jobset", {}).items() if on)
        return {PI.OPTION: self.pytorch_init, **({TO1.GANG_OPTION: self.gang_scheduler} if self.gang_scheduler else {}),
                **({"jobset_feature_gates": gates} if gates else {})}


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
    if not isinstance(data, dict) or set(data) - _TOP:
        raise UsageError(f"{shown}: expected a mapping with {', '.join(f'`{k}`' for k in sorted(_TOP))} only")
    gates, apply_mode, operators = _declared(data, shown)
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
    return Cluster(shown if data else "", template, gang, paths, gates, apply_mode, operators, tuple(secrets))


def _declared(data: dict, shown: str) -> tuple:
    """`featureGates`, `apply` and `operators` of a cluster file, each checked: one line naming what is wrong."""
    fg = data.get("featureGates") or {}
    if not isinstance(fg, dict) or set(fg) - set(OPERATORS) or not all(
            isinstance(g, dict) and all(isinstance(k, str) and k and isinstance(v, bool) for k, v in g.items())
            for g in fg.values()):
        raise UsageError(f"{shown}: featureGates maps an operator ({', '.join(OPERATORS)}) to its gates, "
                         "each GATE: true or false (featureGates: {jobset: {RestartJob: true}})")
    apply_mode = data.get("apply")
    if apply_mode is not None and apply_mode not in APPLY_MODES:
        raise UsageError(f"{shown}: apply is {' or '.join(APPLY_MODES)}, not {apply_mode!r}")
    ops = data.get("operators", list(OPERATORS))
    if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops) or set(ops) - set(OPERATORS):
        raise UsageError(f"{shown}: operators is a list of {', '.join(OPERATORS)}")
    gates = tuple(sorted((op, tuple(sorted(g.items()))) for op, g in fg.items()))
    return gates, apply_mode, tuple(o for o in OPERATORS if o in ops)

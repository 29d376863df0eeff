"""What the repository renders, discovered rather than listed by hand.

- every `overlays/*/` folder with a kustomization
- every values file under `charts/*/ci/`
- or the files and folders a user names (`-` is standard input)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .paths import ROOT, display

KUSTOMIZE = "kustomize"
HELM = "helm"
FILE = "file"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


@dataclass(frozen=True)
class Target:
    name: str          # as shown to users: "overlays/ddp", "charts/trainer/ci/ddp-values.yaml"
    kind: str          # kustomize | helm | file
    path: Path         # the overlay folder, the values file, or the YAML file
    chart: Path | None = None  # helm: the chart folder

    def __str__(self) -> str:
        return self.name


def is_kustomization(folder: Path) -> bool:
    return any((folder / f).is_file() for f in KUSTOMIZATION_FILES)


def chart_of(values_file: Path) -> Path | None:
    """The chart a values file belongs to: <chart>/ci/<file> or <chart>/<file> with Chart.yaml."""
    for folder in (values_file.parent, values_file.parent.parent):
        if (folder / "Chart.yaml").is_file():
            return folder
    return None


def discover(root: Path = ROOT) -> list[Target]:
    targets = [Target(display(d), KUSTOMIZE, d) for d in sorted((root / "overlays").glob("*/")) if is_kustomization(d)]
    for chart in sorted((root / "charts").glob("*/")):
        if (chart / "Chart.yaml").is_file():
            for values in sorted((chart / "ci").glob("*.yaml")):
                targets.append(Target(display(values), HELM, values, chart))
    return targets


def from_args(args: list[str]) -> list[Target]:
    """Targets for paths given on the command line."""
    targets: list[Target] = []
    for arg in args:
        if arg == "-":
            targets.append(Target("<stdin>", FILE, Path("-")))
            continue
        p = Path(arg)
        if not p.exists():
            raise UsageError(f"{arg}: no such file or folder")
        if p.is_dir():
            if is_kustomization(p):
                targets.append(Target(display(p), KUSTOMIZE, p))
            elif (p / "Chart.yaml").is_file():
                for values in sorted((p / "ci").glob("*.yaml")) or [p / "values.yaml"]:
                    targets.append(Target(display(values), HELM, values, p))
            else:
                files = sorted(f for f in p.rglob("*") if f.suffix in (".yaml", ".yml") and f.is_file())
                if not files:
                    raise UsageError(f"{arg}: no YAML files and no kustomization in this folder")
                targets.extend(Target(display(f), FILE, f) for f in files)
        else:
            chart = chart_of(p) if p.suffix in (".yaml", ".yml") else None
            if chart is not None and p.name != "Chart.yaml" and p.parent.name == "ci":
                targets.append(Target(display(p), HELM, p, chart))
            else:
                targets.append(Target(display(p), FILE, p))
    return targets


def resolve(args: list[str]) -> list[Target]:
    targets = from_args(args) if args else discover()
    if not targets:
        raise UsageError("nothing to do: no overlays, no chart values files and no paths given")
    return targets

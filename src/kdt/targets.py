"""What the repository renders, discovered rather than listed by hand.

- every `overlays/*/` folder with a kustomization
- every values file under `charts/*/ci/`
- or the files and folders a user names (`-` is standard input)
- in a repository with neither, every kustomization, chart and YAML file of its tree

A YAML file named on the command line is read as itself, but for a patch or a
generator input of the kustomization beside it (no object of its own: that
kustomization is rendered), a chart template or values file (that chart), and
a Component's patch (checked through the overlays that use the Component).
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

from . import versions
from .documents import is_manifest_file, load_all
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
    in_folder: bool = False    # file: found by walking a folder the user named (an empty one is no error)

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


_SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".tox"}


def _chart_targets(chart: Path) -> list[Target]:
    """A chart folder: one target per ci/*.yaml values file, else its values.yaml."""
    values = sorted((chart / "ci").glob("*.yaml")) + sorted((chart / "ci").glob("*.yml"))
    return [Target(display(v), HELM, v, chart) for v in values or [chart / "values.yaml"]]


def _enclosing_chart(path: Path) -> Path | None:
    """The chart a file belongs to: its folder, or the folder above `ci/` or `templates/...`, has Chart.yaml."""
    for folder in path.parents:
        if (folder / "Chart.yaml").is_file():
            return folder
        if folder == ROOT or folder.parent == folder:
            return None
    return None


def _component_resources(folder: Path) -> list[Path] | None:
    """The resource files of a kustomize Component folder (None: the folder is no Component).

    A Component cannot be built alone; its `resources:` are whole objects (checked as files), its
    patches are partial (checked through the overlays that include the Component)."""
    kfile = next((folder / f for f in KUSTOMIZATION_FILES if (folder / f).is_file()), None)
    if kfile is None:
        return None
    try:
        spec = (load_all(kfile.read_text(errors="replace")) or [None])[0]
    except OSError:
        return None
    if not isinstance(spec, dict) or spec.get("kind") != "Component":
        return None
    return [folder / r for r in spec.get("resources") or [] if isinstance(r, str) and (folder / r).is_file()]


def _walk(folder: Path) -> list[Target]:
    """A folder in any layout: each kustomization and chart in it is a target of its own (their files are
    build inputs, not objects: patches, templates), and every other YAML file is read as it is.

    Each real folder and file is walked once, whatever symbolic links point at it: links are followed after
    the real tree, and only to what the walk has not met (jobset's `examples -> site/static/examples`);
    what a folder or file is, is its device and inode."""
    seen: set[tuple[int, int]] = set()
    links: list[Path] = []
    out = _walk_real(folder, _identity(folder), seen, links)
    while links:
        link = links.pop(0)
        key = _identity(link)
        if key is None or key in seen:
            continue                       # a dangling or looping link, or what the walk has met
        if link.is_dir():
            out.extend(_walk_real(link, key, seen, links))
        elif link.is_file():
            seen.add(key)
            out.append(Target(display(link), FILE, link, in_folder=True))
    return out


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, RuntimeError):
        return None
    return st.st_dev, st.st_ino


def _walk_real(folder: Path, key, seen: set, links: list[Path]) -> list[Target]:
    if key is None or key in seen:
        return []
    seen.add(key)
    try:
        with os.scandir(folder) as it:       # one listing, no stat per entry (a Go vendor tree has thousands)
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    names = {e.name for e in entries}
    if any(f in names for f in KUSTOMIZATION_FILES):
        component = _component_resources(folder)
        if component is not None:
            return [Target(display(f), FILE, f, in_folder=True) for f in component]
        if is_kustomization(folder):
            return [Target(display(folder), KUSTOMIZE, folder)]
    if "Chart.yaml" in names and (folder / "Chart.yaml").is_file():
        return _chart_targets(folder)
    out: list[Target] = []
    for entry in entries:
        child = folder / entry.name
        if entry.is_symlink():
            if entry.name not in _SKIP_DIRS and (child.is_dir() or is_manifest_file(child)):
                links.append(child)
        elif entry.is_dir(follow_symlinks=False):
            if entry.name not in _SKIP_DIRS:
                out.extend(_walk_real(child, (key[0], entry.inode()), seen, links))
        elif is_manifest_file(child) and entry.is_file(follow_symlinks=False):
            seen.add((key[0], entry.inode()))
            out.append(Target(display(child), FILE, child, in_folder=True))
    return out


def _for_file(p: Path) -> Target | None:
    """The target a file named on the command line (a pre-commit hook passes changed files) belongs to."""
    if p.name in KUSTOMIZATION_FILES:
        return Target(display(p.parent), KUSTOMIZE, p.parent)
    chart = _enclosing_chart(p.resolve()) if p.suffix in (".yaml", ".yml") else None
    if chart is not None and p.name != "Chart.yaml":
        rel = p.resolve().relative_to(chart)
        if rel.parts[0] == "templates":
            return _chart_targets(chart)[0] if (chart / "ci").is_dir() else Target(display(chart / "values.yaml"), HELM,
                                                                                  chart / "values.yaml", chart)
        if len(rel.parts) <= 2:            # <chart>/values*.yaml or <chart>/ci/*.yaml
            return Target(display(p), HELM, p, chart)
    component = _component_resources(p.parent) if p.suffix in (".yaml", ".yml") else None
    if component is not None:
        # A Component's resource is a whole object; its patches are checked through the overlays using it.
        return Target(display(p), FILE, p) if p.resolve() in {c.resolve() for c in component} else None
    if p.suffix in (".yaml", ".yml") and is_kustomization(p.parent) and p.resolve() in build_inputs(p.parent):
        # A patch or a generator's input is no object of its own: the kustomization's output is what gets applied.
        return Target(display(p.parent), KUSTOMIZE, p.parent)
    return Target(display(p), FILE, p)      # a resource, or a file the kustomization does not name: the file itself


def including_kustomization(target: Target) -> Target | None:
    """The kustomization a walk of the file's folder makes the target that holds this file: the nearest folder at
    or above the file with a kustomization (a walk stops there: `_walk_real`), when its resources reach the file
    (directly or through the local kustomizations and components it includes). None for standard input, a file
    met walking a Component (read as itself either way), or one no kustomization builds. A file's Trainer
    release is decided as that kustomization's (kdt.trainer_release.decide), so that it is the same whether the
    file is named alone or walked with its folder."""
    if target.kind != FILE or str(target.path) == "-":
        return None
    try:
        real = target.path.resolve()
    except (OSError, RuntimeError):
        return None
    for folder in real.parents:
        if not any((folder / f).is_file() for f in KUSTOMIZATION_FILES):
            continue
        if _component_resources(folder) is not None:
            return None
        return Target(display(folder), KUSTOMIZE, folder) if real in _built_files(folder, set()) else None
    return None


def _built_files(folder: Path, seen: set) -> set[Path]:
    """The local resource files a kustomization builds, through the kustomizations and components it includes."""
    folder = folder.resolve()
    if folder in seen:
        return set()
    seen.add(folder)
    kfile = next((folder / f for f in KUSTOMIZATION_FILES if (folder / f).is_file()), None)
    try:
        spec = (load_all(kfile.read_text(errors="replace")) or [None])[0] if kfile else None
    except OSError:
        return set()
    out: set[Path] = set()
    if not isinstance(spec, dict):
        return out
    for entry in list(spec.get("resources") or []) + list(spec.get("bases") or []) + list(spec.get("components") or []):
        if not isinstance(entry, str) or "://" in entry:
            continue
        p = folder / entry
        if p.is_dir():
            out |= _built_files(p, seen)
        elif p.is_file():
            out.add(p.resolve())
    return out


def build_inputs(folder: Path) -> set[Path]:
    """The files a kustomization reads that are no objects of their own: its patches, its generators' files
    and env files, the configs of its replacements, transformers, generators and validators, its openapi."""
    kfile = next((folder / f for f in KUSTOMIZATION_FILES if (folder / f).is_file()), None)
    try:
        spec = (load_all(kfile.read_text(errors="replace")) or [None])[0] if kfile else None
    except OSError:
        return set()
    if not isinstance(spec, dict):
        return set()
    named: list = []
    for key in ("patches", "patchesJson6902", "replacements"):
        named += [e.get("path") for e in spec.get(key) or [] if isinstance(e, dict)]
    named += list(spec.get("patchesStrategicMerge") or []) + list(spec.get("transformers") or [])
    named += list(spec.get("generators") or []) + list(spec.get("validators") or [])
    named.append((spec.get("openapi") or {}).get("path") if isinstance(spec.get("openapi"), dict) else None)
    for key in ("configMapGenerator", "secretGenerator"):
        for gen in spec.get(key) or []:
            if isinstance(gen, dict):
                for entry in list(gen.get("files") or []) + list(gen.get("envs") or []) + [gen.get("env")]:
                    named.append(entry.split("=", 1)[-1] if isinstance(entry, str) else None)
    out = set()
    for entry in named:
        if isinstance(entry, str) and "\n" not in entry and "://" not in entry:
            out.add((folder / entry).resolve())
    return out


def from_args(args: list[str]) -> list[Target]:
    """Targets for paths given on the command line, each once."""
    targets: list[Target] = []
    for arg in args:
        if arg == "-":
            targets.append(Target("<stdin>", FILE, Path("-")))
            continue
        p = Path(arg)
        if not p.exists():
            # One path that is not there is that path's error (exit 2); the others are still judged
            # (kubeconform: "... - failed validation: lstat ...: no such file or directory").
            targets.append(Target(arg, FILE, p))
            continue
        if p.is_dir():
            found = _walk(p)
            if not found:
                if any(_component_resources(k.parent) is not None for k in p.rglob("kustomization.y*ml")):
                    raise UsageError(f"{arg}: only kustomize Components that patch (no objects of their own): "
                                     "check the overlays that use them")
                raise UsageError(f"{arg}: no YAML files, kustomization or chart in this folder")
            targets.extend(found)
        else:
            t = _for_file(p)
            if t is not None:
                targets.append(t)
    seen: set = set()
    unique = []
    for t in targets:
        key = (t.kind, str(Path(t.path).resolve()) if str(t.path) != "-" else "-", str(t.chart))
        if key not in seen:
            seen.add(key)
            unique.append(t)
    return unique


def resolve(args: list[str], changed: bool = False) -> list[Target]:
    """The paths named, else this repository's overlays and chart ci files, else every target of the
    repository's tree (a repository of another layout: its kustomizations, charts and YAML files).

    changed: the paths are a change set (a pre-commit run): a file named is judged as if a walk met it
    (one that holds no Kubernetes object is skipped, not an error)."""
    targets = from_args(args) if args else (discover() or _walk(ROOT))
    if changed:
        targets = [dataclasses.replace(t, in_folder=True) if t.kind == FILE and str(t.path) != "-" and t.path.exists()
                   else t for t in targets]
    if not targets and args and all(Path(a).is_file() for a in args if a != "-"):
        return []   # only patches of Components were named (a pre-commit run): nothing of their own to check
    if not targets:
        raise UsageError("nothing to do: no overlays, no chart values files and no paths given")
    return targets


# The Trainer release a target is written for ----------------------------------
# A comment, so it never reaches the cluster:  # kdt:trainer-version=2.1
# Read by validate (schemas), lint (version-specific rules) and preview.
MARKER_SPAN = 8192      # a YAML file's marker is looked for in its first 8 KiB (its head comment)
_MARKER = re.compile(r"^[ \t]*#[ \t]*kdt:trainer-version[ \t]*[=:][ \t]*v?([0-9]+\.[0-9]+)", re.MULTILINE)


def trainer_release(value: str, what: str = "Trainer") -> str:
    """'2.1', 'v2.1.0' -> '2.1'; a release the project does not support is a UsageError (`what` names where
    the value came from: a marker's Trainer, the --trainer-version flag)."""
    m = re.match(r"^v?(\d+)\.(\d+)(?:\.\d+)?$", str(value).strip())
    short = f"{m.group(1)}.{m.group(2)}" if m else str(value)
    if short not in versions.TRAINER_RELEASES:
        raise UsageError(f"{what} {value}: not supported; choose one of {', '.join(versions.TRAINER_RELEASES)}")
    return short


def marker_file(target: Target) -> Path | None:
    """The file whose `# kdt:trainer-version=X.Y` comment sets a target's Trainer version."""
    if target.kind == KUSTOMIZE:
        return next((target.path / f for f in KUSTOMIZATION_FILES if (target.path / f).is_file()), None)
    if target.kind in (HELM, FILE) and str(target.path) != "-":
        return target.path
    return None


def _marker(text: str, where: str) -> str | None:
    m = _MARKER.search(text)
    if not m:
        return None
    try:
        return trainer_release(m.group(1))
    except UsageError as exc:
        raise UsageError(f"{where}: kdt:trainer-version marker: {exc}") from None


def _kustomization_markers(folder: Path, seen: set) -> set[str]:
    """Markers of a kustomization and of the local components and bases it includes."""
    folder = folder.resolve()
    if folder in seen:
        return set()
    seen.add(folder)
    kfile = next((folder / f for f in KUSTOMIZATION_FILES if (folder / f).is_file()), None)
    if kfile is None:
        return set()
    try:
        text = kfile.read_text(errors="replace")
        spec = (load_all(text) or [None])[0]
    except OSError:
        return set()
    own = _marker(text, display(kfile))
    if own:
        return {own}
    found: set[str] = set()
    if isinstance(spec, dict):
        for entry in list(spec.get("resources") or []) + list(spec.get("components") or []):
            if isinstance(entry, str) and "://" not in entry and (folder / entry).is_dir():
                found |= _kustomization_markers(folder / entry, seen)
    return found


def target_trainer_version(target: Target, text: str | None = None) -> str | None:
    """The Trainer version a target declares with a `# kdt:trainer-version=X.Y` comment, or None.

    Overlays: the overlay's kustomization; without one there, the markers of the
    local components and bases it includes (e.g. components/trainer-2.1), which
    must agree. Chart values files and YAML files: the file itself (`text` when
    the caller already holds it, e.g. standard input).
    """
    if target.kind == KUSTOMIZE:
        found = _kustomization_markers(target.path, set())
        if len(found) > 1:
            raise UsageError(f"{target.name}: its components declare different Trainer versions "
                             f"({', '.join(sorted(found))}); put `# kdt:trainer-version=X.Y` in the overlay's kustomization")
        return next(iter(found), None)
    if text is None:
        path = marker_file(target)
        if path is None:
            return None
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(MARKER_SPAN)
        except OSError:
            return None
    return _marker(text, target.name)


def trainer_version(target: Target, text: str | None = None) -> str:
    """The Trainer release to check a target against: its marker, else kdt.versions.TRAINER_DEFAULT."""
    return target_trainer_version(target, text) or versions.TRAINER_DEFAULT

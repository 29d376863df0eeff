"""The Trainer release a target is checked against, and why: said in the output, overridable.

In order, the first that answers:

1. `--trainer-version` (every target);
2. the target's `# kdt:trainer-version=X.Y` marker (kdt.targets.target_trainer_version);
3. where the repository pins it (`repository_pin`), the first of these kinds of evidence that agrees
   with itself: a Trainer CRD in the tree (its TrainJob's spec fields are one release's,
   kdt.operators.trainer_v2.facts.TRAINJOB_SPEC_FIELDS), a remote kustomize ref in a kustomization
   (`github.com/kubeflow/trainer/...?ref=v2.1.0`), a Helm dependency on the `kubeflow-trainer` chart
   (Chart.yaml), an install step in the docs, scripts or CI: a command line (kubectl, helm, kustomize, curl,
   wget) that applies a ref, installs the chart or fetches a release asset (`kubectl apply -k ...?ref=...`,
   `helm install ... kubeflow-trainer --version ...`; shell variables set earlier in the same file,
   `export VERSION=v2.1.0`, are read; prose that names a ref pins nothing);
4. the shape its TrainJobs and runtimes use (`fitting_release`): the release whose schema every one of them fits
   when only one does (a TrainJob with `podTemplateOverrides` fits 2.1 only, one with `runtimePatches`
   2.2 and later);
5. kdt.versions.TRAINER_DEFAULT.

A pinned release the project has no schemas of is checked as the supported release with its API shape
(kdt.operators.trainer_v2.facts.checked_as: 2.0 as 2.1, 2.2 as 2.3). Refs of kubeflow/trainer at v1.x are the
Training Operator's (the repository was renamed), not Trainer pins.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml_rs

from . import kinds as K
from . import schemas, targets, versions
from .findings import format_path
from .operators.trainer_v2 import facts as TV2
from .paths import ROOT, display


@dataclass(frozen=True)
class Decision:
    release: str          # "2.1", "2.3"
    how: str              # option | marker | pinned | shape | default
    evidence: str = ""
    via: str = ""         # a file decided as the kustomization that builds it (kdt.targets.including_kustomization)

    def note(self, target: str = "") -> str:
        what = f"Trainer {self.release}" + (f" for {target}" if target else "")
        how = {"pinned": "pinned by the repository", "shape": "the shape of its Trainer objects",
               "marker": "the kdt:trainer-version marker", "default": "the default"}.get(self.how, self.how)
        via = f"; decided as {self.via}, the kustomization that builds it" if self.via else ""
        return (f"{what} ({how}: {self.evidence}{via}; --trainer-version overrides)" if self.evidence
                else f"{what} ({how}{via})")


# Evidence kinds, strongest first.
CRD, KUSTOMIZE, HELM, INSTALL = "a Trainer CRD in the tree", "a remote kustomize ref", "a Helm dependency", \
    "an install step"
_LEVELS = (CRD, KUSTOMIZE, HELM, INSTALL)

_TEXT_SUFFIXES = {".md", ".markdown", ".rst", ".adoc", ".txt", ".sh", ".bash", ".zsh", ".mk", ".yaml", ".yml",
                  ".tf", ".ipynb"}
_TEXT_NAMES = {"Makefile", "Dockerfile", "Justfile", "Taskfile", "Chart.yaml", "kustomization.yaml",
               "kustomization.yml", "Kustomization"}
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache", ".tox", "vendor",
              "third_party", ".cache"}
MAX_FILE = 1 << 20          # bytes: larger files are no install notes
MAX_FILES = 50_000          # files looked at in one repository

_REF = re.compile(r"kubeflow/trainer(?:\.git)?[^\s\"'`<>)]*?[?&]ref=([^\s\"'`&#<>)]+)")
_ASSET = re.compile(r"github\.com/kubeflow/trainer/releases/download/([^\s/\"'`]+)/")
_HELM = re.compile(r"kubeflow-trainer\b[^\n]*?--version[ =]+[\"']?([^\s\"']+)")
# An install step is a command line: kubectl, helm, kustomize, curl or wget first (after a shell prompt, a list
# marker or a CI `run:`), so prose that names a ref (`...?ref=v2.1.0` in a sentence) pins nothing.
_COMMAND = re.compile(r"^\s*(?:[-*>$]\s+|\d+\.\s+)*(?:run:\s*)?(?:sudo\s+)?[\"']?(?:kubectl|helm|kustomize|curl|wget)\b")
_VAR = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=[\"']?([^\s\"';]+)", re.MULTILINE)
_RELEASE = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:-[0-9A-Za-z.]+)?$")


def _release(value: str) -> str | None:
    """'v2.1.0' -> '2.1.0'; None for a branch or a Training Operator (v1) tag."""
    m = _RELEASE.match(value.strip())
    if not m or m.group(1) != "2":
        return None
    return value.strip().lstrip("v")


def _expand(value: str, env: dict) -> str:
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), m.group(0)), value)


def _scan_text(text: str, rel: str, kind: str) -> list[tuple[str, str, str]]:
    """(release, evidence kind, where) of every pin in one file."""
    # every pin below is a match of _REF or _ASSET (both hold "kubeflow/trainer") or _HELM ("kubeflow-trainer"): a
    # file with neither pins nothing (the manifests that only name the API group, trainer.kubeflow.org, included)
    if "kubeflow/trainer" not in text and "kubeflow-trainer" not in text:
        return []
    out = []
    env: dict = {}
    for no, line in _logical_lines(text):
        for m in _VAR.finditer(line):
            env[m.group(1)] = m.group(2)
        if kind != KUSTOMIZE and not _COMMAND.match(line):
            continue
        for rx in (_REF, _ASSET, _HELM):
            for m in rx.finditer(line):
                value = _expand(m.group(1), env)
                release = _release(value)
                if release is None:
                    continue
                ev = kind if rx is _REF and kind == KUSTOMIZE else (HELM if kind == HELM else INSTALL)
                shown = line.strip().replace(m.group(1), value) if value != m.group(1) else line.strip()
                out.append((release, ev, f"{rel}:{no}: {shown[:160]}"))
    return out


def _logical_lines(text: str):
    """(first line number, text) of each line, shell continuation lines (ending in a backslash) joined."""
    start, parts = 0, []
    for no, line in enumerate(text.splitlines(), 1):
        if not parts:
            start = no
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        parts.append(line)
        yield start, " ".join(parts)
        parts = []
    if parts:
        yield start, " ".join(parts)


def _chart_pins(text: str, rel: str) -> list[tuple[str, str, str]]:
    try:
        chart = yaml_rs.loads(text, parse_datetime=False)
    except (yaml_rs.YAMLDecodeError, ValueError):
        return []
    out = []
    for dep in chart.get("dependencies") or [] if isinstance(chart, dict) else []:
        if isinstance(dep, dict) and dep.get("name") == TV2.HELM_CHART and dep.get("version") is not None:
            release = _release(str(dep["version"]))
            if release:
                out.append((release, HELM, f"{rel}: dependency {TV2.HELM_CHART} {dep['version']}"))
    return out


def _crd_pins(text: str, rel: str) -> list[tuple[str, str, str]]:
    if "CustomResourceDefinition" not in text or f"trainjobs.{TV2.GROUP}" not in text:
        return []
    try:
        docs = yaml_rs.loads(text, parse_datetime=False)
    except (yaml_rs.YAMLDecodeError, ValueError):
        return []
    out = []
    for d in docs if isinstance(docs, list) else [docs]:
        if isinstance(d, dict) and K.CRD.matches(d):
            for release in TV2.crd_releases(d):
                out.append((release, CRD, f"{rel}: CustomResourceDefinition {d.get('metadata', {}).get('name')} "
                                          f"has the TrainJob spec fields of Trainer {release}"))
    return out


def _files(root: Path):
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            p = Path(folder) / name
            if p.suffix in _TEXT_SUFFIXES or name in _TEXT_NAMES:
                count += 1
                if count > MAX_FILES:
                    return
                yield p


@functools.lru_cache(maxsize=None)
def repository_pin(root: Path = ROOT) -> Decision | None:
    """The Trainer release the repository at `root` pins, from its strongest kind of evidence that agrees."""
    found: dict[str, list[tuple[str, str]]] = {}
    for p in _files(root):
        try:
            if p.stat().st_size > MAX_FILE or p.is_symlink():
                continue
            text = p.read_text(errors="replace")
        except OSError:
            continue
        rel = str(p.relative_to(root)) if p.is_relative_to(root) else display(p)
        if p.name == "Chart.yaml":
            pins = _chart_pins(text, rel)
        elif p.name in targets.KUSTOMIZATION_FILES:
            pins = _scan_text(text, rel, KUSTOMIZE)
        else:
            pins = _scan_text(text, rel, INSTALL)
        if p.suffix in (".yaml", ".yml", ".json"):
            pins += _crd_pins(text, rel)
        for release, level, where in pins:
            found.setdefault(level, []).append((release, where))
    for level in _LEVELS:
        pins = found.get(level)
        if not pins:
            continue
        checked = {TV2.checked_as(r) for r, _ in pins}
        if len(checked) == 1:
            release, where = pins[0]
            more = f" (and {len(pins) - 1} more)" if len(pins) > 1 else ""
            return Decision(checked.pop(), "pinned", f"{level}, Trainer {release}, {where}{more}")
    return None


def _first_error(ks: schemas.KindSchema, data: dict) -> str:
    """What one release's schema says first against an object, in a few words."""
    for err in ks.validator.iter_errors(data):
        path = format_path(list(err.instance_path)) or "the object"
        unexpected = getattr(err.kind, "unexpected", None)
        if unexpected:
            return f"unknown field {format_path(list(err.instance_path) + [sorted(unexpected)[0]])}"
        return f"{path}: {err.message[:100]}"
    return "the object"


def fitting_release(docs, kubernetes_version: str = versions.KUBERNETES_DEFAULT) -> Decision | None:
    """The one release whose schemas every TrainJob and runtime of `docs` fits, when only one does."""
    trainer_docs = [d for d in docs if isinstance(d.data, dict) and (K.TRAINJOB.matches(d) or K.runtimes([d]))]
    if not trainer_docs:
        return None
    fits_all = set(versions.TRAINER_RELEASES)
    evidence = ""
    for d in trainer_docs:
        fits, misfit = set(), {}
        for release in versions.TRAINER_RELEASES:
            ks = schemas.registry(kubernetes_version, release).get(d.api_version, d.kind)
            if ks is None:
                continue
            try:
                ok = ks.validator.is_valid(d.data)
            except (ValueError, TypeError, OverflowError):
                ok = False
            if ok:
                fits.add(release)
            else:
                misfit[release] = ks
        if not fits:
            continue           # wrong for every release: its own schema errors say so
        if fits != fits_all and not evidence:
            other = sorted(misfit)[0]
            evidence = (f"{d.kind}/{d.name} in {d.source or d.file} fits Trainer {', '.join(sorted(fits))} only; "
                        f"as {other}: {_first_error(misfit[other], d.data)}")
        fits_all &= fits
    if len(fits_all) == 1 and evidence:
        return Decision(fits_all.pop(), "shape", evidence)
    return None


def decide(target: targets.Target, docs=None, option: str | None = None, text: str | None = None,
           kubernetes_version: str = versions.KUBERNETES_DEFAULT, build=None) -> Decision:
    """The Trainer release of one target (docs: its documents when known; text: a stream's head, for the
    marker of standard input).

    `build`: a target's documents (the caller's renderer; this layer runs no kubectl). With it, a file that a
    kustomization builds is decided as that kustomization, as a walk of its folder decides it (its marker, and
    the shape of the sibling resources it is applied with), whether the file is named alone or walked."""
    if option:
        return Decision(targets.trainer_release(option), "option")
    if build is not None:
        k = targets.including_kustomization(target)
        if k is not None:
            return dataclasses.replace(decide(k, build(k), None, None, kubernetes_version), via=k.name)
    marker = targets.target_trainer_version(target, text)
    if marker:
        return Decision(marker, "marker")
    pin = repository_pin(ROOT)
    if pin is not None:
        return pin
    found = fitting_release(docs, kubernetes_version) if docs else None
    return found or Decision(versions.TRAINER_DEFAULT, "default")


def has_trainer_objects(docs) -> bool:
    return any(K.TRAINJOB.matches(d) or K.JOBSET.matches(d) for d in docs) or bool(K.runtimes(docs))


def notes(decided: list[tuple[str, Decision]]) -> list[str]:
    """What the output says of the releases a run used: (target name, decision) of each target that holds
    Trainer objects; a repository pin once, a shape per target, an option, a marker or the default not at all
    (the user wrote those, or the target has nothing that differs)."""
    out: list[str] = []
    for name, d in decided:
        if d.how == "pinned" and not d.via:
            line = d.note()
        elif d.how == "shape" or d.via:
            line = d.note(name)
        else:
            continue
        if line not in out:
            out.append(line)
    return out

"""validate: schema validation of everything the repository renders, or of the YAML streams named.

With no paths, validates the rendered output of every overlay (overlays/*/)
and every chart values file (charts/*/ci/*.yaml), each rendered once with the
project's pinned kubectl and helm. With paths (YAML files, folders, `-` for
standard input, overlay folders, chart values files), validates those.

Schemas: Kubernetes kinds from kubernetes-validate's strict schemas (unknown
fields are errors); PyTorchJob (kubeflow.org/v1, Training Operator 1.9.4);
TrainJob, TrainingRuntime, ClusterTrainingRuntime (trainer.kubeflow.org/v1alpha1)
and JobSet (jobset.x-k8s.io/v1alpha2) of Trainer 2.1 or 2.3; Argo CD Application
and ApplicationSet (argoproj.io/v1alpha1).

Trainer version of each target: --trainer-version when given (for every
target); otherwise the target's own marker, a comment line

    # kdt:trainer-version=2.1

in the overlay's kustomization.yaml (or, without one there, in the
kustomization of a local component or base it includes, such as
components/trainer-2.1), in the chart values file, or in the head (first
8 KiB) of the YAML file;
otherwise the default. The marker is a comment: it never reaches the cluster.

Every error is reported, each with file, document index, line and column,
JSON path, kind/name and, for rendered targets, the target and source file.
Exit status: 0 valid, 1 invalid, 2 usage error, unreadable input or a target
that fails to render.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml_rs

from . import Parser, add_output_args, output, run
from .. import findings as F
from .. import report, schemas, targets, versions
from ..errors import UsageError
from ..paths import display
from ..render import render
from ..targets import FILE, HELM, KUSTOMIZATION_FILES, KUSTOMIZE, Target
from ..validate import RULES, validate_documents

TOOL = "validate"
_MARKER_SPAN = 8192      # a YAML file's marker is looked for in its first 8 KiB (its head comment)
_MARKER = re.compile(r"^[ \t]*#[ \t]*kdt:trainer-version[ \t]*[=:][ \t]*v?([0-9]+\.[0-9]+)", re.MULTILINE)


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
        return schemas.trainer_version(m.group(1))
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
        spec = yaml_rs.loads(text, parse_datetime=False)
    except (OSError, yaml_rs.YAMLDecodeError, ValueError):
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
    must agree. Chart values files and YAML files: the file itself.
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
                text = fh.read(_MARKER_SPAN)
        except OSError:
            return None
    return _marker(text, target.name)


def main(argv=None) -> int:
    p = Parser(prog="validate.py", description=__doc__)
    p.add_argument("paths", nargs="*", help="YAML files, folders, overlays, chart values files, or - (default: every target)")
    p.add_argument("--kubernetes-version", default=versions.KUBERNETES_DEFAULT, metavar="X.Y",
                   help=f"Kubernetes schemas to use (default: {versions.KUBERNETES_DEFAULT}; "
                        f"available: {', '.join(schemas.kubernetes_versions())})")
    p.add_argument("--trainer-version", choices=versions.TRAINER_RELEASES, default=None,
                   help=f"Kubeflow Trainer release of the TrainJob/runtime/JobSet schemas, for every target "
                        f"(default: each target's `# kdt:trainer-version=X.Y` marker, else {versions.TRAINER_DEFAULT})")
    p.add_argument("--ignore-missing-schemas", action="store_true",
                   help="a kind without a schema is a warning instead of an error")
    add_output_args(p)
    args = p.parse_args(argv)
    k8s = schemas.kubernetes_version(args.kubernetes_version)

    tlist = targets.resolve(args.paths)
    findings: list[F.Finding] = []
    inventory = []
    ndocs = 0
    for t in tlist:
        rendered = render(t)
        findings.extend(rendered.findings)
        trainer = args.trainer_version
        if trainer is None:
            text = rendered.text[:_MARKER_SPAN] if t.kind == FILE else None
            trainer = target_trainer_version(t, text) or versions.TRAINER_DEFAULT
        findings.extend(validate_documents(rendered.documents, kubernetes_version=k8s, trainer_version=trainer,
                                           ignore_missing_schemas=args.ignore_missing_schemas))
        ndocs += len(rendered.documents)
        inventory.extend(rendered.documents)
    with output(args.output) as out:
        report.write(findings, args.format, TOOL, out, documents=ndocs, targets=[t.name for t in tlist],
                     rules=RULES, inventory=inventory)
    return F.exit_code(findings)


if __name__ == "__main__":
    sys.exit(run(main))

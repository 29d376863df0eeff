"""validate: schema validation of everything the repository renders, or of the YAML streams named.

With no paths, validates the rendered output of every overlay (overlays/*/)
and every chart values file (charts/*/ci/*.yaml), each rendered once with the
project's pinned kubectl and helm. With paths (YAML files, folders, `-` for
standard input, overlay folders, chart values files), validates those.

Schemas: Kubernetes kinds from kubernetes-validate's strict schemas (unknown
fields are errors); PyTorchJob (kubeflow.org/v1, Training Operator 1.9.4);
TrainJob, TrainingRuntime, ClusterTrainingRuntime (trainer.kubeflow.org/v1alpha1)
and JobSet (jobset.x-k8s.io/v1alpha2) of Trainer 2.1 or 2.3; Argo CD Application
and ApplicationSet (argoproj.io/v1alpha1). Other operators' kinds (Kueue,
Volcano, the scheduler-plugins, ...) from the CustomResourceDefinitions named
by --crd: unknown fields, types, enums, patterns and required fields as the
CRD's schema says (not its CEL rules); the project's own schemas win.

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

import sys


from . import Parser, add_output_args, output, invoke
from .. import findings as F
from .. import report, schemas, targets, versions
from ..render import render
from ..documents import is_blank
from ..kubeyaml import APPLY, BOTH
from ..stream import open_blocks, validate_stream
from ..targets import FILE, target_trainer_version  # noqa: F401  (re-exported)
from ..validate import RULES, supersede, validate_documents

TOOL = "validate"


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
    p.add_argument("--crd", action="append", default=[], metavar="PATH",
                   help="a file or folder of CustomResourceDefinitions (another operator's: Kueue, Volcano, ...): "
                        "their kinds are validated against the CRDs' schemas (repeatable)")
    add_output_args(p)
    args = p.parse_args(argv)
    k8s = schemas.kubernetes_version(args.kubernetes_version)
    crds = tuple(args.crd)
    if crds:
        from ..schemas import crds as crd_schemas
        crd_schemas.load(crds)         # a usage error (one line, exit 2) before anything is validated

    tlist = targets.resolve(args.paths)
    findings: list[F.Finding] = []
    inventory = []
    ndocs = 0
    skipped = 0
    for t in tlist:
        if t.kind == FILE:
            # A file or standard input is validated as a stream: a bounded window of documents at a time.
            # Standard input is what `kubectl apply -f -` reads; a file may also be a kustomize resource.
            problems: list[F.Finding] = []
            paths = (APPLY,) if str(t.path) == "-" else BOTH
            lines, size, head = open_blocks(str(t.path), t.name, problems, paths)
            trainer = args.trainer_version or target_trainer_version(t, head[:targets.MARKER_SPAN]) \
                or versions.TRAINER_DEFAULT
            got = validate_stream(lines, t.name, k8s, trainer, args.ignore_missing_schemas,
                                  inventory=args.format == "junit", size_hint=size, crds=crds, paths=paths,
                                  named=not t.in_folder)
            problems += got.findings
            if got.documents == 0 and not problems and str(t.path) == "-" and is_blank(head):
                # kubeconform: empty standard input fails; a blank file named passes with 0 resources.
                problems.append(F.Finding(F.ERROR, "input", "the input holds no Kubernetes object", t.name))
            if got.documents == 0 and got.skipped and not problems:
                skipped += 1       # a CI config, a values file... met walking a folder
            findings.extend(problems)
            ndocs += got.documents
            inventory.extend(got.entries)
            continue
        rendered = render(t)
        skipped += rendered.skipped
        trainer = args.trainer_version or target_trainer_version(t) or versions.TRAINER_DEFAULT
        schema = validate_documents(rendered.documents, kubernetes_version=k8s, trainer_version=trainer,
                                    ignore_missing_schemas=args.ignore_missing_schemas, crds=crds)
        findings.extend(supersede(rendered.findings, schema) + schema)
        ndocs += len(rendered.documents)
        inventory.extend(rendered.documents)
    with output(args.output) as out:
        report.write(findings, args.format, TOOL, out, documents=ndocs, targets=[t.name for t in tlist],
                     rules=RULES, inventory=inventory, skipped=skipped)
    return F.exit_code(findings)


if __name__ == "__main__":
    sys.exit(invoke(main))

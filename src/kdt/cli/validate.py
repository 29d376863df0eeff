"""validate: schema validation of everything the repository renders, or of the YAML streams named.

With no paths, validates the rendered output of every overlay (overlays/*/)
and every chart values file (charts/*/ci/*.yaml), each rendered once with the
project's pinned kubectl and helm. With paths (YAML files, folders, `-` for
standard input, overlay folders, chart values files), validates those.

Schemas: Kubernetes kinds from kubernetes-validate's strict schemas (unknown
fields are errors); the kubeflow.org/v1 kinds of the Training Operator (PyTorchJob,
TFJob, MPIJob, PaddleJob, XGBoostJob, JAXJob) from its official CRDs of 1.8.1 or
1.9.4 (--training-operator-version); Kueue, Volcano and the scheduler-plugins from
their official CRDs (Kueue v0.19.2, Volcano v1.15.1, scheduler-plugins v0.34.7);
TrainJob, TrainingRuntime, ClusterTrainingRuntime (trainer.kubeflow.org/v1alpha1)
and JobSet (jobset.x-k8s.io/v1alpha2) of Trainer 2.1 or 2.3; Argo CD Application
and ApplicationSet (argoproj.io/v1alpha1). Other operators' kinds from the
CustomResourceDefinitions named by --crd or met in the run: unknown fields,
types, enums, patterns, required fields, defaults and CEL rules as the CRD's
schema says; the project's own schemas win.

Every CustomResourceDefinition the run meets (in the files named or walked, or
rendered by a target) is a schema for the whole run, as --crd is; the output
names them.

Trainer version of each target: --trainer-version when given (for every
target); otherwise the target's own marker, a comment line

    # kdt:trainer-version=2.1

in the overlay's kustomization.yaml (or, without one there, in the
kustomization of a local component or base it includes, such as
components/trainer-2.1), in the chart values file, or in the head (first
8 KiB) of the YAML file; otherwise where the repository pins Trainer (a
Trainer CRD in the tree, a remote kustomize ref, a Helm dependency, an install
step in its docs or scripts); otherwise the release whose schemas its TrainJobs
and runtimes fit when only one does; otherwise the default. The output says
which, with the evidence. The marker is a comment: it never reaches the cluster.

Every error is reported, each with file, document index, line and column,
JSON path, kind/name and, for rendered targets, the target and source file.
Exit status: 0 valid, 1 invalid, 2 usage error, unreadable input or a target
that fails to render.
"""
from __future__ import annotations

import sys

from . import (Parser, add_jobs_arg, add_kubernetes_version_arg, add_live_arg, add_output_args,
               add_trainer_version_arg, invoke, output)
from .. import findings as F
from .. import report, schemas, targets, versions
from ..targets import target_trainer_version  # noqa: F401  (re-exported)
from ..validate import RULES
from ..validate_run import Options, live_groups, validate_targets

TOOL = "validate"


def _parser() -> Parser:
    p = Parser(prog="validate.py", description=__doc__)
    p.add_argument("paths", nargs="*", help="YAML files, folders, overlays, chart values files, or - (default: every target)")
    add_kubernetes_version_arg(p, f"its schemas ({', '.join(schemas.kubernetes_versions())})")
    add_trainer_version_arg(p, "of the TrainJob/runtime/JobSet schemas, for every target (default: each target's "
                               f"`# kdt:trainer-version=X.Y` marker, else {versions.TRAINER_DEFAULT})")
    p.add_argument("--ignore-missing-schemas", action="store_true",
                   help="a kind without a schema is a warning instead of an error")
    p.add_argument("--crd", action="append", default=[], metavar="PATH",
                   help="a file or folder of CustomResourceDefinitions (another operator's: Kueue, Volcano, ...): "
                        "their kinds are validated against the CRDs' schemas (repeatable)")
    p.add_argument("--training-operator-version", choices=tuple(versions.TRAINING_OPERATOR_RELEASES),
                   default=versions.TRAINING_OPERATOR_DEFAULT,
                   help="Training Operator release of the kubeflow.org/v1 kinds (PyTorchJob, TFJob, MPIJob, "
                        "PaddleJob, XGBoostJob, JAXJob), checked against its official CRDs "
                        f"(default: {versions.TRAINING_OPERATOR_DEFAULT})")
    p.add_argument("--apply", choices=("client-side", "server-side"),
                   help="how the manifests are applied: a custom resource's null only server-side apply keeps is an "
                        "error for server-side (kubectl apply --server-side, Argo CD ServerSideApply=true), a warning "
                        "for client-side kubectl apply, which drops it (default: .kdt-cluster.yaml `apply`, else "
                        "client-side)")
    add_jobs_arg(p)
    add_output_args(p)
    add_live_arg(p)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.apply is None:
        from ..cluster_file import load as load_cluster
        args.apply = load_cluster().apply
    crds = tuple(args.crd)
    if crds:
        from ..schemas import crds as crd_schemas
        crd_schemas.load(crds)         # a usage error (one line, exit 2) before anything is validated
    tlist = targets.resolve(args.paths, changed=args.changed_files)
    run = validate_targets(tlist, Options(args.kubernetes_version, args.trainer_version, args.training_operator_version,
                                          args.ignore_missing_schemas, crds, args.jobs, args.format == "junit",
                                          args.apply))
    findings = run.findings
    if args.live:
        from ..live import check as live_check
        findings.extend(live_check.findings(live_groups(tlist, run), preview=False, trainer_version=args.trainer_version))
    with output(args.output) as out:
        report.write(findings, args.format, TOOL, out, documents=run.documents, targets=[t.name for t in tlist],
                     rules=RULES, inventory=run.inventory, notes=run.notes, skipped=run.skipped)
    return F.exit_code(findings)


if __name__ == "__main__":
    sys.exit(invoke(main))

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

import re
import sys
from concurrent.futures import ThreadPoolExecutor

from . import (Parser, add_jobs_arg, add_kubernetes_version_arg, add_live_arg, add_output_args,
               add_trainer_version_arg, invoke, output)
from .. import findings as F
from .. import kinds as K
from .. import report, schemas, targets, trainer_release, versions
from ..errors import UsageError
from ..render import built_documents, holds_nothing, nothing_to_apply, render_all
from ..documents import is_blank, load_stream
from ..kubeyaml import APPLY, BOTH
from ..paths import ROOT
from ..schemas.crds import RunCrds
from ..stream import open_blocks, validate_stream
from ..targets import FILE, target_trainer_version  # noqa: F401  (re-exported)
from ..validate import RULES, supersede, validate_documents

TOOL = "validate"


def main(argv=None) -> int:
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
    args = p.parse_args(argv)
    if args.apply is None:
        from ..cluster_file import load as load_cluster
        args.apply = load_cluster().apply
    k8s = args.kubernetes_version
    crds = tuple(args.crd)
    if crds:
        from ..schemas import crds as crd_schemas
        crd_schemas.load(crds)         # a usage error (one line, exit 2) before anything is validated

    tlist = targets.resolve(args.paths, changed=args.changed_files)
    # Everything renders first (in parallel), and the files are looked through for CRDs and Trainer objects:
    # every CRD of the run is a schema for all of it (kdt.schemas.crds.RunCrds).
    built = [t for t in tlist if t.kind != FILE]
    with ThreadPoolExecutor(max_workers=1) as background:     # the files are read while kubectl and helm run
        renders = background.submit(render_all, built, args.jobs)
        scanned = {id(t): _scan(t) for t in tlist if t.kind == FILE}
        if not args.trainer_version:
            trainer_release.repository_pin(ROOT)        # read now, while they run (cached for decide)
        rendered = {id(t): r for t, r in zip(built, renders.result())}
    run_docs = [d for r in rendered.values() for d in r.documents] + [d for docs in scanned.values() for d in docs]
    found = RunCrds(d for d in run_docs if K.CRD.matches(d)) or None
    findings: list[F.Finding] = []
    inventory = []
    decided = []
    ndocs = 0
    skipped = 0
    empty: list = []           # files named that hold no object (kdt.render.nothing_to_apply)
    for t in tlist:
        if t.kind == FILE:
            # A file or standard input is validated as a stream: a bounded window of documents at a time.
            # Standard input is what `kubectl apply -f -` reads; a file may also be a kustomize resource.
            problems: list[F.Finding] = []
            paths = (APPLY,) if str(t.path) == "-" else BOTH
            lines, size, head = open_blocks(str(t.path), t.name, problems, paths)
            decision = trainer_release.decide(t, scanned[id(t)], args.trainer_version, head[:targets.MARKER_SPAN], k8s,
                                              build=built_documents)
            got = validate_stream(lines, t.name, k8s, decision.release, args.ignore_missing_schemas,
                                  inventory=args.format == "junit", size_hint=size, crds=crds, found=found,
                                  training_operator=args.training_operator_version, paths=paths,
                                  named=not t.in_folder, apply=args.apply)
            problems += got.findings
            if got.documents == 0 and not problems and str(t.path) == "-" and is_blank(head):
                # kubeconform: empty standard input fails; a blank file named passes with 0 resources.
                problems.append(F.Finding(F.ERROR, "input", "the input holds no Kubernetes object", t.name))
            if got.documents == 0 and got.skipped and not problems:
                skipped += 1       # a CI config, a values file... met walking a folder
            if holds_nothing(t, got.documents, problems, got.skipped):
                empty.append(t)
            findings.extend(problems)
            ndocs += got.documents
            inventory.extend(got.entries)
            if trainer_release.has_trainer_objects(scanned[id(t)]):
                decided.append((t.name, decision))
            continue
        r = rendered[id(t)]
        skipped += r.skipped
        decision = trainer_release.decide(t, r.documents, args.trainer_version, kubernetes_version=k8s,
                                          build=built_documents)
        schema = validate_documents(r.documents, kubernetes_version=k8s, trainer_version=decision.release,
                                    ignore_missing_schemas=args.ignore_missing_schemas, crds=crds, found=found,
                                    training_operator=args.training_operator_version, apply=args.apply)
        findings.extend(supersede(r.findings, schema) + schema)
        ndocs += len(r.documents)
        inventory.extend(r.documents)
        if trainer_release.has_trainer_objects(r.documents):
            decided.append((t.name, decision))
    findings.extend(nothing_to_apply(empty, ndocs))
    notes = trainer_release.notes(decided) + (found.note() if found is not None else [])
    if args.live:
        from ..live import check as live_check
        groups = [(t, rendered[id(t)].documents) for t in built if rendered[id(t)].ok]
        for t in tlist:
            if t.kind == FILE and str(t.path) != "-":
                try:
                    docs, _ = load_stream(t.path.read_text(encoding="utf-8-sig"), t.name)
                except (OSError, UnicodeDecodeError, UsageError):
                    continue            # its read error is already a finding
                groups.append((t, docs))
        findings.extend(live_check.findings(groups, preview=False, trainer_version=args.trainer_version))
    with output(args.output) as out:
        report.write(findings, args.format, TOOL, out, documents=ndocs, targets=[t.name for t in tlist],
                     rules=RULES, inventory=inventory, notes=notes, skipped=skipped)
    return F.exit_code(findings)


SCAN_LIMIT = 4 << 20    # bytes: a larger file is streamed only (its CRDs and Trainer objects are not looked for)
_WORTH_READING = re.compile(rb"CustomResourceDefinition|trainer\.kubeflow\.org|jobset\.x-k8s\.io")


def _scan(t) -> list:
    """The documents of a file named or walked, when it holds a CRD or Trainer objects (read again as a
    stream afterwards); [] for standard input, a large file, or one that does not."""
    if str(t.path) == "-":
        return []
    try:
        if t.path.stat().st_size > SCAN_LIMIT:
            return []
        raw = t.path.read_bytes()
    except OSError:
        return []
    if not _WORTH_READING.search(raw):
        return []
    try:
        docs, _ = load_stream(raw.decode("utf-8-sig"), t.name)
    except (UnicodeDecodeError, UsageError):
        return []
    return docs

if __name__ == "__main__":
    sys.exit(invoke(main))

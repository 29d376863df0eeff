"""migrate: move a job to Kubeflow Trainer v2, and prove with the merge preview that nothing else moved.

With no paths, every target the repository has (overlays/*/, charts/*/ci/*.yaml) that holds something to
migrate; with paths: YAML files (read as one set), overlay folders, chart values files.

- A PyTorchJob (Training Operator v1; Master/Worker or worker-only elastic) becomes a TrainJob on the
  runtime it needs: a runtime given with --runtime (or among the inputs) when it holds exactly what the
  job's pods need beyond the TrainJob's own fields, else one generated for the job.
- A TrainJob, and a runtime, change shape between Trainer 2.1 (podTemplateOverrides, numProcPerNode
  auto) and 2.2+ (runtimePatches), both ways.
- A values file of this project's chart goes from mode pytorchjob/elastic to trainjob.

What has no equivalent (elasticPolicy's bounds, restartPolicy ExitCode, the operator's env names, ...) is a
located finding saying what changes for the job. The table of equivalences, each row cited to both
operators' source: docs/migration.md.

Output (--output DIR, written whole or not at all: nothing when a target cannot be read or its migrated
output does not render; the input is never modified): a YAML file with the
migrated documents in place (comments and key order kept), an overlay beside the original (a kustomization
taking the original as its resource, JSON6902 patches, the generated runtimes), a values file. Without
--output nothing is written: the report says what would be.

Proof: for each job, the merge preview before and after compared pod by pod (containers, image, command,
args, resources, volumes, env after the operators' injection with each operator's env names mapped to each
other, world size, ranks, rendezvous) and its run policy; each difference explained by a row of the table
or unexplained. The migrated output is validated and linted for its Trainer release.

Exit 0 when everything migrated, 1 when an error was found (a job that cannot migrate, an output that does
not render, validate or lint errors of the output) or, with --check, any unexplained difference; 2 when an
input cannot be read or rendered.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from . import Parser, add_cluster_args, cluster_of, invoke, output
from .. import findings as F
from .. import targets as T
from .. import versions
from ..errors import UsageError
from ..migration import LABELS, load_runtimes, migrate_targets, release
from ..report import migrate_formats


def main(argv=None) -> int:
    p = Parser(prog="migrate", description=__doc__)
    p.add_argument("paths", nargs="*", help="overlay folders, chart values files or YAML files (default: every target)")
    p.add_argument("--to", metavar="X.Y", default=versions.TRAINER_DEFAULT,
                   help=f"the Trainer release to write for: 2.1 (podTemplateOverrides) or 2.2 and later, checked "
                        f"against {versions.TRAINER_RELEASES[-1]} (runtimePatches); default {versions.TRAINER_DEFAULT}")
    p.add_argument("--runtime", action="append", default=[], metavar="PATH",
                   help="runtimes a migrated job may run on when one fits (files, folders, overlays); repeatable")
    p.add_argument("--output", metavar="DIR", help="write the migrated targets below DIR, each at its own path")
    p.add_argument("-o", "--format", choices=migrate_formats.FORMATS, default="text", help="report format (default: text)")
    p.add_argument("--report", metavar="FILE", help="write the report to FILE (whole or not at all) instead of standard output")
    p.add_argument("--check", action="store_true", help="exit 1 on any unexplained difference")
    p.add_argument("--patch-manager", default="torch-k8s.io/kdt-migrate", metavar="NAME",
                   help="the manager of the runtimePatches entry written (Trainer 2.2+; a domain-prefixed path, which "
                        "the TrainJob webhook requires; default torch-k8s.io/kdt-migrate)")
    add_cluster_args(p)
    args = p.parse_args(argv)
    m = re.fullmatch(r"v?2\.(\d+)(\.\d+)?", args.to)
    if not m or not 1 <= int(m.group(1)) <= int(versions.TRAINER_RELEASES[-1].split(".")[1]):
        raise UsageError(f"--to {args.to!r}: expected a Trainer release from 2.1 to {versions.TRAINER_RELEASES[-1]} "
                         "(2.1: podTemplateOverrides; 2.2 and later: runtimePatches)")
    version = release(args.to)
    tlist = T.resolve(args.paths)
    runtimes = load_runtimes(args.runtime) if args.runtime else []
    out_dir = Path(args.output) if args.output else None
    results = migrate_targets(tlist, version, runtimes, out_dir, cluster_of(args), args.patch_manager)
    if not args.paths:
        results = [r for r in results if not r.nothing]
    with output(args.report) as out:
        migrate_formats.write(results, args.format, out, LABELS[version])
    problems = [f for r in results for f in (*r.findings, *r.checks)]
    code = F.exit_code(problems)
    if code == 0 and args.check and any(r.unexplained for r in results):
        code = 1
    return code


if __name__ == "__main__":
    sys.exit(invoke(main))

"""argocd: expand Argo CD ApplicationSets offline, then render, validate and lint every Application.

With no paths, reads deploy/argocd/ of the repository (a kustomization: it is
rendered first). With paths: the Argo CD objects' files or folders, rendered or
read like any target.

Each ApplicationSet's git directory generator is matched against the working
tree, its template filled for every folder found (goTemplate and
missingkey=error as Argo CD applies them); standalone Applications are taken
as they are. Then every Application's source is rendered as Argo CD would
(Helm values files and parameters, kustomize patches and options) and checked:
schemas, lint rules, and its AppProject (destination, source repository, the
kinds it may sync). Prints the Applications (or, with --applications, the
generated Application objects as YAML) and every problem, located.

Exit codes: 0 clean, 1 problems found (a generator that matches no folder, a
path or values file that does not exist, a kind the project does not permit,
an invalid rendered object), 2 bad usage or unreadable input.
"""
from __future__ import annotations

import sys

from . import Parser, add_cluster_args, add_output_args, add_trainer_version_arg, cluster_of, invoke, output
from .. import argocd as A
from .. import findings as F
from .. import kinds as K
from .. import targets as T
from .. import versions
from ..errors import UsageError
from ..lint import lint_documents
from ..paths import ROOT
from ..render import render_all
from ..report import write
from ..validate import supersede, validate_documents
from ..yamlout import quote_ambiguous

DEFAULT = "deploy/argocd"


def _check_apps(args, apps, docs, cluster, findings: list) -> tuple[list, int]:
    """Each Application checked against its AppProject, rendered (unless --no-render), validated and linted; the
    table's rows and the number of documents read. Its findings are added to `findings`."""
    projects = A.projects(docs)
    rows = []
    ndocs = len(docs)
    managed: dict[tuple, str] = {}     # resource key -> the Application that manages it
    for app in apps:
        project = projects.get(str(app.spec.get("project", "")))
        if project is None and app.spec.get("project") not in (None, "", "default"):
            findings.append(app.doc.finding(A.RULE, f"Application {app.name}: AppProject {app.spec.get('project')!r} "
                                                    "is not among the objects checked", app.base + ("project",),
                                            F.WARNING))
        if args.no_render:
            rendered, problems = [], []
        else:
            rendered, problems = A.check(app, project)
            trainer = args.trainer_version or A.trainer_version(app)
            problems += validate_documents(rendered, trainer_version=trainer)
            problems += lint_documents(rendered, trainer_version=trainer, cluster=cluster)
        findings += problems
        findings += A.shared_resources(app, rendered, managed)
        ndocs += len(rendered)
        src = app.spec.get("source") or {}
        rows.append((app.name, app.generated_from or "Application", str(src.get("path", "")),
                     len(rendered), sum(1 for f in problems if f.level == F.ERROR)))
    return rows, ndocs


def _write_applications(args, apps) -> None:
    from ruamel.yaml import YAML
    y = YAML()
    y.width = 4096
    with output(args.output) as out:
        for i, app in enumerate(apps):
            if i:
                out.write("---\n")
            out.write(f"# from {app.generated_from or app.doc.file}\n")
            y.dump(quote_ambiguous(app.obj), out)


def main(argv=None) -> int:
    p = Parser(prog="argocd.py", description=__doc__)
    p.add_argument("paths", nargs="*", help=f"Argo CD object files or folders (default: {DEFAULT})")
    p.add_argument("--applications", action="store_true",
                   help="print the Application objects (YAML) the ApplicationSets generate, then the report to stderr")
    p.add_argument("--no-render", action="store_true", help="expand and check paths only; do not render the sources")
    add_trainer_version_arg(p, "of the rendered TrainJobs and runtimes (default: the source's "
                               f"`# kdt:trainer-version` marker, as validate reads it; else {versions.TRAINER_DEFAULT})")
    add_cluster_args(p)
    add_output_args(p)
    args = p.parse_args(argv)
    cluster = cluster_of(args)
    paths = args.paths
    if not paths:
        if not (ROOT / DEFAULT).exists():
            raise UsageError(f"no {DEFAULT}/ in {ROOT}: name the files holding the Argo CD objects")
        paths = [str(ROOT / DEFAULT)]
    results = render_all(T.resolve(paths))
    findings: list[F.Finding] = [f for r in results for f in r.findings]
    docs = [d for r in results for d in r.documents]
    apps, found = A.expand(docs)
    findings += found
    if not any(K.APPLICATION.matches(d) or K.APPLICATIONSET.matches(d) for d in docs) and not findings:
        raise UsageError(f"{', '.join(paths)}: no Argo CD Application or ApplicationSet")
    schema = validate_documents(docs)
    findings = supersede(findings, schema) + schema
    rows, ndocs = _check_apps(args, apps, docs, cluster, findings)
    unique = list(dict.fromkeys(findings))
    if args.applications:
        _write_applications(args, apps)
        write(unique, "text", "argocd", sys.stderr, documents=ndocs)
        return F.exit_code(unique)
    with output(args.output) as out:
        if args.format == "text":
            w = max([len(r[0]) for r in rows] + [11])
            print(f"{'APPLICATION':<{w}}  {'FROM':<36}  {'PATH':<28}  DOCS  ERRORS", file=out)
            for name, origin, path, n, errors in rows:
                print(f"{name:<{w}}  {origin:<36}  {path:<28}  {n:>4}  {errors:>6}", file=out)
            print(file=out)
        write(unique, args.format, "argocd", out, documents=ndocs, targets=[r[0] for r in rows],
              rules={A.RULE: "An Argo CD ApplicationSet or Application that would not sync as written."})
    return F.exit_code(unique)


if __name__ == "__main__":
    sys.exit(invoke(main))

"""preview: the main job. Render every target, check it, and show what it runs.

For every overlay (overlays/*/) and chart values file (charts/*/ci/*.yaml):
1. render it with the project's pinned kubectl / helm;
2. validate every document against its schema (Kubernetes, Kubeflow, JobSet);
3. lint it with the training rules (docs/rules.md), and chart values files
   with `helm lint --strict` too;
4. expand it into what the operator will create (merge preview).
Then print the table (target, kinds, nodes, GPUs per node, processes per node,
world size), one line per target of what the operators create, and every
problem found, located. The Trainer release of each target is decided as
`kdt validate` decides it (its `# kdt:trainer-version=X.Y` marker, ...; see
`kdt validate --help`).

Exit 0 when all is well (warnings allowed), 1 when a check found errors, 2 when
a target does not render (kubectl's or helm's message is shown).
"""
from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

from . import Parser, add_cluster_args, add_kubernetes_version_arg, add_live_arg, cluster_of, invoke
from .. import findings as F
from .. import kinds as K
from .. import summary, targets, trainer_release, versions
from ..merge_preview import expand_documents, kueue_workloads, summary_line, workload_line
from ..lint import config as lint_config
from ..lint import lint_target
from ..render import built_documents, cores, helm_lint, holds_nothing, nothing_to_apply, render_all
from ..schemas.crds import RunCrds
from ..report import text as text_report
from ..validate import supersede, validate_documents


def main(argv=None) -> int:
    p = Parser(prog="preview.py", description=__doc__)
    p.add_argument("paths", nargs="*", help="targets (default: every overlay and chart values file)")
    add_kubernetes_version_arg(p, "its schemas, and the Pod Security policy version of `latest`")
    add_cluster_args(p)
    add_live_arg(p)
    args = p.parse_args(argv)
    started = time.perf_counter()
    print(f"# {versions.describe()}")
    tlist = targets.resolve(args.paths)
    results = render_all(tlist)
    # `helm lint` of each chart target runs in the background while this process validates and lints
    # (a subprocess each: the threads only wait)
    linter = ThreadPoolExecutor(max_workers=cores())
    helm_lints = {id(r): linter.submit(helm_lint, r.target) for r in results if r.ok and r.target.kind == targets.HELM}
    found = RunCrds(d for r in results for d in r.documents if K.CRD.matches(d)) or None
    cfg = lint_config.load(None)
    cluster = cluster_of(args)
    problems: list[F.Finding] = []
    creates: list[str] = []
    run_docs = [d for x in results for d in x.documents]   # references resolve across the run
    for r in results:
        if not r.ok:
            problems.extend(r.findings)
            continue
        if id(r) in helm_lints:
            problems.extend(helm_lints[id(r)].result())
        trainer = trainer_release.decide(r.target, r.documents, build=built_documents).release
        schema = validate_documents(r.documents, kubernetes_version=args.kubernetes_version,
                                    trainer_version=trainer, found=found)
        problems.extend(supersede(r.findings, schema) + schema)
        problems.extend(lint_target(r.target, r.documents, trainer_version=trainer, config=cfg, run_docs=run_docs,
                                    kubernetes_version=args.kubernetes_version, cluster=cluster))
        expanded, expand_findings = expand_documents(r.documents, trainer_version=trainer, options=cluster.options)
        problems.extend(expand_findings)
        creates.append(summary_line(r.target.name, expanded))
        creates.extend(f"{r.target.name}: {workload_line(w)}"
                       for _, w in kueue_workloads(r.documents, expanded, trainer, cluster.options))
    linter.shutdown()
    problems.extend(nothing_to_apply([r.target for r in results if holds_nothing(r.target, len(r.documents),
                                                                                 r.findings, r.skipped, r.text)],
                                     sum(len(r.documents) for r in results)))
    if args.live:
        from ..live import check as live_check
        problems.extend(live_check.findings([(r.target, r.documents) for r in results if r.ok and r.documents]))
    rows = summary.summary_rows([summary.summarize(r.target.name, r.documents) for r in results if r.ok])
    print()
    print(summary.table(rows, summary.SUMMARY_HEADER))
    print("\nWhat the operators will create (`kdt merge-preview` shows it whole):")
    for line in creates:
        print(f"  {line}")
    print()
    for f in sorted(set(problems), key=F.sort_key):
        print(text_report.line(f))
    ndocs = sum(len(r.documents) for r in results)
    errors = sum(1 for f in problems if f.level == F.ERROR)
    print(f"preview: {len(tlist)} target(s), {ndocs} document(s) rendered, validated and linted: "
          f"{errors} error(s), {len(problems) - errors} warning(s) in {time.perf_counter() - started:.1f} s")
    return F.exit_code(problems)


if __name__ == "__main__":
    sys.exit(invoke(main))

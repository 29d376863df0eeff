"""lint: rules that know training workloads, over every target or the paths given.

With no paths, lints every target of the repository (overlays/*/ rendered with
the pinned kubectl, charts/*/ci/*.yaml with the pinned helm) and runs the
overlay-hygiene rules on each overlay's kustomization tree. With paths: overlay
folders, chart values files, YAML files or folders of them (`-` is standard input).

Ignore a rule for one resource with the annotation
    lint.kdt.dev/ignore.<rule-id>: "<reason>"
or for paths in the config file (.kdt-lint.yaml at the repo root, or --config).
--strict refuses every ignore.

A target that does not render gets its render error and nothing else.

Exit codes: 0 clean (warnings allowed), 1 errors, 2 unreadable input, a target
that does not render, or bad usage.
"""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from . import (Parser, add_cluster_args, add_jobs_arg, add_kubernetes_version_arg, add_output_args,
               add_trainer_version_arg, cluster_of, output)
from .. import findings as F
from .. import targets as T
from .. import trainer_release, versions
from ..lint import config as C
from ..lint import all_rules, lint_target
from ..lint.rules.pod_security import ID as PS_ID
from ..lint.rules.pod_security import settings
from ..lint.kustomization import prefetch_patch_effects
from ..lint.rules.kustomize_patch_target import ID as PATCH_TARGET
from ..paths import ROOT
from ..render import built_documents, cores, holds_nothing, nothing_to_apply, render_all
from ..report import write


def _list() -> str:
    rows = [(r.id, r.level, r.basis or "-", r.summary) for r in all_rules().values()]
    w = max(len(r[0]) for r in rows)
    return "\n".join(f"{rid:<{w}}  {lvl:<7}  {basis:<8}  {summary}" for rid, lvl, basis, summary in rows)


def main(argv=None) -> int:
    p = Parser(prog="lint.py", description=__doc__)
    p.add_argument("paths", nargs="*", help="overlay folders, chart values files or YAML files (default: every target)")
    p.add_argument("--list", action="store_true", help="list the rules (ID, level, why that level, summary) and exit")
    p.add_argument("--strict", action="store_true", help="refuse ignores (annotations and config file)")
    p.add_argument("--config", metavar="FILE", help=f"config file (default: {C.DEFAULT_FILE} at the repo root, if present)")
    add_trainer_version_arg(p, "TrainJobs are written for, for every target (default: as validate decides it: the "
                               "target's `# kdt:trainer-version=X.Y` marker, the repository's pin, the shape of its "
                               f"Trainer objects, else {versions.TRAINER_DEFAULT})")
    add_kubernetes_version_arg(p, "the Pod Security policy version of `latest` and of the pod-security rule's default")
    p.add_argument("--pod-security", metavar="LEVEL[:VERSION]",
                   help="profile the pod-security rule warns about: restricted, baseline or privileged, optionally "
                        "with a policy version (restricted:v1.30); default: the config's, else restricted at "
                        "--kubernetes-version")
    add_cluster_args(p)
    add_jobs_arg(p)
    add_output_args(p)
    args = p.parse_args(argv)
    if args.list:
        with output(args.output) as out:
            print(_list(), file=out)
        return 0
    cfg = C.load(args.config)
    k8s = args.kubernetes_version
    if args.pod_security:
        level, _, version = args.pod_security.partition(":")
        settings(level, version, k8s)      # a bad value is a usage error now, not in the middle of the run
        cfg.rule_options[PS_ID] = {**cfg.options(PS_ID), "profile": level, "version": version}
    cluster = cluster_of(args)
    tlist = T.resolve(args.paths, changed=args.changed_files)
    with ThreadPoolExecutor(max_workers=1) as background:
        renders = background.submit(render_all, tlist, args.jobs)
        if not args.trainer_version:
            trainer_release.repository_pin(ROOT)        # read while kubectl and helm run (cached for decide)
        results = renders.result()
    if cfg.enabled(PATCH_TARGET):      # its renders with and without a patch, in parallel too
        prefetch_patch_effects([r.target.path for r in results if r.ok and r.target.kind == T.KUSTOMIZE],
                               args.jobs or cores())
    found: list[F.Finding] = []
    ndocs = 0
    decided = []
    run_docs = [d for r in results for d in r.documents]
    for r in results:
        found.extend(r.findings)
        if not r.ok:
            continue        # a target that did not render gets its render error and nothing else
        ndocs += len(r.documents)
        decision = trainer_release.decide(r.target, r.documents, args.trainer_version, kubernetes_version=k8s,
                                          build=built_documents)
        if trainer_release.has_trainer_objects(r.documents):
            decided.append((r.target.name, decision))
        found.extend(lint_target(r.target, r.documents, decision.release, cfg, args.strict, run_docs=run_docs,
                                 kubernetes_version=k8s, cluster=cluster))
    found.extend(nothing_to_apply([r.target for r in results if holds_nothing(r.target, len(r.documents), r.findings,
                                                                              r.skipped, r.text)], ndocs))
    unique = list(dict.fromkeys(found))
    with output(args.output) as out:
        write(unique, args.format, "lint", out, documents=ndocs, targets=[t.name for t in tlist],
              rules={r.id: r.summary for r in all_rules().values()}, notes=trainer_release.notes(decided))
    return F.exit_code(unique)


if __name__ == "__main__":
    from . import invoke
    sys.exit(invoke(main))

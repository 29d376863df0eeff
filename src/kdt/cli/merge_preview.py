"""merge_preview: what the operator will create from your manifests.

With no paths, every target the repository has (overlays/*/, charts/*/ci/*.yaml);
with paths: overlay folders, chart values files, YAML files (YAML files named
together are read as one set, so a TrainJob and its runtime may sit in two files).

- Trainer v2: the JobSet made from a TrainJob and its (Cluster)TrainingRuntime
  (numNodes, the trainer's image/command/args/resources/env on `node`,
  podTemplateOverrides (2.1) or runtimePatches (2.2+), PET_* env, port 29500),
  the PodGroup of its podGroupPolicy, and what JobSet makes of it: the headless
  Service, the Jobs and their pods with every label and annotation.
- Training Operator v1: one pod per replica with the env, port, init container
  and restartPolicy the operator gives it (the init container from the template the
  cluster's operator reads: .kdt-cluster.yaml or --pytorch-init-container-template; else
  the operator's built-in one; the output says which), its headless Service, and
  with a gang scheduler (.kdt-cluster.yaml or --gang-scheduler) the PodGroup.
- StatefulSet: its pods, the ordinal being the rank.

A job the webhook refuses previews as the refusal (the lint rule's finding,
exit 1); a suspended job, or one another controller manages, shows that nothing
is created yet and why. Past 128 pods of a replica type or a Job, the first
and last are shown and the rest counted (--all shows every one).

Output: the objects as YAML (comments of the source kept where the value came
from it), or --diff (field by field against the unmerged template), or
--explain (for each injected or overridden field, where it came from), or
--summary (one line per target). The input is never modified.

Exit 0 when everything resolves, 1 when a reference does not resolve (missing
runtime, target job or container; a field of another Trainer release), located
as file:line:col, 2 when a target cannot be read or rendered (the others are
still shown).
"""
from __future__ import annotations

import sys

from ..yamlout import quote_ambiguous
from . import Parser, add_cluster_args, add_live_arg, add_trainer_version_arg, cluster_of, invoke, output
from .. import findings as F
from .. import targets as T
from ..diff import field_changes
from ..merge_preview import (Limit, elided_lines, explain_lines, pod_notes, preview_targets, summary_line,
                             workload_line)
from ..operators.training_operator_v1 import facts as TO1
from ..render import render_all
from ..report import text as text_report


def _groups(tlist):
    """(name, documents, findings) per target; plain YAML files form one group."""
    results = render_all(tlist)
    groups = []
    files = [r for r in results if r.target.kind == T.FILE]
    for r in results:
        if r.target.kind != T.FILE:
            groups.append((r.target.name, r.documents, r.findings))
    if files:
        name = files[0].target.name if len(files) == 1 else f"{len(files)} files"
        groups.append((name, [d for r in files for d in r.documents], [f for r in files for f in r.findings]))
    return groups


def _live_groups(tlist):
    """(target, documents) per target for --live (renders are memoized: no second kubectl or helm run)."""
    return [(r.target, r.documents) for r in render_all(tlist) if r.ok and r.documents]


def _yaml():
    """The writer: ruamel round-trip (keeps comments); quote_ambiguous quotes what YAML 1.1 would retype."""
    from ruamel.yaml import YAML
    y = YAML(typ="rt")
    y.default_flow_style = False     # objects the operators build (plain mappings) in block style, as the source's
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def _parser() -> Parser:
    p = Parser(prog="merge_preview.py", description=__doc__)
    p.add_argument("paths", nargs="*", help="overlay folders, chart values files or YAML files (default: every target)")
    add_trainer_version_arg(p, "to preview for (2.1: podTemplateOverrides; 2.2+: runtimePatches); default: "
                               "inferred per TrainJob from the fields it uses")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="show what the operator changes, field by field, against the unmerged template")
    mode.add_argument("--explain", action="store_true", help="for each injected or overridden field, say where it came from")
    mode.add_argument("--summary", action="store_true", help="one line per target: pods, world size, rendezvous")
    p.add_argument("--gang-scheduler", metavar="NAME", help="the Training Operator's --gang-scheduler-name "
                   f"({TO1.GANG_VOLCANO}, or a scheduler-plugins scheduler name such as {TO1.GANG_SCHEDULER_PLUGINS}): "
                   "show the PodGroup it makes of a PyTorchJob (default: .kdt-cluster.yaml's trainingOperator.gangSchedulerName, "
                   "else none, as the operator's default)")
    p.add_argument("--all", action="store_true", help="build every pod, however many (the default shows the first and "
                   "last past 128 of a kind and counts the rest)")
    p.add_argument("--output", metavar="FILE", help="write to FILE (whole or not at all) instead of standard output")
    add_cluster_args(p)
    add_live_arg(p)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    version = args.trainer_version
    cluster = cluster_of(args)
    options = {**cluster.options, **({TO1.GANG_OPTION: args.gang_scheduler} if args.gang_scheduler else {}),
               **({"limit": Limit(None)} if args.all else {})}
    tlist = T.resolve(args.paths)
    results, problems = preview_targets(_groups(tlist), version, options,
                                        roundtrip=not (args.diff or args.explain or args.summary))
    if args.live:
        from ..live import check as live_check
        problems.extend(live_check.findings(_live_groups(tlist), admission=False, trainer_version=version))
    for f in sorted(problems, key=F.sort_key):
        print(text_report.line(f), file=sys.stderr)
    code = F.exit_code(problems)
    if not results and code:
        return code             # nothing read: no output (file) at all
    with output(args.output) as out:
        write = _write_summary if args.summary else _write_explain if args.explain else \
            _write_diff if args.diff else _write_yaml
        write(out, results)
    return code


def _write_summary(out, results) -> None:
    for name, expanded, held, workloads in results:
        print(summary_line(name, expanded, held), file=out)
        for _, w in workloads:
            print(f"{name}: {workload_line(w)}", file=out)


def _write_explain(out, results) -> None:
    for name, expanded, held, workloads in results:
        print(f"# target: {name}", file=out)
        _held_and_elided(out, name, expanded, held, "")
        for e in expanded:
            print(f"{e.kind}/{e.name} (from {e.source.kind}/{e.source.name}, {e.source.file} doc {e.source.index}):", file=out)
            for line in explain_lines(e):
                print("  " + line.split(" ", 1)[1], file=out)
            for line in pod_notes(e):
                print("  " + line, file=out)
        for job, w in workloads:
            print(f"Workload (Kueue, from {job.kind}/{job.name}): {workload_line(w)}", file=out)


def _write_diff(out, results) -> None:
    for name, expanded, held, _ in results:
        print(f"# target: {name}", file=out)
        _held_and_elided(out, name, expanded, held, "")
        for e in expanded:
            base = e.base if isinstance(e.base, dict) else {}
            before = {"metadata": base.get("metadata") or {}, "spec": base.get("spec") or {}}
            after = {"metadata": e.obj.get("metadata") or {}, "spec": e.obj.get("spec") or {}}
            src = f"{e.base_doc.kind}/{e.base_doc.name}" if e.base_doc else "?"
            print(f"{e.kind}/{e.name} against {src} {'.'.join(map(str, e.base_path))}:", file=out)
            for ch in field_changes(before, after):
                sign = {"added": "+", "removed": "-", "changed": "~"}[ch.op]
                old = "" if ch.op == "added" else f"{_short(ch.old)} -> "
                new = "(removed)" if ch.op == "removed" else _short(ch.new)
                print(f"  {sign} {ch.path}: {old}{new}", file=out)


def _write_yaml(out, results) -> None:
    y = _yaml()
    first = True
    for name, expanded, held, workloads in results:
        _held_and_elided(out, name, expanded, held, "# ")
        for e in expanded:
            if not first:
                out.write("---\n")
            first = False
            out.write(f"# target: {name}; {e.kind}/{e.name} from {e.source.kind}/{e.source.name} "
                      f"({e.source.file}, doc {e.source.index})\n")
            for line in pod_notes(e):
                out.write(f"# {line}\n")
            y.dump(quote_ambiguous(e.obj), out)
        for job, w in workloads:
            if not first:
                out.write("---\n")
            first = False
            out.write(f"# target: {name}; the Kueue Workload {job.kind}/{job.name} becomes (its name ends in a hash "
                      f"of the job's UID; each pod set's template cut to what admission reads; "
                      f"status.resourceRequests: the pod set's total)\n")
            y.dump(w.as_object(), out)


def _held_and_elided(out, name: str, expanded, held, prefix: str) -> None:
    """What creates nothing yet (and why), and what the preview counted instead of building."""
    for h in held:
        print(f"{prefix}target: {name}; {h.source.kind}/{h.source.name} ({h.source.file}, doc {h.source.index}): "
              f"nothing created yet: {h.reason}", file=out)
    for e in expanded:
        if e.facts.get("held"):
            print(f"{prefix}target: {name}; {e.kind}/{e.name}: {e.facts['held']}", file=out)
    for line in elided_lines(expanded):
        print(f"{prefix}target: {name}; {line} (--all shows them)", file=out)


def _short(v) -> str:
    import json
    text = json.dumps(v, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


if __name__ == "__main__":
    sys.exit(invoke(main))

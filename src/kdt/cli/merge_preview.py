"""merge_preview: what the operator will create from your manifests.

With no paths, every target the repository has (overlays/*/, charts/*/ci/*.yaml);
with paths: overlay folders, chart values files, YAML files (YAML files named
together are read as one set, so a TrainJob and its runtime may sit in two files).

- Trainer v2: the JobSet made from a TrainJob and its (Cluster)TrainingRuntime
  (numNodes, the trainer's image/command/args/resources/env on `node`,
  podTemplateOverrides (2.1) or runtimePatches (2.2+), PET_* env, port 29500).
- Training Operator v1: one pod per replica with the env, port, init container
  and restartPolicy the operator gives it (the init container from the template the
  cluster's operator reads: .kdt-cluster.yaml or --pytorch-init-container-template; else
  the operator's built-in one; the output says which).
- StatefulSet: its pods, the ordinal being the rank.

Output: the objects as YAML (comments of the source kept where the value came
from it), or --diff (field by field against the unmerged template), or
--explain (for each injected or overridden field, where it came from), or
--summary (one line per target). The input is never modified.

Exit 0 when everything resolves, 1 when a reference does not resolve (missing
runtime, target job or container; a field of another Trainer release), located
as file:line:col, 2 when a target cannot be read or rendered.
"""
from __future__ import annotations

import re
import sys

from ..yamlout import quote_ambiguous
from . import Parser, add_cluster_args, cluster_of, invoke, output
from .. import findings as F
from .. import targets as T
from ..diff import field_changes
from ..errors import UsageError
from ..merge_preview import Loader, expand_documents, explain_lines, pod_notes, summary_line
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


def _yaml():
    """The writer: ruamel round-trip (keeps comments); quote_ambiguous quotes what YAML 1.1 would retype."""
    from ruamel.yaml import YAML
    y = YAML(typ="rt")
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def main(argv=None) -> int:
    p = Parser(prog="merge_preview.py", description=__doc__)
    p.add_argument("paths", nargs="*", help="overlay folders, chart values files or YAML files (default: every target)")
    p.add_argument("--trainer-version", metavar="X.Y", help="Trainer release to preview for (2.1: podTemplateOverrides; "
                   "2.2+: runtimePatches); default: inferred per TrainJob from the fields it uses")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="show what the operator changes, field by field, against the unmerged template")
    mode.add_argument("--explain", action="store_true", help="for each injected or overridden field, say where it came from")
    mode.add_argument("--summary", action="store_true", help="one line per target: pods, world size, rendezvous")
    p.add_argument("--output", metavar="FILE", help="write to FILE (whole or not at all) instead of standard output")
    add_cluster_args(p)
    args = p.parse_args(argv)
    if args.trainer_version and not re.fullmatch(r"v?2\.\d+(\.\d+)?", args.trainer_version):
        raise UsageError(f"--trainer-version {args.trainer_version!r}: expected a Trainer v2 release such as 2.1 or 2.3")
    version = args.trainer_version.lstrip("v") if args.trainer_version else None
    cluster = cluster_of(args)
    groups = _groups(T.resolve(args.paths))
    problems: list[F.Finding] = []
    results = []
    loader = Loader(roundtrip=not (args.diff or args.explain or args.summary))
    for name, docs, fs in groups:
        problems.extend(fs)
        if F.exit_code(fs) == 2:
            continue
        expanded, efs = expand_documents(docs, trainer_version=version, loader=loader, options=cluster.options)
        problems.extend(efs)
        results.append((name, expanded))
    for f in sorted(problems, key=F.sort_key):
        print(text_report.line(f), file=sys.stderr)
    code = F.exit_code(problems)
    if code == 2:
        return 2
    with output(args.output) as out:
        if args.summary:
            for name, expanded in results:
                print(summary_line(name, expanded), file=out)
        elif args.explain:
            for name, expanded in results:
                print(f"# target: {name}", file=out)
                for e in expanded:
                    print(f"{e.kind}/{e.name} (from {e.source.kind}/{e.source.name}, {e.source.file} doc {e.source.index}):", file=out)
                    for line in explain_lines(e):
                        print("  " + line.split(" ", 1)[1], file=out)
                    for line in pod_notes(e):
                        print("  " + line, file=out)
        elif args.diff:
            for name, expanded in results:
                print(f"# target: {name}", file=out)
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
        else:
            y = _yaml()
            first = True
            for name, expanded in results:
                for e in expanded:
                    if not first:
                        out.write("---\n")
                    first = False
                    out.write(f"# target: {name}; {e.kind}/{e.name} from {e.source.kind}/{e.source.name} "
                              f"({e.source.file}, doc {e.source.index})\n")
                    for line in pod_notes(e):
                        out.write(f"# {line}\n")
                    y.dump(quote_ambiguous(e.obj), out)
    return code


def _short(v) -> str:
    import json
    text = json.dumps(v, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


if __name__ == "__main__":
    sys.exit(invoke(main))

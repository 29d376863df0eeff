"""diff: what a change does to every rendered resource.

Renders every overlay and chart values file at two git refs with the project's
pinned kubectl and helm (default: the merge base with `main` against the working
tree; the working tree and index are never touched: refs are extracted with
`git archive` into a temporary folder) and prints, per target, the resources
added, removed and changed, each change as a field path with old and new value,
and a summary line: nodes, GPUs, CPU and memory requested before and after.

Exit 0 when nothing changed (or, without --exit-code, whatever changed),
1 when something changed and --exit-code is given, 2 on errors (a bad ref,
a target that does not render).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from . import Parser, output, invoke
from .. import diff as D
from ..report import diff_formats


def main(argv=None) -> int:
    p = Parser(prog="diff.py", description=__doc__)
    p.add_argument("paths", nargs="*", help="limit to these targets (overlays/x, charts/c/ci/v.yaml); default: all")
    p.add_argument("--base", metavar="REF", help="the ref before the change (default: merge base of HEAD and main)")
    p.add_argument("--head", metavar="REF", help="the ref after the change (default: the working tree)")
    p.add_argument("-o", "--format", choices=diff_formats.FORMATS, default="terminal",
                   help="terminal (coloured on a TTY), markdown (PR comment), json (default: terminal)")
    p.add_argument("--output", metavar="FILE", help="write to FILE (whole or not at all) instead of standard output")
    p.add_argument("--exit-code", action="store_true", help="exit 1 when something changed")
    p.add_argument("--repo", metavar="DIR", default=None, help="the git repository (default: this project's)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour in terminal format")
    args = p.parse_args(argv)
    repo = D.repo_root(Path(args.repo) if args.repo else D.ROOT)
    base = args.base or D.default_base(repo)
    diffs = D.diff_refs(repo, base, args.head, args.paths or None)
    with output(args.output) as out:
        color = args.color == "always" or (args.color == "auto" and not args.output and out.isatty()
                                           and not os.environ.get("NO_COLOR"))
        diff_formats.write(diffs, args.format, out, color=color, base=args.base or f"merge-base({base[:12]})",
                           head=args.head or "")
    if any(td.status == "error" for td in diffs):
        return 2
    if args.exit_code and any(td.changed for td in diffs):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(invoke(main))

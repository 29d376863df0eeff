"""render: build every overlay and chart values file with the project's pinned kubectl and helm.

With no paths, renders every target the repository has (overlays/*/ and
charts/*/ci/*.yaml). With paths: overlay folders, chart values files, YAML files.

Prints the rendered YAML (one stream per target, a `# target: NAME` comment
before each), or with --summary the table of what each target runs.
Exit 0 when everything renders, 2 when a target fails to render (kubectl's or
helm's own message is shown) or a path cannot be read; every other target is
still written.
"""
from __future__ import annotations

import sys

from . import Parser, output, invoke
from .. import findings as F
from .. import summary, targets
from ..render import render_all
from ..report import text as text_report


def main(argv=None) -> int:
    p = Parser(prog="render.py", description=__doc__)
    p.add_argument("paths", nargs="*", help="overlay folders, chart values files or YAML files (default: every target)")
    p.add_argument("--summary", action="store_true", help="print the table: target, kinds, nodes, GPUs per node, world size")
    p.add_argument("--list", action="store_true", help="list the targets and exit")
    p.add_argument("--output", metavar="FILE", help="write to FILE (whole or not at all)")
    args = p.parse_args(argv)
    tlist = targets.resolve(args.paths)
    if args.list:
        for t in tlist:
            print(f"{t.kind:10} {t.name}")
        return 0
    results = render_all(tlist)
    problems = [f for r in results for f in r.findings]
    for f in problems:
        print(text_report.line(f), file=sys.stderr)
    code = F.exit_code(problems)
    # A target that did not render or read is its error above; every other one is written whole.
    done = [r for r in results if r.ok and not any(f.rule == "yaml" and f.level == F.ERROR for f in r.findings)]
    if not done and code:
        return code             # nothing rendered: no output (file) at all
    with output(args.output) as out:
        if args.summary:
            rows = summary.summary_rows([summary.summarize(r.target.name, r.documents) for r in done])
            print(summary.table(rows, summary.SUMMARY_HEADER), file=out)
        else:
            for r in done:
                print(f"# target: {r.target.name}", file=out)
                out.write(r.text if r.text.endswith("\n") or not r.text else r.text + "\n")
                if r is not done[-1]:
                    print("---", file=out)
    return code


if __name__ == "__main__":
    sys.exit(invoke(main))

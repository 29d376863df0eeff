"""preview: the main job. Render every target, check it, and show what it runs.

For every overlay (overlays/*/) and chart values file (charts/*/ci/*.yaml):
render it with the project's pinned kubectl / helm, then print a table
(target, kinds, nodes, GPUs per node, processes per node, world size) and every
problem found, located. Exit 0 when all is well, 1 when a check found errors,
2 when a target does not render (kubectl's or helm's message is shown).
"""
from __future__ import annotations

import sys
import time

from . import Parser, run
from .. import findings as F
from .. import summary, targets, versions
from ..render import render_all
from ..report import text as text_report


def main(argv=None) -> int:
    p = Parser(prog="preview.py", description=__doc__)
    p.add_argument("paths", nargs="*", help="targets (default: every overlay and chart values file)")
    args = p.parse_args(argv)
    started = time.perf_counter()
    print(f"# {versions.describe()}")
    tlist = targets.resolve(args.paths)
    results = render_all(tlist)
    problems: list[F.Finding] = [f for r in results for f in r.findings]
    rows = summary.summary_rows([summary.summarize(r.target.name, r.documents) for r in results if r.ok])
    print()
    print(summary.table(rows, summary.SUMMARY_HEADER))
    print()
    for f in sorted(problems, key=F.sort_key):
        print(text_report.line(f))
    ndocs = sum(len(r.documents) for r in results)
    errors = sum(1 for f in problems if f.level == F.ERROR)
    print(f"preview: {len(tlist)} target(s), {ndocs} document(s), {errors} error(s), "
          f"{len(problems) - errors} warning(s) in {time.perf_counter() - started:.1f} s")
    return F.exit_code(problems)


if __name__ == "__main__":
    sys.exit(run(main))

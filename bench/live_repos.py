#!/usr/bin/env python3
"""validate/lint's admission verdicts against the real API server's, on the public repositories
bench/repos_real.py reads (each at its pinned revision, bench/repos.py), as a user of `--live` sees them.

For each repository, in its own root (its own Trainer release decisions, its own cluster file if any):
`bench/live_judge.py --admission-only` (kdt.live: one control plane per Trainer release; every document
applied server-side with --dry-run=server, one at a time, accepted ones for real so later documents meet
them). Printed: documents judged, agreeing verdicts, each disagreement (the API server's message and kdt's
findings), the documents not judged (a kind this control plane does not serve) by kind.

    .venv/bin/python bench/live_repos.py [--repo owner/name ...]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import repos  # noqa: E402
from repos_real import REPOS  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", action="append", help="owner/name (default: every repository of repos_real.py)")
    args = p.parse_args(argv)
    names = args.repo or list(REPOS)
    total = Counter()
    lines = []
    for name in names:
        folder = repos.checkout(name, REPOS[name])
        if folder is None:
            print(f"{name}: {repos.missing(name) if hasattr(repos, 'missing') else 'not fetched'}", file=sys.stderr)
            continue
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, str(HERE / "live_judge.py"), "--admission-only"], cwd=folder,
                              capture_output=True, text=True, env={**os.environ, "KDT_ROOT": str(folder)})
        out = proc.stdout.splitlines()
        docs = agree = judged = 0
        for ln in out:
            m = re.match(r"^\S.*?\s+(\d\.\d+)\s+(\d+)\s+(\d+)/(\d+)\s", ln)
            if m:
                docs += int(m.group(2))
                agree += int(m.group(3))
                judged += int(m.group(4))
        skipped = Counter(re.sub(r".*: not judged: (\S+ \S+) is not served.*", r"\1", ln)
                          for ln in out if "not judged:" in ln)
        disagreements = [ln for ln in out if " API server: " in ln]
        total.update(docs=docs, judged=judged, agree=agree, skipped=sum(skipped.values()))
        print(f"{name}@{REPOS[name][:12]}: {docs} documents, {judged} judged, {agree} agreeing, "
              f"{len(disagreements)} disagreeing, {sum(skipped.values())} not judged; {time.monotonic() - t0:.0f} s"
              + (f" (exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1][:200]})"
                 if proc.returncode not in (0, 1) and proc.stderr.strip() else ""))
        for kind, n in skipped.most_common():
            lines.append(f"  {name}: not judged: {n} x {kind}")
        for ln in disagreements:
            lines.append(f"  {name}:{ln.strip()[:600]}")
    for ln in lines:
        print(ln)
    print(f"\nlive repos: {total['docs']} documents, {total['judged']} judged, {total['agree']} agreeing, "
          f"{total['judged'] - total['agree']} disagreeing, {total['skipped']} not judged")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""validate/lint's admission verdicts against the real API server's, on the public repositories
bench/repos_real.py reads (each at its pinned revision, bench/repos.py), as a user of `--live` sees them.

Two steps, so that one control plane serves every repository:
1. each repository, in a process of its own run in its root (its own targets, Trainer release decisions
   and cluster file, as `kdt validate` there): its targets rendered and grouped into units (a target, or a
   walked folder's files: kdt.live.admission.units), kdt's verdict on each document (kdt.live.verdicts);
2. here, every repository's units on one control plane per release set at a time (kdt.live.judge.execute:
   each unit's documents applied server-side with --dry-run=server tier by tier, one kubectl call per tier;
   what later documents' admission reads applied for real), a progress line per unit on stderr.

Printed per repository: documents (objects), judged, agreeing, disagreeing (each listed with the API
server's message and kdt's findings), not judged (by reason), and where both refuse whether kdt names the
field the server names (same, nested, different: listed, or no field on one side).

    .venv/bin/python bench/live_repos.py [--repo owner/name ...]
"""
from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import repos  # noqa: E402
from repos_real import REPOS  # noqa: E402

SRC = ROOT / "src"


def _plan(name: str, out: str) -> int:
    """Step 1, in the repository's root: its jobs (kdt.live.judge.plan) pickled into `out`."""
    sys.path.insert(0, str(SRC))
    from kdt import cluster_file
    from kdt import targets
    from kdt.live.judge import plan
    from kdt.render import render_all
    jobs = plan(render_all(targets.resolve([])), cluster_file=cluster_file.load(), source=name)
    for j in jobs:
        for d in j.unit.documents:
            d._node = None          # composed again from the text when a finding is located
    Path(out).write_bytes(pickle.dumps(jobs))
    return 0


def _key(doc) -> tuple:
    return (doc.file, doc.index, doc.prefix)


def _name(data: dict) -> str:
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return str(meta.get("name") or (f"{meta['generateName']}*" if meta.get("generateName") else None))


def _report(name: str, jobs, results, seconds: float) -> tuple[dict, list[str]]:
    """The figures of one repository, and its lines (disagreements, not judged, fields)."""
    docs = {}
    for j in jobs:
        for d in j.unit.documents:
            if isinstance(d.data, dict) and d.data.get("kind"):
                docs[_key(d)] = d
    seen: dict = {}           # document -> [(release set, Admission)]
    for j, res in results:
        for a in res.admissions:
            seen.setdefault(_key(a.doc), []).append((f"Trainer {res.release}, Training Operator {res.training_operator}", a))
    judged = {k: v for k, v in seen.items() if any(a.skipped is None for _, a in v)}
    disagree = {k: v for k, v in judged.items() if any(not a.agree for _, a in v)}
    skipped = Counter(next(a.skipped for _, a in v) for k, v in seen.items() if k not in judged)
    fields = Counter()
    lines = []
    for k, v in sorted(judged.items()):
        a = next(a for _, a in v if a.skipped is None)
        if a.field is not None:
            fields[a.field] += 1
            if a.field != "same field":
                lines.append(f"  {name}: {a.doc.file}:{a.doc.line}: {a.doc.data.get('kind')} {_name(a.doc.data)}: "
                             f"both refuse, {a.field}: kdt {', '.join(a.our_fields) or '-'}; "
                             f"server {', '.join(a.server_fields) or '-'}")
    for k, v in sorted(disagree.items()):
        for where, a in v:
            if a.agree:
                continue
            ours = "; ".join(f"{f.rule} {f.path}: {f.message}" for f in a.ours) or "accepted"
            lines.append(f"  {name}: {a.doc.file}:{a.doc.line}: {a.doc.data.get('kind')} {_name(a.doc.data)} "
                         f"({where}): API server: {(a.refused or 'accepted')[:600]}; kdt: {ours[:400]}")
    for why, n in skipped.most_common():
        lines.append(f"  {name}: not judged: {n} x {why}")
    notes = [f"  {name}: {res.target}: {note}" for _, res in results for note in res.notes]
    head = (f"{name}@{REPOS[name][:12]}: {len(docs)} documents, {len(judged)} judged, "
            f"{len(judged) - len(disagree)} agreeing, {len(disagree)} disagreeing, {len(docs) - len(judged)} not judged"
            f" ({len({j.unit.name for j in jobs})} units, {len(jobs)} unit/release pairs); {seconds:.0f} s")
    if fields:
        head += "; both refuse: " + ", ".join(f"{n} {f}" for f, n in sorted(fields.items()))
    figures = {"docs": len(docs), "judged": len(judged), "agree": len(judged) - len(disagree),
               "disagree": len(disagree), "skipped": len(docs) - len(judged)}
    return figures, [head, *lines, *notes]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", action="append", help="owner/name (default: every repository of repos_real.py)")
    p.add_argument("--plan", nargs=2, metavar=("NAME", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.plan:
        return _plan(*args.plan)
    names = args.repo or list(REPOS)
    for name in names:
        if name not in REPOS:
            p.error(f"{name}: not a repository of bench/repos_real.py ({', '.join(REPOS)})")
    jobs, timing, missing = {}, {}, []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (str(SRC), os.environ.get("PYTHONPATH")) if x)}
    for name in names:
        folder = repos.checkout(name, REPOS[name])
        if folder is None:
            missing.append(repos.missing(name, REPOS[name]))
            continue
        t0 = time.monotonic()
        with tempfile.NamedTemporaryFile(suffix=".pickle", delete=False) as fh:
            out = fh.name
        try:
            proc = subprocess.run([sys.executable, str(HERE / "live_repos.py"), "--plan", name, out], cwd=folder,
                                  env={**env, "KDT_ROOT": str(folder)}, capture_output=True, text=True)
            if proc.returncode != 0:
                missing.append(f"{name}: not planned: {(proc.stderr.strip().splitlines() or ['?'])[-1][:300]}")
                continue
            jobs[name] = pickle.loads(Path(out).read_bytes())
        finally:
            Path(out).unlink(missing_ok=True)
        timing[name] = time.monotonic() - t0
        print(f"live repos: {name}: {len(jobs[name])} unit/release pairs planned in {timing[name]:.0f} s",
              file=sys.stderr, flush=True)
    from kdt.errors import UsageError
    from kdt.live.judge import execute
    results: dict = {name: [] for name in jobs}
    t0 = time.monotonic()
    try:
        for j, res in execute([j for js in jobs.values() for j in js], compare=False):
            results[j.source].append((j, res))
            timing[j.source] += res.seconds
    except UsageError as exc:
        print(f"live_repos: {exc}", file=sys.stderr)
        return 2
    total = Counter()
    for name in jobs:
        figures, lines = _report(name, jobs[name], results[name], timing[name])
        for ln in lines:
            print(ln)
        total.update(figures)
    for line in missing:
        print(line)
    print(f"\nlive repos: {total['docs']} documents, {total['judged']} judged, {total['agree']} agreeing, "
          f"{total['disagree']} disagreeing, {total['skipped']} not judged; {time.monotonic() - t0:.0f} s judging")
    from kdt.live.verdicts import basis_disagreements
    basis = basis_disagreements([a for rs in results.values() for _, res in rs for a in res.admissions])
    print("rules whose basis (rejected) disagrees with the server: "
          + (", ".join(f"{r} ({n} document(s) accepted)" for r, n in sorted(basis.items())) or "none"))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(SRC))
    sys.exit(main())

#!/usr/bin/env python3
"""The judge: every shipped target held against the real API server and operators (kdt.live).

For each target at the Trainer release it is checked for (one control plane per release: Kubernetes
v1.36.3, Trainer and the JobSet it ships, the Training Operator v1.9.4, built from Go modules into the
user's cache), prints: documents, the API server's admission verdicts against kdt's (agreeing, and each
disagreement), then the objects the controllers created against the merge preview: objects, fields
compared, agreeing, explained differences (with the cause) and unexplained ones (each listed), objects
the preview shows that the cluster did not create and the reverse.

    .venv/bin/python bench/live_judge.py [TARGETS...] [--release 2.3] [--json FILE]

Exit 1 when anything is unexplained or a verdict disagrees; 2 when the control plane cannot be had.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from kdt import targets  # noqa: E402
from kdt.errors import UsageError  # noqa: E402
from kdt.live.judge import run_targets  # noqa: E402
from kdt.render import render_all  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*")
    p.add_argument("--release", action="append", help="only targets checked for this Trainer release")
    p.add_argument("--json", metavar="FILE", help="also write every result as JSON")
    p.add_argument("--wait", type=float, default=30.0, help="seconds to wait for the controllers per target")
    p.add_argument("--admission-only", action="store_true",
                   help="only the API server's verdict on each document against kdt's (any repository's files)")
    p.add_argument("-v", "--verbose", action="store_true", help="every explained difference, not their count per cause")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    results = render_all(targets.resolve(args.paths))
    rows, out, bad = [], [], 0
    fields: dict = {}          # where both refuse: same field, nested, different, no field (kdt.live.verdicts)
    failing: list[str] = []
    admissions: list = []     # every verdict, for the rules whose basis disagrees with the server
    try:
        for r, res in run_targets(results, trainer_releases=tuple(args.release or ()) or None, wait_s=args.wait,
                                  compare=not args.admission_only):
            judged = [a for a in res.admissions if a.skipped is None]
            admissions.extend(res.admissions)
            agree = sum(1 for a in judged if a.agree)
            explained = sum(1 for d in res.differences if d.cause)
            rows.append((res.target, res.release, res.training_operator, len(res.admissions), f"{agree}/{len(judged)}", res.objects,
                         res.fields, res.agreeing, explained, len(res.unexplained), len(res.missing), len(res.extra),
                         f"{res.seconds:.1f}"))
            for a in res.admissions:
                where = f"{a.doc.file}:{a.doc.line}"
                what = f"{a.doc.data.get('kind')} {_name(a.doc.data)}"
                if a.skipped:
                    out.append(f"  {where}: {what}: not judged: {a.skipped}")
                elif not a.agree:
                    bad += 1
                    ours = "; ".join(f"{f.rule}: {f.message}" for f in a.ours) or "accepted"
                    out.append(f"  {where}: {what}: API server: {a.refused or 'accepted'}; kdt: {ours}")
                elif a.field is not None:
                    fields[a.field] = fields.get(a.field, 0) + 1
                    listed = "" if a.field == "same field" else (f" (kdt: {', '.join(a.our_fields) or '-'}; "
                                                                 f"server: {', '.join(a.server_fields) or '-'})")
                    out.append(f"  {where}: {what}: both refuse: {a.field}{listed}")
            causes: dict = {}
            for d in res.differences:
                if d.cause and not args.verbose:
                    causes[d.cause] = causes.get(d.cause, 0) + 1
                    continue
                tag = f"explained ({d.cause})" if d.cause else "UNEXPLAINED"
                bad += d.cause is None
                out.append(f"  {res.target}: {d.kind} {d.name} {d.path}: preview {json.dumps(d.preview)[:160]} "
                           f"live {json.dumps(d.live)[:160]}: {tag}")
            for cause, n in causes.items():
                out.append(f"  {res.target}: {n} field(s) explained: {cause}")
            for m in res.missing:
                bad += 1
                out.append(f"  {res.target}: {m}: in the preview, not created by the operators")
            for x in res.extra:
                bad += 1
                out.append(f"  {res.target}: {x}: created by the operators, not in the preview")
            for x, cause in res.extra_explained:
                out.append(f"  {res.target}: {x}: not in the preview: explained ({cause})")
            if _target_bad(res):
                failing.append((res.target, res.release, res.training_operator))
            if args.json:
                Path(args.json).write_text(json.dumps([dict(zip(HEADER, r)) for r in rows], indent=1))
    except UsageError as exc:
        print(f"live_judge: {exc}", file=sys.stderr)
        return 2
    widths = [max(len(str(x)) for x in col) for col in zip(HEADER, *rows)]
    for r in (HEADER, *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))
    print()
    for line in out:
        print(line)
    tot = lambda i: sum(r[i] for r in rows)   # noqa: E731
    print(f"\nlive judge: {len(rows)} target/release pair(s), {tot(6)} fields compared, {tot(7)} agreeing, "
          f"{tot(8)} explained, {tot(9)} unexplained; {tot(10)} missing, {tot(11)} extra; "
          f"{time.monotonic() - t0:.0f} s")
    if fields:
        print("both refuse, the field: " + ", ".join(f"{n} {k}" for k, n in sorted(fields.items())))
    from kdt.live.verdicts import basis_disagreements
    basis = basis_disagreements(admissions)
    print("rules whose basis (rejected) disagrees with the server: "
          + (", ".join(f"{r} ({n} document(s) accepted)" for r, n in sorted(basis.items())) or "none"))
    failed = len(set(failing))
    print(f"judge: {len(rows) - failed} passed, {failed} failed")    # a pair passes with nothing unexplained
    return 1 if bad else 0


def _name(data: dict) -> str:
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return str(meta.get("name") or (f"{meta['generateName']}*" if meta.get("generateName") else None))


def _target_bad(res) -> bool:
    return bool(res.unexplained or res.missing or res.extra
                or any(a.skipped is None and not a.agree for a in res.admissions))


HEADER = ("target", "trainer", "operator", "docs", "admission agree", "objects", "fields", "agreeing", "explained",
          "unexplained", "missing", "extra", "seconds")

if __name__ == "__main__":
    sys.exit(main())

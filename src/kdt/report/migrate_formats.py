"""Output of `migrate`: text, json, markdown (a PR comment: one collapsible block per target).

Each target: the jobs migrated (before -> after, the runtime), what the migration did (row by row of
docs/migration.md), the findings (what has no equivalent: what changes for the job), the proof (differences
explained and unexplained, grouped by field across the pods), and the checks of the migrated output.
"""
from __future__ import annotations

import json
from typing import IO

from ..findings import ERROR, format_path
from ..operators.framework.migrate.compare import summarize
from . import text as text_report

FORMATS = ("text", "json", "markdown")
_WIDTH = 100


def _value(v) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text if len(text) <= _WIDTH else text[:_WIDTH - 3] + "..."


def _where(places: list[str]) -> str:
    """`node 3`, `nodes 0-63`, `nodes 0-3, 98-99`: the pods a group of differences is on."""
    if len(places) == 1:
        return places[0]
    idx = sorted({int(p.split()[1]) for p in places if p.startswith("node ") and p.split()[1].isdigit()})
    if len(idx) != len(places):
        return f"{places[0]} (+{len(places) - 1} more)"
    runs, start = [], idx[0]
    for prev, cur in zip(idx, idx[1:] + [None]):
        if cur != prev + 1:
            runs.append(f"{start}-{prev}" if prev != start else str(start))
            start = cur
    return "nodes " + ", ".join(runs)


def _groups(job, explained: bool) -> list[dict]:
    return [g for g in summarize(job.differences) if (g["row"] is not None) == explained]


def _line(g: dict) -> str:
    why = f"[{g['row']}]" if g["row"] else "[unexplained]"
    what = format_path(g["path"]) or "(pod)"
    return f"{why} {_where(g['where'])}: {what}: {_value(g['before'])} -> {_value(g['after'])}"


def counts(r) -> tuple[int, int, int, int]:
    """(explained, unexplained, findings, check errors) of one target's result."""
    exp = sum(1 for j in r.jobs for d in j.differences if d.explained)
    return exp, r.unexplained, len(r.findings), sum(1 for f in r.checks if f.level == ERROR)


def text(results, out: IO[str], version: str = "") -> None:
    for r in results:
        print(f"{r.name}:", file=out)
        if r.nothing:
            print(f"  {r.nothing}", file=out)
        for j in r.jobs:
            print(f"  {j.before} -> {j.after or '?'} on {j.runtime}", file=out)
            for row, what in j.done:
                print(f"    done [{row}] {what}", file=out)
            exp, unexp = _groups(j, True), _groups(j, False)
            some = " (the first and last of each group: more than the proof builds)" if j.partial else ""
            print(f"    proof: {j.pods} pod(s){some} and the run policy compared: {sum(len(g['where']) for g in exp)} "
                  f"difference(s) explained, {sum(len(g['where']) for g in unexp)} unexplained", file=out)
            for g in exp:
                print(f"      {_line(g)}", file=out)
            for g in unexp:
                print(f"      {_line(g)}", file=out)
        for what, done in r.others:
            print(f"  {what} (proved through the jobs that use it)", file=out)
            for row, text in done:
                print(f"    done [{row}] {text}", file=out)
        for f in r.findings:
            print(f"  {text_report.line(f)}", file=out)
        if r.files:
            errors = sum(1 for f in r.checks if f.level == ERROR)
            print(f"  output checked for Trainer {version or r.version}: {errors} error(s), "
                  f"{len(r.checks) - errors} warning(s)", file=out)
            for f in r.checks:
                print(f"    {text_report.line(f)}", file=out)
            print("  files: " + ", ".join(sorted(r.files)), file=out)
    exp = sum(counts(r)[0] for r in results)
    unexp = sum(counts(r)[1] for r in results)
    jobs = sum(len(r.jobs) for r in results)
    findings = sum(counts(r)[2] for r in results)
    print(f"migrate: {len(results)} target(s), {jobs} job(s) migrated, {exp} difference(s) explained, {unexp} "
          f"unexplained, {findings} finding(s)", file=out)


def as_json(results) -> list[dict]:
    out = []
    for r in results:
        out.append({
            "target": r.name, "trainer": r.version, "nothing": r.nothing or None,
            "jobs": [{"before": j.before, "after": j.after, "runtime": j.runtime, "pods_compared": j.pods,
                      "done": [{"row": row, "what": w} for row, w in j.done],
                      "differences": [{"where": d.where, "path": format_path(d.path), "before": d.before,
                                       "after": d.after, "explained_by": d.row, "finding": d.finding or None}
                                      for d in j.differences]} for j in r.jobs],
            "others": [{"object": what, "done": [{"row": row, "what": w} for row, w in done]} for what, done in r.others],
            "findings": [f.to_dict() for f in r.findings],
            "checks": [f.to_dict() for f in r.checks],
            "files": r.files,
        })
    return out


def write_json(results, out: IO[str], version: str = "") -> None:
    json.dump({"version": version, "results": as_json(results)}, out, indent=2, default=str)
    out.write("\n")


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(results, out: IO[str], version: str = "") -> None:
    print(f"### kdt migrate: Kubeflow Trainer {version}\n", file=out)
    print("| target | jobs | explained | unexplained | findings | output errors |", file=out)
    print("|---|---|---:|---:|---:|---:|", file=out)
    for r in results:
        exp, unexp, nf, errs = counts(r)
        jobs = ", ".join(f"`{j.before}` → `{j.after}`" for j in r.jobs) or (r.nothing or "-")
        mark = " :x:" if unexp or errs else ""
        print(f"| `{r.name}` | {_md(jobs)} | {exp} | {unexp}{mark} | {nf} | {errs} |", file=out)
    for r in results:
        if not r.jobs and not r.findings:
            continue
        print(f"\n<details><summary><code>{r.name}</code></summary>\n", file=out)
        for j in r.jobs:
            print(f"**{j.before} → {j.after}** on {j.runtime}: {j.pods} pod(s) compared\n", file=out)
            for row, what in j.done:
                print(f"- `{row}` {_md(what)}", file=out)
            unexp = _groups(j, False)
            if unexp:
                print("\nUnexplained:\n", file=out)
                for g in unexp:
                    print(f"- {_md(_line(g))}", file=out)
            exp = _groups(j, True)
            if exp:
                print("\nExplained:\n", file=out)
                for g in exp:
                    print(f"- {_md(_line(g))}", file=out)
            print("", file=out)
        if r.findings:
            print("Findings (what changes for the job):\n", file=out)
            for f in r.findings:
                print(f"- {_md(text_report.line(f))}", file=out)
        if r.checks:
            print("\nChecks of the migrated output:\n", file=out)
            for f in r.checks:
                print(f"- {_md(text_report.line(f))}", file=out)
        print("\n</details>", file=out)


def write(results, fmt: str, out: IO[str], version: str = "") -> None:
    {"text": text, "json": write_json, "markdown": markdown}[fmt](results, out, version)

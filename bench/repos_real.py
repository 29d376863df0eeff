#!/usr/bin/env python3
"""`kdt validate` and `kdt lint` over whole public repositories nobody here wrote, as a new user runs them.

    .venv/bin/python bench/repos_real.py [--repo owner/name ...] [--timeout S] [--show-errors]

Each repository is checked out at a fixed revision (bench/repos.py: the user's KDT_BENCH_REPOS, an export
in the cache, or a snapshot fetched with the search tool; a missing one is named with what to fetch),
and both commands run in its root with no arguments (the whole-repository walk), each in a process of its
own with a time limit. Printed per repository: targets (YAML files, kustomizations, chart values files),
documents, errors, warnings, tracebacks, hangs, seconds; then the false errors on the files labelled valid
upstream (bench/repos_valid.yaml: each file and why it was judged valid; an error on one is a false
error), and the unknown kinds left with the CRDs the repository itself ships for them (the goal: none;
an unknown kind is fine only where neither the project nor the repository has its CRD).

Done when: 0 tracebacks, 0 hangs, 0 false errors, 0 unknown kinds the repository has a CRD of.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml
import yaml_rs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import repos  # noqa: E402

LABELS = HERE / "repos_valid.yaml"
# The repositories of issue #27, each at a fixed revision (a tag, or the commit the snapshot holds).
REPOS = {
    "kubernetes-sigs/jobset": "v0.12.0",
    "kubernetes-sigs/kueue": "v0.19.2",
    "kubeflow/trainer": "v2.3.0",
    "volcano-sh/volcano": "v1.15.1",
    "argoproj/argocd-example-apps": "0d521c6e049889134f3122eb32d7ed342f43ca0d",
    "xiilab/astrago-trainer": "cab3a70006f6ff4e58eccda1a1f8b5cb1036ba3d",
    "gnosia93/training-on-eks": "2a65a75c676ec3b7fb890c7d35f6ed1d7190df85",
}
_NO_SCHEMA = re.compile(r"^no schema for kind (\S+) \(([^)]+)\)")


SRC = ROOT / "src"


def run(command: str, folder: Path, timeout: float) -> dict:
    """One `kdt COMMAND -o json` in the repository's root: its report, exit code, stderr, seconds."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    env = {**os.environ, "KDT_ROOT": str(folder),
           "PYTHONPATH": os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)}
    started = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "kdt", command, "-o", "json", "--output", out], cwd=folder,
                              env=env, capture_output=True, text=True, timeout=timeout)
        hung, code, err = False, proc.returncode, proc.stderr
    except subprocess.TimeoutExpired:
        hung, code, err = True, None, ""
    seconds = time.perf_counter() - started
    try:
        report = json.loads(Path(out).read_text()) if not hung and Path(out).stat().st_size else {}
    except (OSError, json.JSONDecodeError):
        report = {}
    Path(out).unlink(missing_ok=True)
    return {"report": report, "code": code, "stderr": err, "seconds": seconds, "hung": hung,
            "traceback": "Traceback (most recent call last)" in err}


def repo_crd_kinds(folder: Path) -> set[tuple[str, str]]:
    """(group, kind) of every CustomResourceDefinition in the repository's YAML files."""
    found = set()
    for p in folder.rglob("*.y*ml"):
        if ".git" in p.parts or not p.is_file():
            continue
        try:
            text = p.read_text(errors="replace")
        except OSError:
            continue
        if "CustomResourceDefinition" not in text:
            continue
        for part in re.split(r"^---", text, flags=re.MULTILINE):
            try:
                doc = yaml_rs.loads(part, parse_datetime=False)
            except Exception:      # a template, a broken file: not a CRD this bench can read
                continue
            spec = doc.get("spec") if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition" else None
            if isinstance(spec, dict) and isinstance(spec.get("names"), dict):
                found.add((str(spec.get("group")), str(spec["names"].get("kind"))))
    return found


def matches(label: str, finding: dict) -> bool:
    names = {finding.get("file", "").removesuffix(" (rendered)"), finding.get("source") or ""}
    return label in names or f"{label}/kustomization.yaml" in names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", action="append", help="only these repositories (owner/name)")
    p.add_argument("--timeout", type=float, default=300, help="seconds one command may take (default 300)")
    p.add_argument("--show-errors", action="store_true", help="list every error finding")
    p.add_argument("--src", help="the kdt package of another checkout to measure (its src folder), e.g. to compare "
                                 "with the main branch")
    args = p.parse_args(argv)
    global SRC
    if args.src:
        SRC = Path(args.src).resolve()
        print(f"measuring the kdt of {SRC}")
    labels = yaml.safe_load(LABELS.read_text())["valid"]
    rows, false_errors, unknown_with_crd, missing = [], [], [], []
    totals = Counter()
    for name, ref in REPOS.items():
        if args.repo and name not in args.repo:
            continue
        folder = repos.checkout(name, ref)
        if folder is None:
            missing.append(repos.missing(name, ref))
            continue
        results = {cmd: run(cmd, folder, args.timeout) for cmd in ("validate", "lint")}
        findings = list({json.dumps(f, sort_keys=True): f for r in results.values()
                         for f in r["report"].get("findings", [])}.values())
        summary = results["validate"]["report"].get("summary", {})
        errors = [f for f in findings if f["level"] == "error"]
        row = {"repo": name, "ref": ref[:12], "targets": len(summary.get("targets", [])),
               "documents": summary.get("documents") or 0, "errors": len(errors),
               "warnings": len(findings) - len(errors),
               "tracebacks": sum(r["traceback"] for r in results.values()),
               "hangs": sum(r["hung"] for r in results.values()),
               "seconds": sum(r["seconds"] for r in results.values()),
               "notes": results["validate"]["report"].get("notes", [])}
        rows.append(row)
        for key in ("targets", "documents", "errors", "warnings", "tracebacks", "hangs", "seconds"):
            totals[key] += row[key]
        for label in (x for x in labels if x["repo"] == name):
            for f in errors:
                if matches(label["file"], f):
                    false_errors.append(f"{name}: {f['file']}:{f.get('line')}: [{f['rule']}] {f.get('path')}: "
                                        f"{f['message'][:200]}")
        crd_kinds = repo_crd_kinds(folder)
        unknown = Counter()
        for f in findings:
            m = _NO_SCHEMA.match(f["message"])
            if m:
                unknown[(m.group(2).split("/")[0] if "/" in m.group(2) else "", m.group(1))] += 1
        row["unknown"] = unknown
        unknown_with_crd += [f"{name}: {g}/{k} ({n}x)" for (g, k), n in sorted(unknown.items()) if (g, k) in crd_kinds]
        for r in results.values():
            if r["traceback"]:
                print(f"TRACEBACK in {name}: {r['stderr'].strip().splitlines()[-1]}")
        if args.show_errors:
            for f in sorted(errors, key=lambda f: (f["file"], f.get("line") or 0)):
                print(f"  {name}: {f['file']}:{f.get('line')}: [{f['rule']}] {f['message'][:160]}")
    print("| repository | revision | targets | documents | errors | warnings | tracebacks | hangs | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['repo']} | {r['ref']} | {r['targets']} | {r['documents']} | {r['errors']} | {r['warnings']} | "
              f"{r['tracebacks']} | {r['hangs']} | {r['seconds']:.1f} |")
    print(f"| all | | {totals['targets']} | {totals['documents']} | {totals['errors']} | {totals['warnings']} | "
          f"{totals['tracebacks']} | {totals['hangs']} | {totals['seconds']:.1f} |")
    for line in missing:
        print(line)
    print()
    for r in rows:
        kinds = ", ".join(f"{g}/{k}" if g else k for (g, k) in sorted(r["unknown"]))
        print(f"{r['repo']}: unknown kinds: {kinds or 'none'}")
        for n in r["notes"]:
            if n.startswith("Trainer"):
                print(f"  {n[:240]}")
            elif "CustomResourceDefinition" in n:
                print(f"  {n}")
    nlabels = sum(1 for x in labels if not args.repo or x["repo"] in args.repo)
    print(f"\nfalse errors on the {nlabels} files labelled valid (bench/repos_valid.yaml): {len(false_errors)}")
    for line in false_errors:
        print(f"  {line}")
    print(f"unknown kinds the repository has a CRD of: {len(unknown_with_crd)}")
    for line in unknown_with_crd:
        print(f"  {line}")
    ok = not false_errors and not unknown_with_crd and not totals["tracebacks"] and not totals["hangs"]
    print(f"done (0 tracebacks, 0 hangs, 0 false errors, unknown kinds only without a CRD): {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

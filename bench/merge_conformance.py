#!/usr/bin/env python3
"""The merge preview against the operators' own unit tests: cases, facts, agreement, and what is left out.

Reads the upstream test files the conformance fixtures restate (tests/conformance/fixtures, one per
upstream file), at the tags the project pins, from the public repositories:

  kubeflow/trainer          v2.1.0, v2.3.0 (Trainer: pkg/runtime/core, pkg/runtime/framework/plugins/*,
                            pkg/webhooks) and v1.9.4 (the Training Operator: pkg/controller.v1/pytorch,
                            pkg/webhooks/pytorch)
  kubernetes-sigs/jobset    v0.10.1 (shipped by Trainer 2.1.0), v0.12.0 (2.3.0): pkg/controllers/
                            jobset_controller_test.go (constructJobsFromTemplate, the headless Service, the
                            index labels)

and lists every case of every test file in that scope (Go table tests by their keys or `name:` fields,
ginkgo specs by their text, unnamed table entries as #1, #2, ...). Each case must be in a fixture (run
through kdt.merge_preview here, every fact checked) or left out with a reason (in the fixture, or a whole
file or test function below); a case in neither is "unlisted" and fails the run, as does any case that
disagrees. Printed per operator and release: upstream cases, cases in fixtures, facts, agreeing cases and
facts, left out (by kind of reason), unlisted; then every left-out case with its reason (--brief: counts).

    .venv/bin/python bench/merge_conformance.py
    KDT_BENCH_REPOS=/path/to/checkouts .venv/bin/python bench/merge_conformance.py

Exit 1 on a disagreeing or unlisted case, 2 when a repository is missing (the line says what to fetch).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "conformance"))
import repos  # noqa: E402
from conformance import fixtures, run  # noqa: E402

# Scope: (repository, tag) -> folders whose *_test.go files are read (the test files of that folder only).
SCOPE = {
    ("kubeflow/trainer", "v2.1.0"): ["pkg/runtime/core", "pkg/runtime/framework/plugins/*", "pkg/webhooks"],
    ("kubeflow/trainer", "v2.3.0"): ["pkg/runtime/core", "pkg/runtime/framework/plugins/*", "pkg/webhooks"],
    ("kubeflow/trainer", "v1.9.4"): ["pkg/controller.v1/pytorch", "pkg/webhooks/pytorch"],
    ("kubernetes-sigs/jobset", "v0.10.1"): ["pkg/controllers/jobset_controller_test.go"],
    ("kubernetes-sigs/jobset", "v0.12.0"): ["pkg/controllers/jobset_controller_test.go"],
}
OPERATOR = {"v2.1.0": "Trainer", "v2.3.0": "Trainer", "v1.9.4": "Training Operator", "v0.10.1": "JobSet",
            "v0.12.0": "JobSet"}
# Whole files in scope that no fixture restates, and why.
FILES_LEFT_OUT = {
    "mpi_test.go": "not modelled: the MPI plugin",
    "jax_test.go": "not modelled: the JAX plugin",
    "xgboost_test.go": "not modelled: the XGBoost plugin",
    "flux_test.go": "not modelled: the Flux plugin",
    "trainjobstatus_test.go": "status: the TrainJob's status from the trainer's reported progress",
    "snapshot_test.go": "lifecycle: the runtime snapshot a TrainJob keeps across reconciles",
    "registry_test.go": "plugin internals: the runtime registry",
    "core_test.go": "plugin internals: the runtime registry's copy",
    "pytorchjob_controller_suite_test.go": "test harness: no case",
}
# Test functions of a fixture's file that are outside what it restates (jobset_controller_test.go holds more).
TESTS_LEFT_OUT = {
    "TestIsJobFinished": "status: a Job's finished conditions",
    "TestUpdateConditions": "status: the JobSet's conditions",
    "TestCalculateReplicatedJobStatuses": "status: the replicated jobs' statuses",
    "TestSyncJobScaling": "lifecycle: scaling the Jobs of a running elastic JobSet",
}

_FUNC = re.compile(r"^func (Test\w+)\(")
_GINKGO = re.compile(r'^\s*(?:ginkgo\.)?(Describe|Context|When)\("([^"]+)"')
_IT = re.compile(r'^\s*(?:ginkgo\.)?It\("([^"]+)"')
_KEY = re.compile(r'^\t+"((?:[^"\\]|\\.)+)": \{(\},)?$')
_NAME = re.compile(r'^\t+name:\s+"((?:[^"\\]|\\.)+)",?$')
_UNNAMED = re.compile(r"^\t\t\{$")


def upstream_cases(text: str) -> list[tuple[str, str]]:
    """(test, case) of a Go test file: table cases by key or `name:`, ginkgo specs by their text under the
    innermost Context/Describe, unnamed table entries of a test without named ones as #1, #2, ..."""
    out: list[tuple[str, str]] = []
    fn, context, unnamed = None, None, defaultdict(int)
    named_in: set = set()
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            fn, context = m.group(1), None
            continue
        m = _GINKGO.match(line)
        if m:
            context = m.group(2)
            continue
        m = _IT.match(line)
        if m and context:
            out.append((context, m.group(1)))
            continue
        if fn is None:
            continue
        m = _KEY.match(line) or _NAME.match(line)
        if m:
            out.append((fn, m.group(1).replace('\\"', '"')))
            named_in.add(fn)
        elif _UNNAMED.match(line):
            unnamed[fn] += 1
    for fn, n in unnamed.items():
        if fn not in named_in:
            out += [(fn, f"#{i}") for i in range(1, n + 1)]
    return out


def scope_files(root: Path, folders: list[str]) -> list[Path]:
    files: list[Path] = []
    for f in folders:
        if f.endswith(".go"):
            files.append(root / f)
        else:
            for d in sorted(root.glob(f)):
                files += sorted(p for p in d.glob("*_test.go"))
    return [p for p in files if p.is_file()]


def kind_of(reason: str) -> str:
    return reason.split(":", 1)[0].strip()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--brief", action="store_true", help="counts only, not every left-out case")
    args = p.parse_args(argv)
    started = time.perf_counter()
    fx = fixtures()
    by_file = {(f.source["repository"], f.source["tag"], f.source["file"]): f for f in fx}
    missing = []
    rows, left_lines, problems = [], [], []
    for (repo, tag), folders in SCOPE.items():
        root = repos.checkout(repo, tag)
        if root is None:
            missing.append(repos.missing(repo, tag) if hasattr(repos, "missing") else f"fetch github:{repo}")
            continue
        totals = Counter()
        reasons = Counter()
        for path in scope_files(root, folders):
            rel = str(path.relative_to(root))
            cases = upstream_cases(path.read_text())
            totals["upstream"] += len(cases)
            fixture = by_file.get((repo, tag, rel))
            if fixture is None:
                reason = FILES_LEFT_OUT.get(path.name)
                if reason is None and cases:
                    problems.append(f"{repo}@{tag} {rel}: no fixture and no reason ({len(cases)} cases)")
                    totals["unlisted"] += len(cases)
                    continue
                totals["left out"] += len(cases)
                if cases:
                    reasons[kind_of(reason or "none")] += len(cases)
                    left_lines.append(f"  {repo}@{tag} {rel}: all {len(cases)} cases: {reason}")
                continue
            written = {(c.test, c.case): c for c in fixture.cases}
            left = {(lo["test"], str(lo["case"])): lo["reason"] for lo in fixture.left_out}
            for key in written:
                if key not in {tuple(c) for c in cases}:
                    problems.append(f"{repo}@{tag} {rel}: fixture case {key} is not an upstream case")
            for test, case in cases:
                key = (test, case)
                if key in written:
                    c = written[key]
                    results = run(c)
                    ok = all(r[1] for r in results)
                    totals["in fixtures"] += 1
                    totals["facts"] += len(results)
                    totals["agreeing facts"] += sum(1 for r in results if r[1])
                    totals["agreeing"] += ok
                    if not ok:
                        problems.append(f"{repo}@{tag} {rel} {test}/{case}: " +
                                        "; ".join(f"{r[0]} (preview: {r[2]})" for r in results if not r[1]))
                elif key in left or test in TESTS_LEFT_OUT:
                    reason = left.get(key) or TESTS_LEFT_OUT[test]
                    totals["left out"] += 1
                    reasons[kind_of(reason)] += 1
                    left_lines.append(f"  {repo}@{tag} {rel} {test}/{case}: {reason}")
                else:
                    totals["unlisted"] += 1
                    problems.append(f"{repo}@{tag} {rel} {test}/{case}: neither in the fixture nor left out")
        rows.append((OPERATOR[tag], tag, totals, reasons))
    if missing:
        for line in missing:
            print(f"merge_conformance: {line}", file=sys.stderr)
        if not rows:
            return 2
    head = ("operator", "release", "upstream", "fixtures", "facts", "agree", "agree facts", "left out", "unlisted")
    print("merge preview vs the operators' unit tests (fixtures: tests/conformance/fixtures)\n")
    table = [head] + [(op, tag, str(t["upstream"]), str(t["in fixtures"]), str(t["facts"]),
                       f"{t['agreeing']}/{t['in fixtures']}", f"{t['agreeing facts']}/{t['facts']}",
                       str(t["left out"]), str(t["unlisted"])) for op, tag, t, _ in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    print()
    for op, tag, t, reasons in rows:
        pct = 100.0 * t["agreeing"] / t["in fixtures"] if t["in fixtures"] else 0.0
        kinds = ", ".join(f"{k} {n}" for k, n in reasons.most_common())
        print(f"{op} {tag}: {pct:.1f} % of the {t['in fixtures']} cases restated agree; left out: {kinds or 'none'}")
    if not args.brief:
        print("\nleft out, with the reason:")
        print("\n".join(left_lines))
    for line in problems:
        print(f"DISAGREES/UNLISTED: {line}")
    print(f"\n{sum(t['in fixtures'] for _, _, t, _ in rows)} cases, {sum(t['facts'] for _, _, t, _ in rows)} facts "
          f"checked in {time.perf_counter() - started:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The merge preview against Trainer's own integration tests, per release: cases, facts, agreement, left out.

Trainer's integration tests (kubeflow/trainer test/integration/controller/trainjob_controller_test.go at v2.1.0
and v2.3.0) create a runtime and a TrainJob on a real API server with the controller running and compare the
JobSet, PodGroup and runtime snapshot ConfigMap it creates. tests/conformance/integration/trainer/<tag>/ restates
each case as manifests and the facts its expected objects compare (written for this project, never copied); this
script runs every restated case through kdt.merge_preview and checks every fact, and lists every upstream spec
(ginkgo It) of the file: each is restated or left out with a reason; one in neither is "unlisted" and fails the
run, as does a restated case upstream does not have, and any fact that disagrees.

The upstream file is read from the Go module cache ($GOMODCACHE, default ~/go/pkg/mod:
github.com/kubeflow/trainer/v2@<tag>) or a checkout bench/repos.py finds; without it the cases still run and
the listing is skipped (the line says so).

    .venv/bin/python bench/trainer_integration.py [--brief]

Exit 1 on a disagreeing, unlisted or unknown case.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "conformance"))
import repos  # noqa: E402
from conformance import fixtures, run  # noqa: E402

ROOT = REPO / "tests" / "conformance" / "integration"
TAGS = ("v2.1.0", "v2.3.0")
_CONTEXT = re.compile(r'^\s*(?:ginkgo\.)?(?:Describe|Context|When)\("([^"]+)"')
_IT = re.compile(r'^\s*(?:ginkgo\.)?It\("([^"]+)"')


def upstream_specs(text: str) -> list[tuple[str, str]]:
    """(innermost Context/Describe/When, It text) of every ginkgo spec of a Go test file."""
    out, context = [], None
    for line in text.splitlines():
        m = _CONTEXT.match(line)
        if m:
            context = m.group(1)
            continue
        m = _IT.match(line)
        if m and context:
            out.append((context, m.group(1)))
    return out


def upstream_file(repo: str, tag: str, path: str) -> Path | None:
    cache = Path(os.environ.get("GOMODCACHE", Path.home() / "go" / "pkg" / "mod"))
    for cand in (cache / "github.com" / repo / f"v2@{tag}" / path, ):
        if cand.is_file():
            return cand
    root = repos.checkout(repo, tag)
    return root / path if root is not None and (root / path).is_file() else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--brief", action="store_true", help="counts only, not every left-out case")
    args = p.parse_args(argv)
    started = time.perf_counter()
    problems: list[str] = []
    lines: list[str] = []
    total_facts = 0
    for f in fixtures(ROOT):
        tag, path = f.source["tag"], f.source["file"]
        if tag not in TAGS:
            continue
        restated = {(c.test, c.case) for c in f.cases}
        left = {(lo["test"], lo["case"]): lo["reason"] for lo in f.left_out}
        src = upstream_file(f.source["repository"], tag, path)
        listing = "not listed (upstream file not found: fetch github:kubeflow/trainer)"
        if src is not None:
            specs = upstream_specs(src.read_text())
            unlisted = [s for s in specs if s not in restated and s not in left]
            unknown = sorted((restated | set(left)) - set(specs))
            problems += [f"{tag}: unlisted upstream case {t} / {c}" for t, c in unlisted]
            problems += [f"{tag}: case not in the upstream file {t} / {c}" for t, c in unknown]
            listing = f"{len(specs)} upstream specs, {len(unlisted)} unlisted"
        facts = agreeing_facts = agreeing = 0
        for c in f.cases:
            checked = run(c)
            facts += len(checked)
            good = sum(1 for _, ok, _ in checked if ok)
            agreeing_facts += good
            if good == len(checked):
                agreeing += 1
            for fact, ok, got in checked:
                if not ok:
                    problems.append(f"{c.id}: {fact}: the preview gives {got!r}")
        total_facts += facts
        reasons = Counter(r.split(":", 1)[0] for r in left.values())
        lines.append(f"Trainer {tag} {Path(path).name}: {listing}; {len(f.cases)} cases restated, {facts} facts compared, "
                     f"{agreeing} cases and {agreeing_facts} facts agreeing; {len(left)} left out ("
                     + ", ".join(f"{k} {n}" for k, n in sorted(reasons.items())) + ")")
        if not args.brief:
            lines += [f"    left out: {t} / {c}: {r}" for (t, c), r in sorted(left.items())]
    print("\n".join(lines))
    for pr in problems:
        print(f"FAIL {pr}")
    print(f"trainer_integration: {len(problems)} problem(s); {total_facts} facts checked in "
          f"{time.perf_counter() - started:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark: how often the linter is right, on manifests nobody here wrote.

    .venv/bin/python bench/lint_precision.py [--repos DIR] [--show-unlabelled]

Reads these repositories (each is optional but the first):

| name | where | what is linted |
| --- | --- | --- |
| corpus | ../shared/corpus/kubeflow (beside the repository) | upstream PyTorchJob examples (Training Operator v1.8.1, v1.9.4), Trainer 2.1.0 and 2.3.0 runtimes and examples |
| kubernetes/examples | DIR/kubernetes/examples | every YAML file |
| kubernetes-sigs/jobset | DIR/kubernetes-sigs/jobset | examples/ and config/samples/ |
| kubeflow/trainer | DIR/kubeflow/trainer | examples/ and manifests/base/runtimes/ |
| argoproj/argocd-example-apps | DIR/argoproj/argocd-example-apps | every YAML file |

DIR defaults to $KDT_BENCH_REPOS or bench/repos/. A repository that is missing
is named with what to fetch (the search tool's `fetch` of that GitHub
repository into DIR/<owner>/<name>); the figures then cover what is present.

Every finding is matched against bench/lint_labels.yaml, where each (file,
rule, path) of a reviewed finding is labelled true or false, with why. The
benchmark prints, per level, findings, labelled, false ones and the precision
(true / labelled), and lists findings no label covers (review them and add
labels). Targets: no false finding at error level; warnings' precision
printed. Also: no run may crash (exit 2 with a traceback).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# the subprocesses run this checkout's kdt (python -m kdt), also from a worktree sharing another's .venv
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from repos import corpus  # noqa: E402

CORPUS = corpus() / "kubeflow"
LABELS = Path(__file__).resolve().parent / "lint_labels.yaml"

# corpus folder -> Trainer release its files are written for
CORPUS_SETS = {"trainer-v2.1.0": "2.1", "trainer-v2.3.0": "2.3",
               "training-operator-v1.8.1": "2.3", "training-operator-v1.9.4": "2.3"}
FETCHED = {
    "kubernetes/examples": ["."],
    "kubernetes-sigs/jobset": ["examples", "config/samples"],
    "kubeflow/trainer": ["examples", "manifests/base/runtimes"],
    "argoproj/argocd-example-apps": ["."],
}


def yaml_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
                  and p.name not in ("kustomization.yaml", "kustomization.yml", "Chart.yaml")
                  and "templates" not in p.parts and ".git" not in p.parts)


def lint(files: list[Path], trainer: str | None, base: Path) -> tuple[list[dict], int, str]:
    """kdt lint of a repository's files as its own users run it: in that repository (KDT_ROOT), so that this
    repository's settings (.kdt-cluster.yaml: its cluster's queues) never judge another's files."""
    cmd = [sys.executable, "-m", "kdt", "lint", "-o", "json"]
    if trainer:
        cmd += ["--trainer-version", trainer]
    proc = subprocess.run(cmd + [str(f) for f in files], capture_output=True, text=True, cwd=base,
                          env={**os.environ, "KDT_ROOT": str(base)})
    try:
        findings = json.loads(proc.stdout)["findings"] if proc.stdout.strip() else []
    except json.JSONDecodeError:
        findings = []
    return findings, proc.returncode, proc.stderr


def relative(file: str, base: Path) -> str:
    try:
        return str(Path(file).resolve().relative_to(base.resolve()))
    except ValueError:
        return file


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repos", default=os.environ.get("KDT_BENCH_REPOS", str(ROOT / "bench" / "repos")))
    p.add_argument("--show-unlabelled", action="store_true")
    args = p.parse_args()
    labels = {}
    for entry in yaml.safe_load(LABELS.read_text())["labels"]:
        labels[(entry["repo"], entry["file"], entry["rule"], entry["path"])] = (entry["true"], entry["why"])

    runs = []   # (repo, files, trainer, base)
    if not CORPUS.is_dir():
        print(f"missing: the shared corpus at {CORPUS} (it comes with the workplace's shared/ folder)")
        return 1
    for folder, trainer in CORPUS_SETS.items():
        runs.append(("corpus", yaml_files(CORPUS / folder), trainer, CORPUS))
    repos = Path(args.repos)
    for name, subdirs in FETCHED.items():
        base = repos / name
        if not base.is_dir():
            print(f"missing: {name} (fetch https://github.com/{name} into {base}); not measured")
            continue
        files = [f for sub in subdirs if (base / sub).is_dir() for f in yaml_files(base / sub)]
        runs.append((name, files, None, base))

    counts: Counter = Counter()
    unlabelled: list[str] = []
    crashes = 0
    for repo, files, trainer, base in runs:
        if not files:
            continue
        findings, code, err = lint(files, trainer, base)
        if "Traceback" in err:
            crashes += 1
            print(f"CRASH on {repo}: {err.strip().splitlines()[-1]}")
        counts[(repo, "files")] += len(files)
        seen = set()
        for f in findings:
            if f["rule"] in ("yaml", "input", "render"):
                counts[(repo, "unreadable")] += 1
                continue
            # A file of a kustomization is linted as that kustomization's output: the finding names the
            # resource's own file as its source. One finding per (file, rule, path).
            where = f.get("source") or f["file"]
            key = (repo, relative(str(ROOT / where) if f.get("source") else where, base), f["rule"], f["path"])
            if key in seen:
                continue
            seen.add(key)
            level = f["level"]
            counts[(level, "all")] += 1
            if key in labels:
                counts[(level, "labelled")] += 1
                if not labels[key][0]:
                    counts[(level, "false")] += 1
            else:
                unlabelled.append(f"{level} {' | '.join(key)} | {f['message']}")
    print(f"{'level':<8} {'findings':>9} {'labelled':>9} {'false':>6} {'precision':>10}")
    ok = crashes == 0
    for level in ("error", "warning"):
        n, lab, false = counts[(level, "all")], counts[(level, "labelled")], counts[(level, "false")]
        prec = f"{(lab - false) / lab:.1%}" if lab else "n/a"
        print(f"{level:<8} {n:>9} {lab:>9} {false:>6} {prec:>10}")
        if level == "error" and false:
            ok = False
    for repo in dict.fromkeys(r[0] for r in runs):
        print(f"  {repo}: {counts[(repo, 'files')]} files, {counts[(repo, 'unreadable')]} unreadable-input findings")
    print(f"unlabelled findings: {len(unlabelled)}" + ("" if args.show_unlabelled or not unlabelled
                                                       else " (--show-unlabelled lists them)"))
    if args.show_unlabelled:
        print("\n".join(unlabelled))
    print(f"crashes: {crashes}")
    print(f"targets (no false error, no crash): {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

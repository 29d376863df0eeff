#!/usr/bin/env python3
"""Benchmark: kdt reads YAML as the pinned kubectl does (#36, #27), and stays fast and bounded.

    .venv/bin/python bench/reader.py [--fuzz 400] [--seed 36]

1. The edge-case corpus of tests/reader/cases.py (written here) through the pinned kubectl, both ways a
   file is applied (`kubectl create --dry-run=client --validate=false -f`: what `kubectl apply -f` reads;
   `kubectl kustomize` then that decode: `kubectl apply -k`), and through kdt: the agreement per way,
   every deliberate difference with its reason, and every other difference (target: none).
2. Documents of public repositories, each mutated once at random (an indentation, a character, a line
   doubled or swapped; fixed seed), through `kubectl apply -f` and kdt: how often both say the YAML
   does or does not parse (libyaml, which kdt reads with, against go-yaml, which kubectl reads with).
3. Every YAML document of those repositories read by kdt's two tiers: how many the fast tier
   (kdt.documents.fast_read: yaml-rs, after libyaml's check where there are flow collections) takes, documents where fast and exact readings differ (target: 0), and the
   documents/s of each tier.
4. Hostile input: the time to a located error for an alias bomb, 100,000 levels of nesting and a 20 MiB
   document (target: well under a second each).

Repositories (bench/repos.py finds them; a missing one is named with what to fetch):
kubernetes-sigs/jobset v0.12.0, kubeflow/trainer v2.3.0, kubernetes-sigs/kueue v0.19.2,
volcano-sh/volcano v1.15.1, argoproj/argocd-example-apps, xiilab/astrago-trainer, gnosia93/training-on-eks.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "reader"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cases as C  # noqa: E402
import differential as D  # noqa: E402
import oracle  # noqa: E402
from repos import checkout, missing  # noqa: E402

from kdt import kubeyaml as K  # noqa: E402
from kdt.documents import _chunks, fast_read, needs_exact, read_stream  # noqa: E402

REPOS = [("kubernetes-sigs/jobset", "v0.12.0"), ("kubeflow/trainer", "v2.3.0"), ("kubernetes-sigs/kueue", "v0.19.2"),
         ("volcano-sh/volcano", "v1.15.1"), ("argoproj/argocd-example-apps", "HEAD"),
         ("xiilab/astrago-trainer", "HEAD"), ("gnosia93/training-on-eks", "HEAD")]


def corpus() -> int:
    rows = D.compare()
    print("1. edge cases through kubectl (tests/reader/cases.py)")
    for path in ("apply", "kustomize"):
        mine = [r for r in rows if r.path == path]
        agree = sum(r.agree for r in mine)
        print(f"   {'kubectl apply -f' if path == 'apply' else 'kubectl kustomize'}: {agree}/{len(mine)} cases agree "
              f"({100 * agree / len(mine):.0f} %); {sum(bool(r.deliberate) for r in mine)} differ on purpose")
    print("   deliberate differences:")
    reasons: dict[str, list[str]] = {}
    for r in rows:
        if r.deliberate:
            reasons.setdefault(r.deliberate, []).append(f"{r.case.name} [{r.path}]")
    for reason, where in reasons.items():
        print(f"   - {', '.join(where)}: {reason}")
    bad = [r for r in rows if not r.agree and not r.deliberate] + [r for r in rows if r.agree and r.deliberate]
    for r in bad:
        print(f"   UNEXPECTED {r.case.name} [{r.path}]: kdt {r.ours}; kubectl {r.kubectl[:150]}")
    print(f"   unexpected differences: {len(bad)}")
    return len(bad)


def documents() -> list[tuple[str, str]]:
    out = []
    for repo, ref in REPOS:
        folder = checkout(repo, ref)
        if folder is None:
            print("   " + missing(repo, ref))
            continue
        n = 0
        for p in sorted(folder.rglob("*.y*ml")):
            if "templates" in p.parts or not p.is_file():
                continue
            try:
                text = p.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            for part, _ in _chunks(text):
                if part.strip():
                    out.append((f"{repo}/{p.relative_to(folder)}", part))
                    n += 1
        print(f"   {repo} {ref}: {n} documents")
    return out


def fuzz(docs, n: int, seed: int) -> None:
    rng = random.Random(seed)
    picked = [C.mutate(rng.choice(docs)[1], rng) for _ in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, text in enumerate(picked):
            f = Path(tmp) / f"m{i}.yaml"
            f.write_text(text)
            files.append(f)
        verdicts = oracle.apply_verdicts(files)
    agree, both_refuse, differ = 0, 0, []
    for f, text in zip(files, picked):
        theirs = any(v.startswith("parse:") for v in verdicts[f.name])
        read = read_stream(text, f.name, paths=(K.APPLY,))
        # what kdt refuses while reading (not what kubectl's decode refuses later: a list where an object goes;
        # nor kdt's deliberate stricter views: duplicate keys, nesting past 256 levels)
        mine = any(x.level == "error" and x.rule == "yaml" and not x.message.startswith(
            ("duplicate key", "nested more", "document is a list", "the document is")) for x in read.findings)
        if mine == theirs:
            agree += 1
            both_refuse += mine
        else:
            differ.append((f.name, mine, verdicts[f.name][-1:] if verdicts[f.name] else ["(no object)"], text))
    print(f"2. {n} mutated documents through kubectl apply -f and kdt (parse: yes/no): {agree}/{n} agree "
          f"({100 * agree / n:.1f} %), {both_refuse} refused by both")
    for name, mine, theirs, text in differ[:10]:
        print(f"   differ: kdt {'refuses' if mine else 'reads'}, kubectl {theirs[0][:100]}: {text[:160]!r}")


def tiers(docs) -> None:
    texts = [t if t.endswith("\n") else t + "\n" for _, t in docs]
    fast = [not needs_exact(t) for t in texts]
    t0 = time.perf_counter()
    fast_data = {}
    for i, text in enumerate(texts):
        if fast[i]:
            ok, data = fast_read(text)
            if ok:
                fast_data[i] = data
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    exact = [K.read(text) for text in texts]
    t_exact = time.perf_counter() - t0
    differ = [i for i, data in fast_data.items() if not exact[i].ok or exact[i].data != data]
    n_fast = sum(fast)
    print(f"3. {len(texts)} documents of the repositories: {n_fast} ({100 * n_fast / max(len(texts), 1):.0f} %) go to "
          f"the fast tier; fast and exact readings differ on {len(differ)} (target 0)")
    print(f"   fast tier {n_fast / t_fast:,.0f} documents/s; exact tier {len(texts) / t_exact:,.0f} documents/s "
          f"({sum(len(t) for t in texts) / t_exact / 2**20:.1f} MiB/s)")


def hostile() -> None:
    bomb = "a0: &a0 [" + ", ".join(["x"] * 9) + "]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 12))
    cases = {"alias bomb (9^12 nodes)": bomb,
             "100,000 nested [": "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
             "100,000 nested - -": "a:\n" + "- " * 100_000 + "x\n",
             "20 MiB document": "a: " + "x" * (20 << 20) + "\n"}
    print("4. hostile input: time to a located error")
    for name, text in cases.items():
        t0 = time.perf_counter()
        read = read_stream(text, "h.yaml", named=True)
        took = time.perf_counter() - t0
        err = next(f for f in read.findings if f.level == "error")
        print(f"   {name}: {took * 1000:.0f} ms, {err.location}: {err.message[:70]}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fuzz", type=int, default=400, help="mutated documents given to kubectl (default 400)")
    p.add_argument("--seed", type=int, default=36)
    args = p.parse_args()
    unexpected = corpus()
    print("   repositories:")
    docs = documents()
    if docs:
        fuzz(docs, args.fuzz, args.seed)
        tiers(docs)
    hostile()
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`validate --crd` on real input: the official Kubeflow CRDs as schemas for the official examples.

For each release in ../shared/corpus/kubeflow (Trainer 2.1.0 and 2.3.0, Training
Operator 1.8.1), the release's CustomResourceDefinitions (crds/<release>/) are
read by kdt.schemas.crds exactly as `kdt validate --crd` reads them, and every
object of that release's manifests (runtimes, examples, PyTorchJob samples) is
validated against them. Printed per release:

  objects   documents of a kind the CRDs define
  false     errors on them (the corpus is valid for its release: each one is a false error)
  caught    of the same objects with one unknown field added under spec, how many are
            reported (strict field validation)

and the seconds it took. Exit 1 on any false error.

    .venv/bin/python bench/crd_schemas.py
    .venv/bin/python bench/crd_schemas.py --corpus /path/to/shared/corpus

Reads ../shared/corpus (beside the repository); nothing to fetch.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))
from kdt.documents import load_paths  # noqa: E402
from kdt.schemas import crds  # noqa: E402
from repos import corpus  # noqa: E402

RELEASES = {   # CRDs folder -> manifests folder of the same release
    "trainer-v2.1.0": "trainer-v2.1.0",
    "trainer-v2.3.0": "trainer-v2.3.0",
    "training-operator-v1.8.1": "training-operator-v1.8.1",
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--corpus", default=str(corpus()),
                   help="the shared corpus folder (default: ../shared/corpus)")
    args = p.parse_args(argv)
    root = Path(args.corpus) / "kubeflow"
    if not (root / "crds").is_dir():
        print(f"crd_schemas: error: {root / 'crds'}: not found (the corpus of ../shared/corpus)", file=sys.stderr)
        return 2
    from kdt import schemas
    print("| release | CRDs | objects | false errors | unknown field caught | seconds |")
    print("|---|---:|---:|---:|---:|---:|")
    false_total = 0
    for crd_dir, manifests in RELEASES.items():
        t0 = time.perf_counter()
        pools = crds.load((str(root / "crds" / crd_dir),))
        registry = schemas.Registry("1.35", "2.3")
        # The project's Kubeflow schemas left out (they would win): the CRDs alone decide here.
        registry.pools = [schemas.kubernetes_pool("1.35"), schemas.kubernetes_pool("1.35"), *pools]
        files = sorted(str(f) for f in (root / manifests).rglob("*.yaml") if f.name != "kustomization.yaml")
        docs, _ = load_paths(files)
        objects = false = caught = 0
        for doc in docs:
            if not isinstance(doc.data, dict):
                continue
            ks = registry.get(str(doc.data.get("apiVersion")), str(doc.data.get("kind")))
            if ks is None or not ks.origin.startswith("CRD"):
                continue
            objects += 1
            errors = list(ks.validator.iter_errors(doc.data))
            if errors:
                false += 1
                for e in errors[:3]:
                    print(f"  false error: {doc.file}:{doc.line} {doc.kind}/{doc.name} "
                          f"{'.'.join(map(str, e.instance_path))}: {e.message[:120]}", file=sys.stderr)
            mutated = copy.deepcopy(doc.data)
            if isinstance(mutated.get("spec"), dict):
                mutated["spec"]["notAField"] = 1
                caught += not ks.validator.is_valid(mutated)
        false_total += false
        print(f"| {crd_dir} | {sum(len(pool.kinds) for pool in pools)} | {objects} | {false} | "
              f"{caught} of {objects} | {time.perf_counter() - t0:.2f} |")
    return 1 if false_total else 0


if __name__ == "__main__":
    sys.exit(main())

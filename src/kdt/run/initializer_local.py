"""A Trainer initializer in a local run: nothing is downloaded, the local folder of its claim is the source.

    python3 initializer_local.py --job dataset-initializer --uri s3://bucket/prefix --output DIR --claim NAME

Trainer's dataset-initializer and model-initializer images download STORAGE_URI into /workspace/dataset and
/workspace/model of the volume the trainer mounts (kubeflow/trainer v2.3.0 pkg/initializers). A local run
downloads nothing from a hub or a bucket: DIR is where that output lies in the folder given for the claim
(`kdt run --volume CLAIM=DIR`, e.g. the folder training/make_tiny_llm.py writes). Prints one line saying so;
exits 1 with one line when DIR holds nothing.

Standalone (the standard library): a local run starts it as a program, with no PYTHONPATH.
"""
from __future__ import annotations

import argparse
import os
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--job", required=True)
    ap.add_argument("--uri", default="")
    ap.add_argument("--output", required=True)
    ap.add_argument("--claim", default="")
    a = ap.parse_args(argv)
    uri = a.uri or "(no STORAGE_URI)"
    if not os.path.isdir(a.output) or not os.listdir(a.output):
        print(f"{a.job}: {uri} is not downloaded by a local run, and {a.output} holds nothing: pass "
              f"--volume {a.claim or 'CLAIM'}=DIR with the {a.job.split('-')[0]} in its folder", file=sys.stderr)
        return 1
    print(f"{a.job}: {uri} is not downloaded by a local run: it reads the local folder {a.output} "
          f"(claim {a.claim})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

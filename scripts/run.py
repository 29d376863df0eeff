#!/usr/bin/env python3
"""Entry point: see scripts/kdt/cli/run.py (or run with --help)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kdt.cli import run  # noqa: E402
from kdt.cli.run import main  # noqa: E402

sys.exit(run(main))

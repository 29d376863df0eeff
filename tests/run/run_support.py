"""Helpers of the kdt run tests (imported by name): the real command, its events, no stray processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def kdt_run(*args, workdir: Path, timeout: float = 240, stdin: str | None = None):
    """`kdt run ARGS --workdir W --events W/events.jsonl`: (code, stdout, stderr, events)."""
    workdir.mkdir(parents=True, exist_ok=True)
    events = workdir / "events.jsonl"
    cmd = [sys.executable, "-m", "kdt", "run", *map(str, args), "--workdir", str(workdir / "run"),
           "--events", str(events)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout, input=stdin)
    evs = [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else []
    return proc.returncode, proc.stdout, proc.stderr, evs


def of(events, kind):
    return [e for e in events if e["kind"] == kind]


def final_digest(events) -> str:
    """The weights digest every rank of the last group printed ([DONE] lines), asserted equal."""
    done = of(events, "done")
    assert done, "no [DONE] line"
    last = {}
    for e in done:
        last[e["data"]["rank"]] = e["data"]["weights_sha256"]
    assert len(set(last.values())) == 1, f"ranks disagree: {last}"
    return next(iter(last.values()))


def processes_of(folder: Path) -> list[int]:
    """Live processes whose environment names the run folder (every process a run starts does)."""
    key = str(folder).encode()
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if key in f.read():
                        out.append(int(d))
            except OSError:
                pass
    return out

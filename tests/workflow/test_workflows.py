"""The pull-request workflow and the action (#12): actionlint and zizmor find nothing, every `make` target
they call exists, every action is pinned to a commit, and the permissions stay least."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
FILES = WORKFLOWS + [ROOT / "action.yml"]


def test_actionlint_is_clean():
    proc = subprocess.run([str(BIN / "actionlint"), *map(str, WORKFLOWS)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_is_clean():
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run([str(BIN / "zizmor"), "--offline", *map(str, FILES)], capture_output=True, text=True,
                          cwd=ROOT, env=env)
    assert proc.returncode == 0 and "No findings to report" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def _steps():
    for f in FILES:
        data = yaml.safe_load(f.read_text())
        jobs = data.get("jobs", {}).values() if "jobs" in data else [{"steps": data["runs"]["steps"]}]
        for job in jobs:
            for step in job.get("steps", []):
                yield f, step


def test_every_make_target_a_workflow_calls_exists():
    make = subprocess.run(["make", "-pRrq", "-f", str(ROOT / "Makefile")], capture_output=True, text=True, cwd=ROOT)
    defined = set(re.findall(r"^([A-Za-z][A-Za-z0-9_-]*):", make.stdout, re.MULTILINE))
    called = {t for _, step in _steps() for t in re.findall(r"\bmake\s+([a-z][a-z0-9-]*)", step.get("run", ""))}
    assert called and called <= defined, called - defined
    assert {"venv", "render", "validate", "lint", "diff", "test"} <= called


def test_actions_are_pinned_and_permissions_least():
    for f, step in _steps():
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", step["uses"]), f"{f.name}: {step['uses']} is not pinned"
    for f in WORKFLOWS:
        text = f.read_text()
        data = yaml.safe_load(text)
        assert "pull_request_target" not in data[True] and list(data[True]) == ["pull_request"]   # YAML 1.1: on = True
        assert data["permissions"] == {}
        for name, job in data["jobs"].items():
            assert "permissions" in job, f"{f.name}: job {name} has no permissions of its own"
            for step in job["steps"]:
                if step.get("uses", "").startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False

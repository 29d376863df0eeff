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


def test_actionlint_is_clean_on_the_action(tmp_path):
    """actionlint reads workflows, not an action's metadata: the action's steps are checked as the one job of a
    workflow_dispatch workflow declaring the same inputs (the `inputs` context, shellcheck on every `run`)."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    inputs = {k: {"description": v["description"], "required": False, "type": "string", "default": v.get("default", "")}
              for k, v in action["inputs"].items()}
    flow = {"name": "action", "on": {"workflow_dispatch": {"inputs": inputs}}, "permissions": {},
            "jobs": {"action": {"runs-on": "ubuntu-latest", "permissions": {}, "steps": action["runs"]["steps"]}}}
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    f = tmp_path / ".github" / "workflows" / "action.yml"
    f.write_text(yaml.safe_dump(flow, sort_keys=False))
    proc = subprocess.run([str(BIN / "actionlint"), str(f)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    live = [s for s in action["runs"]["steps"] if "inputs.live" in str(s.get("if", ""))]
    assert any("actions/setup-go@" in s.get("uses", "") for s in live) and any("actions/cache@" in s.get("uses", "")
                                                                               for s in live)
    assert any("no Go on this runner" in s.get("run", "") for s in live)


def test_the_action_live_step_without_go_says_why_and_passes(tmp_path):
    """The live step's script on a runner without Go: one warning naming why, exit 0, the reason in the summary."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "live"]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for exe in ("cat", "echo"):
        (bindir / exe).symlink_to(subprocess.run(["which", exe], capture_output=True, text=True).stdout.strip())
    env = {"PATH": str(bindir), "TARGETS": "deploy/", "GITHUB_OUTPUT": str(tmp_path / "out"),
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")}
    proc = subprocess.run(["/bin/bash", "-e", "-c", step["run"]], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("::warning::kdt live judge not run: no Go on this runner")
    assert "the offline checks above ran" in (tmp_path / "summary").read_text()
    assert (tmp_path / "out").read_text() == "status=0\n"


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

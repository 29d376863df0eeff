"""Every shell example of the README and the docs runs as written (or in its dry-run form where it needs a
cluster, the network or hours), so the documentation cannot drift from the tools.

Examples are the lines of ```sh / ```bash blocks (a block that holds a command is tagged so: a test fails
on an untagged one). Each block runs in order in a workspace: this repository's files, plus whatever
relative path an example names that is not here (a folder of a user's repository) made as a minimal
manifest; `/tmp/` is the test's own folder. What changes:
- `kdt run`, `make run-local`: with `--dry-run` (everything checked, nothing started);
- `make test|image|bench|lock|live|judge|cluster-up`: `make -n` (what it would run);
- `kdt cluster up`: its `--help` (tests/live starts the control plane);
- `kubectl kustomize X | kubectl apply -f -`, `kubectl apply -k DIR`: the render (`kubectl kustomize`);
  `kubectl` against a cluster or a remote URL, and `kubectl logs|get`: listed, not run;
- `helm install`: `helm template` with the same arguments;
- `pip install "NAME @ ..."`: NAME is this project's distribution name;
- a training/ script that writes to a `/tmp/` folder (make_tiny_llm.py): run once per test session under
  a lock (the xdist workers share it), that folder linked to its output;
- another Python script under bench/ or training/, or a command with a `<placeholder>`: its `--help`.
"""
from __future__ import annotations

import fcntl
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "charts" / "trainer" / "README.md",
        *sorted(ROOT.glob("components/*/README.md")), *sorted(ROOT.glob("deploy/*/README.md")),
        *sorted(ROOT.glob("overlays/*/README.md"))]
COMMAND = re.compile(r"^\s*(kdt|make|kubectl|helm|pip|\.venv/bin/\S+|python3?)\s")
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: example\ndata:\n  k: v\n"
CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object}}}}
"""


def _blocks(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, tag, lines) of every fenced block."""
    out, lines, i = [], path.read_text().split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append((i + 1, lines[i][3:].strip(), lines[i + 1:j]))
            i = j
        i += 1
    return out


def _commands(lines: list[str]) -> list[str]:
    """Lines joined over trailing backslashes, comments and blank lines dropped."""
    out, cur = [], ""
    for line in lines:
        cur += line.rstrip()
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        text = re.sub(r"\s+#\s.*$", "", cur).strip()
        if text and not text.startswith("#"):
            out.append(text)
        cur = ""
    return out


EXAMPLES = [(f"{p.relative_to(ROOT)}:{line}", _commands(body))
            for p in DOCS if p.exists() for line, tag, body in _blocks(p) if tag in ("sh", "bash", "shell")]


def test_every_block_with_a_command_is_tagged_sh():
    untagged = [f"{p.relative_to(ROOT)}:{line}" for p in DOCS if p.exists() for line, tag, body in _blocks(p)
                if not tag and any(COMMAND.match(b) for b in body)]
    assert not untagged, f"shell examples in blocks not tagged sh (the docs test would not run them): {untagged}"
    assert len(EXAMPLES) >= 10


NOT_RUN = ("kubectl apply --server-side", "kubectl logs", "kubectl -n", "kubectl get")


def _transform(cmd: str) -> str | None:
    """The form of `cmd` the test runs (None: it needs a cluster or the network, and is not run)."""
    # `VAR=value kubectl get ...` is the same kubectl command with an environment (a kept cluster's KUBECONFIG)
    if re.sub(r"^(\w+=\S*\s+)+", "", cmd).startswith(NOT_RUN):
        return None
    m = re.match(r"kubectl kustomize (\S+) \| kubectl apply -f -$", cmd)
    if m:
        return f"kubectl kustomize {m.group(1)}"
    m = re.match(r"kubectl apply -k (\S+)$", cmd)
    if m:
        return f"kubectl kustomize {m.group(1)}"
    if cmd.startswith("helm install "):
        return "helm template " + cmd[len("helm install "):]
    if re.match(r"make (test|image|bench|lock|live|judge|cluster-up)\b", cmd):
        return "make -n " + cmd[len("make "):]
    if cmd.startswith("kdt cluster up"):
        return "kdt cluster up --help"
    if cmd.startswith("make run-local"):
        return (cmd.replace('ARGS="', 'ARGS="--dry-run ', 1) if 'ARGS="' in cmd else cmd + ' ARGS="--dry-run"')
    if re.search(r"(^|\| )kdt run ", cmd):
        return cmd + " --dry-run"
    if "<" in cmd and re.search(r"<[a-z][\w -]*>", cmd) or re.match(r"\.venv/bin/python (bench|training)/", cmd):
        words = shlex.split(cmd)
        prog = words[:3] if words[1] == "-m" else words[:2]
        return shlex.join(prog) + " --help"
    return cmd


def _words(cmd: str) -> list[str]:
    """The words of the first command of a pipeline, before any redirection."""
    words = shlex.split(cmd)
    for k, w in enumerate(words):
        if w in ("|", ">", ">>"):
            return words[:k]
    return words


def _workspace(tmp: Path, cmds: list[str]) -> Path | None:
    """None when every relative path the commands name is in this repository (they run in it). Otherwise
    they are about a user's repository: a scratch folder with the named paths this repository has (linked)
    and the others made as minimal manifests (a CRD after --crd, an empty values file for helm)."""
    named: list[tuple[str, bool, str]] = []       # (path, after --crd, tool)
    for cmd in cmds:
        words = _words(cmd)
        for k, w in enumerate(words[1:], 1):
            if w.startswith(("-", "/", "$")) or "=" in w or ("/" not in w and not w.endswith((".yaml", ".yml"))):
                continue
            if "<" in w:          # a placeholder (`<trainer>/...`): the command runs as its --help
                continue
            if words[0] not in ("make", "pip"):
                named.append((w, words[k - 1] == "--crd", words[0]))
    if all((ROOT / w).exists() for w, _, _ in named):
        return None
    ws = tmp / "ws"
    ws.mkdir()
    (ws / ".venv").symlink_to(ROOT / ".venv")
    for w, crd, tool in named:
        top = Path(w).parts[0]
        if (ROOT / w).exists():
            if not (ws / top).exists():
                (ws / top).symlink_to(ROOT / top)
            continue
        target = ws / w
        if w.endswith((".yaml", ".yml")):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("{}\n" if tool == "helm" else (CRD if crd else CONFIGMAP))
        else:
            target.mkdir(parents=True, exist_ok=True)
            (target / ("crd.yaml" if crd else "example.yaml")).write_text(CRD if crd else CONFIGMAP)
    return ws


SETUP = re.compile(r"^\.venv/bin/python (training/\S+\.py) /tmp/(\S+)(.*)$")


def _setup(cmd: str, tmp: Path, shared: Path, env: dict) -> None:
    """Run a documented setup step (it writes /tmp/OUT) once for the whole session, link OUT to it."""
    m = SETUP.match(cmd)
    key = re.sub(r"[^A-Za-z0-9]+", "-", cmd)[-80:]
    out = shared / key
    with open(shared / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / ".done").exists():
            proc = subprocess.run([sys.executable, m.group(1), str(out / "o"), *shlex.split(m.group(3))],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, f"`{cmd}`: {proc.stderr[-2000:]}"
            (out / ".done").write_text("ok")
    (tmp / m.group(2)).parent.mkdir(parents=True, exist_ok=True)
    (tmp / m.group(2)).symlink_to(out / "o")


def _env(tmp: Path) -> dict:
    shim = tmp / "bin"
    shim.mkdir()
    (shim / "kdt").write_text(f"#!/bin/sh\nexec {sys.executable} -m kdt \"$@\"\n")
    (shim / "kdt").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KDT_")}
    env["PATH"] = os.pathsep.join([str(shim), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


@pytest.fixture(scope="session")
def shared(session_folder) -> Path:
    """A folder every xdist worker of this session sees."""
    return session_folder("docs-setup")


@pytest.mark.parametrize("where,cmds", EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_the_example_runs(where, cmds, tmp_path, shared):
    distribution = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    ws = _workspace(tmp_path, cmds) or ROOT
    env = _env(tmp_path)
    script = []
    for cmd in cmds:
        if cmd.startswith("pip install"):
            name = re.match(r'pip install "?([A-Za-z0-9_.-]+)', cmd).group(1)
            assert name == distribution, f"{where}: `{cmd}` installs {name}, not {distribution}"
            continue
        if SETUP.match(cmd):
            _setup(cmd, tmp_path, shared, env)
            continue
        run = _transform(cmd.replace("/tmp/", f"{tmp_path}/"))
        if run is not None:
            script.append(run)
    for k, run in enumerate(script):
        cwd = ROOT if re.match(r"(kdt|make) diff\b", run) else ws      # diff reads git history
        if cwd == ROOT:         # what a command writes to a relative file goes to the test's folder, not the checkout
            run = re.sub(r"(>>?)\s*(?![/&])(\S+)", lambda m: f"{m.group(1)} {tmp_path / m.group(2)}", run)
        text = "\n".join(l for l in script[:k] if re.match(r"(export )?[A-Z_0-9]+=", l)) + "\n" + run
        code, out = _run_once(text, cwd, env, shared, tmp_path)
        assert code == 0, f"{where}: `{run}` exited {code}:\n{out[-3000:]}"
        assert "Traceback" not in out, f"{where}: `{run}`:\n{out[-3000:]}"


def _run_once(text: str, cwd: Path, env: dict, shared: Path, tmp: Path) -> tuple[int, str]:
    """(exit code, stdout + stderr) of `bash -c TEXT` in cwd. A command that several examples show alike (README's
    `make preview` twice, bench/rendezvous.py --help eight times), in this repository and naming no folder of
    the test's own, runs once per session: the others read its result (the same command, folder and files)."""
    def run() -> tuple[int, str]:
        proc = subprocess.run(["bash", "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                              input=CONFIGMAP)
        return proc.returncode, proc.stdout + proc.stderr
    if cwd != ROOT or str(tmp) in text:
        return run()
    import hashlib
    import json
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    result = shared / f"run-{key}.json"
    with open(shared / f"run-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.exists():
            result.write_text(json.dumps(run()))
        return tuple(json.loads(result.read_text()))

"""Training code from Git at a pinned commit (components/git-code, overlays/ddp-git) in `kdt run`.

A temporary repository holds the MNIST sample behind a wrapper that prints the commit it runs
(`git rev-parse HEAD` in its checkout) and every rank's line is read back from the pods' logs. The
overlay is overlays/ddp-git's own pieces (base, components/git-code/clone through a code component of
the test's, components/git-code/pytorchjob) pinned to the temporary repository's first commit.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from run_support import ROOT, kdt_run, of, processes_of

URL = "https://github.com/torch-k8s/torch-k8s"
WRAPPER = '''"""The sample, after the commit of this checkout: one [CODE] line per rank."""
import os
import runpy
import subprocess
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True).stdout.strip()
    print(f"[CODE] rank={os.environ.get('RANK')} commit={commit}", flush=True)
    sys.argv[0] = os.path.join(here, "mnist_sample.py")
    runpy.run_path(sys.argv[0], run_name="__main__")
'''


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env).stdout.strip()


def _repo(tmp: Path) -> tuple[Path, str]:
    """A repository whose training/mnist_ddp.py reports its commit, then runs the sample; (path, commit)."""
    repo = tmp / "code"
    shutil.copytree(ROOT / "training" / "trainkit", repo / "training" / "trainkit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "training" / "mnist_ddp.py", repo / "training" / "mnist_sample.py")
    (repo / "training" / "mnist_ddp.py").write_text(WRAPPER)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    return repo, _git(repo, "rev-parse", "HEAD")


def _overlay(tmp: Path, ref: str, *extra_components: str) -> Path:
    """overlays/ddp-git's composition, with the test's repository and ref (a code component of its own)."""
    rel = Path(os.path.relpath(ROOT, tmp / "overlay" / "code"))
    code = tmp / "overlay" / "code"
    code.mkdir(parents=True, exist_ok=True)
    (code / "kustomization.yaml").write_text(f"""apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
components: [{rel}/components/git-code/clone]
patches:
  - target: {{kind: PodTemplate, name: git-code}}
    patch: |-
      apiVersion: v1
      kind: PodTemplate
      metadata: {{name: git-code}}
      template:
        spec:
          initContainers:
            - name: git-sync
              env:
                - {{name: GITSYNC_REPO, value: "{URL}"}}
                - {{name: GITSYNC_REF, value: "{ref}"}}
""")
    up = Path(os.path.relpath(ROOT, tmp / "overlay"))
    comps = ", ".join(["code", *(f"{up}/components/git-code/{c}" for c in extra_components),
                       f"{up}/components/git-code/pytorchjob"])
    shutil.copy(ROOT / "overlays" / "ddp-git" / "mnist.yaml", tmp / "overlay")   # a patch file must be inside
    (tmp / "overlay" / "kustomization.yaml").write_text(f"""resources: [{up}/base]
components: [{comps}]
patches:
  - target: {{group: kubeflow.org, kind: PyTorchJob}}
    path: mnist.yaml
""")
    return tmp / "overlay"


def _code_lines(run: Path) -> dict[str, list[tuple[int, str, str]]]:
    """pod -> [(incarnation, rank, commit)] from its training container's log."""
    out: dict[str, list] = {}
    for log in (run / "logs").glob("*.pytorch.log"):
        pod, incarnation = log.name.split(".")[0], 0
        for line in log.read_text(errors="replace").splitlines():
            m = re.search(r"starts \(pod incarnation (\d+)\)", line)
            if m:
                incarnation = int(m.group(1))
            m = re.search(r"\[CODE\] rank=(\S+) commit=(\S*)", line)
            if m:
                out.setdefault(pod, []).append((incarnation, m.group(1), m.group(2)))
    return out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_recreated_pod_clones_the_pinned_commit_after_the_branch_moved(tmp_path):
    """Both pods clone commit A; once every rank has reported A, a new commit B moves `main`; then the
    Worker pod is lost and recreated: its new clone, and every rank after the group re-forms, report A.
    A ref of `main` would give the recreated pod B (test_a_branch_ref_resolves_again_when_a_pod_starts)."""
    repo, first = _repo(tmp_path)
    target = _overlay(tmp_path, first)
    work = tmp_path / "w"
    run = work / "run"
    # Lost at step 10, the first [TRAIN] line (trainkit logs every 10 steps), at least 1.5 s of --step-sleep after
    # every rank reported its commit; 20 steps: the group re-formed with the recreated pod trains from step 0
    # again (no checkpoint yet), to a [DONE] line on every rank.
    cmd = [sys.executable, "-m", "kdt", "run", str(target), "--git-repo", f"{URL}={repo}", "--nproc-per-node", "1",
           "--max-steps", "20", "--step-sleep", "0.15", "--lose", "mnist-ddp-worker-0@step=10", "--quiet",
           "--workdir", str(run), "--events", str(work / "events.jsonl")]
    work.mkdir()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        lines = _code_lines(run) if run.exists() else {}
        if sum(len(v) for v in lines.values()) >= 2:
            break
        time.sleep(0.05)
    worker_log = run / "logs" / "mnist-ddp-worker-0.pytorch.log"
    seen_at_move = worker_log.stat().st_size
    (repo / "NEWS").write_text("newer code\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "second")
    second = _git(repo, "rev-parse", "main")
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, out + err
    assert second != first
    # the Worker was recreated after the branch moved: its second incarnation starts past that point of its log
    assert "pod incarnation 2" in worker_log.read_text()[seen_at_move:], "the pod was not recreated after the move"
    lines = _code_lines(run)
    worker = lines.get("mnist-ddp-worker-0", [])
    assert {inc for inc, _, _ in worker} >= {1, 2}, worker
    commits = {c for pod in lines.values() for _, _, c in pod}
    assert commits == {first}, f"ranks ran {commits}, pinned {first}, branch head {second}"
    assert processes_of(run) == []


def test_a_branch_ref_resolves_again_when_a_pod_starts(tmp_path):
    """What the pin prevents, shown on the local git-sync itself: a pod that clones `main` after the branch
    moved gets the new head, a pod that clones the SHA gets the SHA; and lint names the branch ref."""
    sys.path.insert(0, str(ROOT / "src"))
    from kdt.run import gitsync_local as GL
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "a").write_text("1")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD")
    assert GL.sync(str(repo), "main", str(tmp_path / "pod1"), "repo") == first
    (repo / "a").write_text("2")
    _git(repo, "commit", "-qam", "two")
    second = _git(repo, "rev-parse", "HEAD")
    assert GL.sync(str(repo), "main", str(tmp_path / "pod2"), "repo") == second       # the trap
    assert GL.sync(str(repo), first, str(tmp_path / "pod3"), "repo") == first         # the pin
    assert (tmp_path / "pod3" / "repo" / "a").read_text() == "1"
    assert os.readlink(tmp_path / "pod3" / "repo") == f".worktrees/{first}"           # relative, as git-sync's
    code, out, err = _lint(_overlay(tmp_path / "o", "main"))
    assert code == 1 and "[git-ref-pinned]" in out and "git rev-parse main" in out, out + err


def _lint(target: Path):
    p = subprocess.run([sys.executable, "-m", "kdt", "lint", str(target)], cwd=ROOT, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def _one_line(code, err):
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1, (code, err)
    return lines[0]


def test_bad_git_inputs_are_one_located_line_and_nothing_starts(tmp_path):
    repo, first = _repo(tmp_path)
    given = ["--git-repo", f"{URL}={repo}"]
    # a ref that is not a commit of the given repository
    line = _one_line(*kdt_run(_overlay(tmp_path / "a", "0" * 40), *given, workdir=tmp_path / "ra")[::2])
    assert "is not a commit of" in line and re.search(r"overlay \(rendered\):\d+:\d+: error \[run\]", line), line
    # a Secret the clone needs that the target does not hold
    line = _one_line(*kdt_run(_overlay(tmp_path / "b", first, "token"), *given, workdir=tmp_path / "rb")[::2])
    assert "Secret 'git-credentials'" in line, line
    # no local repository for the URL, and a path that is not there
    line = _one_line(*kdt_run(_overlay(tmp_path / "c", first), workdir=tmp_path / "rc")[::2])
    assert f"--git-repo {URL}=PATH" in line, line
    line = _one_line(*kdt_run(_overlay(tmp_path / "d", first), "--git-repo", f"{URL}={tmp_path / 'nowhere'}",
                              workdir=tmp_path / "rd")[::2])
    assert "does not exist" in line, line
    for w in ("ra", "rb", "rc", "rd"):
        assert not list((tmp_path / w / "run" / "logs").glob("*.log")) if (tmp_path / w / "run").exists() else True

"""Where the benchmarks find the public repositories they read (one rule for every bench script).

`checkout("kubeflow/trainer", "v2.3.0")` returns a folder holding that repository at that tag, looked
up in this order:

1. `$KDT_BENCH_REPOS/<owner>/<name>` when the variable is set: a work tree the user checked out
   themselves (its revision is theirs; `ref` is not checked);
2. `$KDT_BENCH_CACHE/<owner>/<name>@<ref>` (default `~/.cache/kdt-bench`, outside every checkout, so no
   `kdt validate .` walks it): an export made earlier by this module;
3. a snapshot of the repository fetched with the search tool (`fetch github:<owner>/<name>`), a bare git
   directory under `$KDT_MIRRORS` (default `/work/.mirror`) as `<owner>+<name>/repo`: `ref` is exported
   from it with `git archive` into the cache folder above and reused.

When none has it, `checkout` returns None and `missing()` gives the line a bench prints ("fetch
github:owner/name"): the figures then cover what is present. Nothing here reaches the network.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = Path(os.environ.get("KDT_BENCH_CACHE", Path.home() / ".cache" / "kdt-bench"))


def _mirror(repo: str) -> Path | None:
    base = Path(os.environ.get("KDT_MIRRORS", "/work/.mirror")) / repo.replace("/", "+")
    for cand in (base / "repo", base):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
    return None


def checkout(repo: str, ref: str = "HEAD") -> Path | None:
    """A folder with `repo` (owner/name) at `ref` (a tag, branch or commit), or None when it is not here."""
    user = os.environ.get("KDT_BENCH_REPOS")
    if user and (Path(user) / repo).is_dir():
        return Path(user) / repo
    folder = EXPORTS / f"{repo}@{ref.replace('/', '_')}"
    if folder.is_dir():
        return folder
    git_dir = _mirror(repo)
    if git_dir is None:
        return None
    probe = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return None
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        _export(git_dir, ref, tmp)
        os.replace(tmp, folder)        # whole or not at all
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _export(git_dir: Path, ref: str, dest: Path) -> None:
    """Every file of `ref` into `dest`. A snapshot may lack its largest blobs (the fetch tool's note):
    those are skipped (listed in dest/.kdt-missing-blobs), not the whole export."""
    git = ["git", f"--git-dir={git_dir}"]
    tree = subprocess.run([*git, "ls-tree", "-r", "-z", ref], capture_output=True, check=True).stdout
    entries = []
    for item in tree.split(b"\0"):
        if not item:
            continue
        meta, path = item.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((mode, sha.decode(), path.decode("utf-8", "surrogateescape")))
    batch = subprocess.Popen([*git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    absent = []
    for mode, sha, path in entries:
        batch.stdin.write(sha.encode() + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            absent.append(path)
            continue
        data = batch.stdout.read(int(header[2]))
        batch.stdout.read(1)          # the newline after each object
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == b"120000":         # a symbolic link: its blob is the link's text
            os.symlink(data.decode("utf-8", "surrogateescape"), target)
        else:
            target.write_bytes(data)
            if mode == b"100755":
                target.chmod(0o755)
    batch.stdin.close()
    batch.wait()
    if absent:
        (dest / ".kdt-missing-blobs").write_text("\n".join(absent) + "\n")


def tags(repo: str) -> list[str]:
    """The tags of `repo` that `checkout` can export (its fetched snapshot's; a user's work tree's own)."""
    user = os.environ.get("KDT_BENCH_REPOS")
    where = None
    if user and (Path(user) / repo).is_dir():
        where = ["git", "-C", str(Path(user) / repo)]
    elif _mirror(repo) is not None:
        where = ["git", f"--git-dir={_mirror(repo)}"]
    if where is None:
        return []
    proc = subprocess.run([*where, "tag"], capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else []


def corpus() -> Path:
    """The workplace's shared corpus (`shared/corpus`): `$KDT_CORPUS`, else the first `shared/corpus` beside
    this checkout or beside a folder above it (a worktree under `wt/` shares its main checkout's)."""
    if os.environ.get("KDT_CORPUS"):
        return Path(os.environ["KDT_CORPUS"])
    for folder in ROOT.parents:
        if (folder / "shared" / "corpus").is_dir():
            return folder / "shared" / "corpus"
    return ROOT.parent / "shared" / "corpus"


def missing(repo: str, ref: str = "HEAD") -> str:
    """The line a bench prints for a repository it could not read."""
    at = "" if ref == "HEAD" else f" at {ref}"
    return (f"missing: {repo}{at} (fetch github:{repo} with the search tool, or set KDT_BENCH_REPOS to a folder "
            f"holding {repo}); not measured")

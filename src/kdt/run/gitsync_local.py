"""git-sync's one-time sync, without a network: what `kdt run` starts for a git-sync init container.

    python3 gitsync_local.py --repo URL --source PATH --ref REF --root DIR --link NAME

The repository is a local clone or bundle the user named for URL (`kdt run --git-repo URL=PATH`). As
git-sync v4 does (v4.3.0 main.go: the ref resolved by the remote when the pod starts, a worktree at
`<root>/.worktrees/<sha>`, the relative symlink `<root>/<link>` to it, exit 0 in one-time mode), with
the `git` program: REF is resolved against PATH *now* (a branch moved since an earlier pod started is
resolved to its new head, as on a cluster; a full SHA is itself), fetched, checked out, linked.
Prints `[GITSYNC] ... commit=<sha>`; exits 1 with one line when the ref is not a commit of PATH.

Standalone (the standard library and `git`): a local run starts it as a program, with no PYTHONPATH.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

FULL_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def _git(*args: str, cwd: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check, env=env)


def _has_commit(repo: str, sha: str) -> bool:
    return _git("cat-file", "-e", f"{sha}^{{commit}}", cwd=repo, check=False).returncode == 0


def resolve(source: str, ref: str) -> str | None:
    """The commit REF names in SOURCE (a folder or a bundle) now, or None. A full SHA must be a commit
    there; any other ref is looked up as the remote advertises it (git ls-remote: HEAD, a branch, a
    tag peeled to its commit), as git-sync v4 fetches it."""
    if FULL_SHA.match(ref):
        if os.path.isdir(source):
            return ref if _has_commit(source, ref) else None
        with tempfile.TemporaryDirectory(prefix="kdt-gitsync-") as tmp:   # a bundle: look inside it
            _git("init", "-q", "--bare", tmp)
            if _git("fetch", "-q", "--no-tags", source, "+refs/*:refs/src/*", cwd=tmp, check=False).returncode:
                return None
            return ref if _has_commit(tmp, ref) else None
    out = _git("ls-remote", source, check=False)
    if out.returncode:
        return None
    refs = {}
    for line in out.stdout.splitlines():
        sha, _, name = line.partition("\t")
        refs[name] = sha
    for name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}"):
        if name in refs:
            return refs[name]
    return None


def sync(source: str, ref: str, root: str, link: str) -> str:
    """Fetch, check out and link the commit REF names in SOURCE now; the commit."""
    sha = resolve(source, ref)
    if sha is None:
        raise LookupError(f"ref {ref!r} is not a commit of {source}")
    os.makedirs(root, exist_ok=True)
    if not os.path.exists(os.path.join(root, ".git")):
        _git("init", "-q", root)
    _git("fetch", "-q", "--no-tags", source, "+refs/*:refs/kdt-source/*", cwd=root)
    if not _has_commit(root, sha):
        raise LookupError(f"commit {sha} is not reachable from a ref of {source}")
    worktree = os.path.join(root, ".worktrees", sha)
    if not os.path.isdir(worktree):
        _git("worktree", "add", "-q", "--detach", worktree, sha, cwd=root)
    path = link if os.path.isabs(link) else os.path.join(root, link)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), "tmp-link")
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(os.path.relpath(worktree, os.path.dirname(path)), tmp)   # relative, as git-sync's
    os.replace(tmp, path)
    return sha


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="gitsync_local.py")
    for flag in ("--repo", "--source", "--ref", "--root", "--link"):
        p.add_argument(flag, required=True)
    a = p.parse_args(argv)
    try:
        sha = sync(a.source, a.ref, a.root, a.link)
    except (LookupError, subprocess.CalledProcessError, OSError) as exc:
        detail = getattr(exc, "stderr", "") or ""
        print(f"git-sync (local): {a.repo} at {a.ref}: {exc}{': ' + detail.strip() if detail else ''}", flush=True)
        return 1
    print(f"[GITSYNC] repo={a.repo} ref={a.ref} commit={sha} source={a.source}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

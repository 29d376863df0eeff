"""What a change does: every target rendered at two git refs, compared resource by resource.

Documents are matched by (group, kind, namespace, name); for each changed one
the field paths with old and new values (lists of named items are matched by
name, so inserting a container does not shift every later one). A ref is
rendered from `git archive` into a temporary folder, so the working tree and
the index are never touched.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from . import summary as S
from . import targets as T
from .documents import Document
from .errors import UsageError
from .findings import Finding, format_path
from .paths import ROOT
from .render import render

ADDED, REMOVED, CHANGED = "added", "removed", "changed"
_MISSING = object()


@dataclass
class Change:
    path: str
    old: Any = None
    new: Any = None
    op: str = CHANGED           # added | removed | changed

    def to_dict(self) -> dict:
        return {"path": self.path, "op": self.op, "old": self.old, "new": self.new}


@dataclass
class Totals:
    """Per target: nodes (pods at max), GPUs, CPU cores and memory bytes requested."""
    nodes: int = 0
    gpus: int = 0
    cpu: float = 0.0
    memory: float = 0.0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class ResourceDiff:
    key: tuple                  # (group, kind, namespace, name)
    op: str
    changes: list[Change] = field(default_factory=list)

    @property
    def label(self) -> str:
        group, kind, ns, name = self.key
        return f"{kind}/{name}" + (f" (namespace {ns})" if ns else "")

    def to_dict(self) -> dict:
        group, kind, ns, name = self.key
        return {"group": group, "kind": kind, "namespace": ns, "name": name, "op": self.op,
                "changes": [c.to_dict() for c in self.changes]}


@dataclass
class TargetDiff:
    target: str
    status: str = "unchanged"   # unchanged | changed | added | removed | error
    resources: list[ResourceDiff] = field(default_factory=list)
    before: Totals = field(default_factory=Totals)
    after: Totals = field(default_factory=Totals)
    findings: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.status in ("changed", "added", "removed")

    def to_dict(self) -> dict:
        return {"target": self.target, "status": self.status, "before": self.before.to_dict(),
                "after": self.after.to_dict(), "resources": [r.to_dict() for r in self.resources],
                "errors": [f.to_dict() for f in self.findings]}


# ---------------------------------------------------------------- field changes

def _named(items: list) -> str | None:
    """The key that identifies every item of a list of mappings (name, or mountPath...), if any."""
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for key in ("name", "mountPath", "containerPort", "devicePath", "ip"):
        values = [i.get(key) for i in items]
        if all(v is not None for v in values) and len(set(map(str, values))) == len(values):
            return key
    return None


def field_changes(old: Any, new: Any, path: tuple = ()) -> list[Change]:
    """Every leaf-level difference between two YAML values, with JSON paths (format_path)."""
    out: list[Change] = []
    _walk(old, new, path, out)
    return out


def _walk(old: Any, new: Any, path: tuple, out: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in old:
            if k not in new:
                out.append(Change(format_path(path + (k,)), _plain(old[k]), None, REMOVED))
        for k in new:
            if k not in old:
                out.append(Change(format_path(path + (k,)), None, _plain(new[k]), ADDED))
            else:
                _walk(old[k], new[k], path + (k,), out)
        return
    if isinstance(old, list) and isinstance(new, list):
        key = _named(old) if old else None
        nkey = _named(new) if new else None
        key = key or nkey
        if key and (not old or _named(old) == key) and (not new or _named(new) == key):
            old_by = {str(i.get(key)): (n, i) for n, i in enumerate(old)}
            new_by = {str(i.get(key)): (n, i) for n, i in enumerate(new)}
            for k, (n, item) in old_by.items():
                if k not in new_by:
                    out.append(Change(format_path(path + (n,)), _plain(item), None, REMOVED))
            for k, (n, item) in new_by.items():
                if k not in old_by:
                    out.append(Change(format_path(path + (n,)), None, _plain(item), ADDED))
                else:
                    _walk(old_by[k][1], item, path + (n,), out)
            return
        if len(old) == len(new):
            for n, (a, b) in enumerate(zip(old, new)):
                _walk(a, b, path + (n,), out)
            return
        out.append(Change(format_path(path), _plain(old), _plain(new), CHANGED))
        return
    if type(old) is not type(new) and not (isinstance(old, (int, float)) and isinstance(new, (int, float))
                                           and not isinstance(old, bool) and not isinstance(new, bool)):
        out.append(Change(format_path(path), _plain(old), _plain(new), CHANGED))
    elif old != new:
        out.append(Change(format_path(path), _plain(old), _plain(new), CHANGED))


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, (str, bool, int, float)) or v is None:
        return v if type(v) in (str, bool, int, float) or v is None else (
            str(v) if isinstance(v, str) else bool(v) if isinstance(v, bool) else
            int(v) if isinstance(v, int) else float(v))
    return str(v)


def diff_documents(old: list[Document], new: list[Document]) -> list[ResourceDiff]:
    """Resources added, removed and changed, matched by (group, kind, namespace, name)."""
    old_by = {d.key(): d for d in old}
    new_by = {d.key(): d for d in new}
    out = []
    for k, d in old_by.items():
        if k not in new_by:
            out.append(ResourceDiff(k, REMOVED))
    for k, d in new_by.items():
        if k not in old_by:
            out.append(ResourceDiff(k, ADDED))
        else:
            changes = field_changes(old_by[k].data, d.data)
            if changes:
                out.append(ResourceDiff(k, CHANGED, changes))
    order = {k: i for i, k in enumerate(list(old_by) + [k for k in new_by if k not in old_by])}
    out.sort(key=lambda r: order[r.key])
    return out


def totals(docs: list[Document]) -> Totals:
    t = Totals()
    for d in docs:
        w = S.workload(d)
        if w is None:
            continue
        n = w.max_nodes
        t.nodes += n
        t.gpus += w.gpus_per_node * n
        t.cpu += w.cpu
        t.memory += w.memory
    return t


# ---------------------------------------------------------------- git refs

def git(repo: Path, *args: str, binary: bool = False) -> Any:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=120)
    except FileNotFoundError:
        raise UsageError("git: not found") from None
    if proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        raise UsageError(f"git {' '.join(args)}: {msg[-1] if msg else f'exit code {proc.returncode}'}")
    return proc.stdout if binary else proc.stdout.decode().strip()


def repo_root(start: Path = ROOT) -> Path:
    return Path(git(start, "rev-parse", "--show-toplevel"))


def default_base(repo: Path, branch: str = "main") -> str:
    """The merge base of HEAD with `main` (or origin/main)."""
    for candidate in (branch, f"origin/{branch}"):
        with contextlib.suppress(UsageError):
            git(repo, "rev-parse", "--verify", "--quiet", candidate + "^{commit}")
            return git(repo, "merge-base", candidate, "HEAD")
    raise UsageError(f"no branch {branch!r} to take the merge base with; name one with --base REF")


@contextlib.contextmanager
def checkout(repo: Path, ref: str) -> Iterator[Path]:
    """The tree of `ref`, extracted into a temporary folder (git archive: nothing in the repo changes)."""
    sha = git(repo, "rev-parse", "--verify", "--quiet", ref + "^{commit}") if ref else ""
    if not sha:
        raise UsageError(f"{ref}: not a commit in {repo}")
    data = git(repo, "archive", "--format=tar", sha, binary=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"kdt-diff-{sha[:8]}-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp, filter="data")
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _rel_targets(root: Path, prefix: Path | None = None) -> dict[str, T.Target]:
    """The targets under `root`, named as in the repository (overlays/x, charts/c/ci/v.yaml)."""
    out = {}
    for t in T.discover(root):
        rel = t.path.resolve().relative_to(root.resolve())
        name = str(rel)
        out[name] = dataclasses.replace(t, name=name)
    return out


def _render_docs(t: T.Target | None) -> tuple[list[Document], list[Finding]]:
    if t is None:
        return [], []
    r = render(t)
    # Rendered output kubectl cannot read (a control character, an alias bomb) is as fatal as no output.
    fatal = [f for f in r.findings if f.rule in ("render", "input") or (f.rule == "yaml" and f.level == "error")]
    return r.documents, fatal


def diff_trees(base_root: Path, head_root: Path, only: list[str] | None = None) -> list[TargetDiff]:
    before, after = _rel_targets(base_root), _rel_targets(head_root)
    names = list(before) + [n for n in after if n not in before]
    if only:
        wanted = [str(Path(o)).rstrip("/") for o in only]
        unknown = [w for w in wanted if not any(n == w or n.startswith(w + "/") for n in names)]
        if unknown:
            raise UsageError(f"{', '.join(unknown)}: not a target at either ref "
                             f"(targets are overlays/<name> and charts/<chart>/ci/<file>.yaml, relative to the repo)")
        names = [n for n in names if any(n == w or n.startswith(w + "/") for w in wanted)]
    out = []
    for name in names:
        old_docs, old_err = _render_docs(before.get(name))
        new_docs, new_err = _render_docs(after.get(name))
        td = TargetDiff(name)
        td.findings = old_err + new_err
        if td.findings:
            td.status = "error"
        else:
            td.resources = diff_documents(old_docs, new_docs)
            if name not in before:
                td.status = "added"
            elif name not in after:
                td.status = "removed"
            elif td.resources:
                td.status = "changed"
        td.before, td.after = totals(old_docs), totals(new_docs)
        out.append(td)
    return out


def diff_refs(repo: Path, base: str, head: str | None = None, only: list[str] | None = None) -> list[TargetDiff]:
    """Every target of `repo` at `base` against `head` (None: the working tree)."""
    with checkout(repo, base) as base_root:
        if head is None:
            return diff_trees(base_root, repo, only)
        with checkout(repo, head) as head_root:
            return diff_trees(base_root, head_root, only)

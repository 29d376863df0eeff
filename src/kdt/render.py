"""The only place that runs kubectl or helm: the project's pinned binaries, one call per target per run.

A rendered document remembers its target and, where it can be known, the source
file it came from (helm's `# Source:` lines; for kustomize, the resource file
in the overlay's tree that declares the same kind and name).

Targets render in parallel, one kubectl or helm at a time per core (`render_all`,
`jobs`), and a folder renders once per run whatever path or symbolic link names
it and however many threads ask for it at once (`render` is memoized by the real
path, and a second caller waits for the first).
"""
from __future__ import annotations

import os
import re
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import render_cache
from . import targets as T
from .documents import Document, bad_bytes_finding, is_blank, load_all, read_file, read_stream
from .kubeyaml import APPLY, BOTH
from .errors import UsageError
from .findings import ERROR, WARNING, Finding
from .paths import display, tool

HELM_RELEASE = "trainer"   # release name used for every chart values file
HELM_NAMESPACE = "default"
TIMEOUT_S = 120


@dataclass
class Rendered:
    target: T.Target
    text: str = ""
    documents: list[Document] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    skipped: int = 0          # a file met walking a folder that holds no Kubernetes object: 1

    @property
    def ok(self) -> bool:
        return not any(f.rule in ("render", "input") for f in self.findings)


_cache: dict[tuple, Rendered] = {}
_pending: dict[tuple, threading.Event] = {}
_lock = threading.Lock()


def cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _key(target: T.Target, helm_set: tuple) -> tuple:
    def real(p) -> str:
        if p is None or str(p) == "-":
            return str(p)
        try:
            return str(Path(p).resolve())
        except (OSError, RuntimeError):
            return str(p)
    return (target.kind, real(target.path), real(target.chart), tuple(helm_set))


# kubectl and helm are Go programs that live for one render: their garbage collector at GOGC=400 (the Go
# runtime's default is 100) spends about a third less CPU on a large render (kubernetes-sigs/kueue's
# config/default, 1.7 MB: 0.62 to 0.42 s of user time, peak memory 130 to 210 MB, measured here) and changes
# nothing in the output. A GOGC the user set is kept.
_GO_ENV = {"GOGC": "400"}


def _env() -> dict:
    return {**_GO_ENV, **os.environ}


def _run(cmd: list[str], target: T.Target, cwd: Path | None = None) -> tuple[str, Finding | None]:
    cache_key = render_cache.key(cmd, [target.path, target.chart]) if cwd is None else None
    cached = render_cache.get(cache_key)
    if cached is not None:
        return cached, None
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd, env=_env())
    except FileNotFoundError:
        raise UsageError(f"{cmd[0]}: not found; run `make venv` to bootstrap the project's tools") from None
    except subprocess.TimeoutExpired:
        return "", Finding(ERROR, "render", f"{Path(cmd[0]).name} did not finish in {TIMEOUT_S} s", target.name, target=target.name)
    if proc.returncode != 0:
        msg = " ".join(proc.stderr.strip().split("\n")) or f"exit code {proc.returncode}"
        tool_name = Path(cmd[0]).name
        verb = "kustomize" if tool_name == "kubectl" else "template"
        return "", Finding(ERROR, "render", f"{tool_name} {verb} failed: {msg}", target.name, target=target.name)
    render_cache.put(cache_key, proc.stdout)
    return proc.stdout, None


def render_text(target: T.Target, helm_set: tuple[str, ...] = ()) -> tuple[str, Finding | None]:
    """The rendered YAML stream of a target (or the file's own text); helm_set: `--set` values of a chart."""
    if target.kind == T.KUSTOMIZE:
        return _run([tool("kubectl"), "kustomize", str(target.path)], target)
    if target.kind == T.HELM:
        cmd = [tool("helm"), "template", HELM_RELEASE, str(target.chart), "--namespace", HELM_NAMESPACE]
        if target.path.name != "values.yaml" or target.path.parent != target.chart:
            cmd += ["-f", str(target.path)]
        for value in helm_set:
            cmd += ["--set", value]
        return _run(cmd, target)
    _, text, _ = read_file(str(target.path))
    return text, None


def render(target: T.Target, helm_set: tuple[str, ...] = ()) -> Rendered:
    """The target rendered and read, once per run (thread-safe: a second caller of the same target waits)."""
    key = _key(target, helm_set)
    with _lock:
        if key in _cache:
            return _cache[key]
        event = _pending.get(key)
        owner = event is None
        if owner:
            event = _pending[key] = threading.Event()
    if not owner:
        event.wait()
        with _lock:
            done = _cache.get(key)
        return done if done is not None else render(target, helm_set)
    try:
        out = _render(target, tuple(helm_set))
        with _lock:
            _cache[key] = out
    finally:
        with _lock:
            _pending.pop(key, None)
        event.set()
    return out


def _render(target: T.Target, helm_set: tuple[str, ...]) -> Rendered:
    bad = None
    try:
        if target.kind == T.FILE:
            _, text, bad = read_file(str(target.path))
            failure = None
        else:
            text, failure = render_text(target, tuple(helm_set))
    except UsageError as exc:
        if target.kind != T.FILE:
            raise
        # One unreadable file is a located error of its own; the other files' results still count.
        text, failure = "", Finding(ERROR, "input", str(exc).removeprefix(f"{target.path}: "), target.name)
    out = Rendered(target, text)
    if failure is not None:
        out.findings.append(failure)
    else:
        file = target.name if target.kind == T.FILE else f"{target.name} (rendered)"
        # A file is applied with `kubectl apply -f` or as a kustomize resource (standard input only the first
        # way); rendered output with `kubectl apply` (kdt.kubeyaml). A file met in a folder walk may be no
        # manifest at all (skipped, counted); one named must be.
        stdin = target.kind == T.FILE and str(target.path) == "-"
        paths = BOTH if target.kind == T.FILE and not stdin else (APPLY,)
        named = (not target.in_folder) if target.kind == T.FILE else None
        read = read_stream(text, file, target=out_target(target), paths=paths, named=named)
        out.documents, out.findings = read.documents, read.findings
        if bad is not None:
            out.findings.insert(0, bad_bytes_finding(bad, file, paths))
        out.skipped = int(bool(read.skipped) and not read.documents and not read.findings)
        if target.kind == T.KUSTOMIZE:
            sources = kustomize_sources(target.path)
            for d in out.documents:
                d.source = sources.get((d.kind, d.name)) or sources.get((d.kind, "*"), "")
        elif target.kind == T.HELM:
            for d, src in zip(out.documents, helm_sources(out.documents, target.chart)):
                d.source = src
        if not out.documents and not out.findings and not out.skipped and not target.in_folder and \
                (target.kind != T.FILE or (stdin and is_blank(text))):
            # kubectl apply refuses it too ("no objects passed to apply"), as it does empty standard input; a
            # blank file named is judged with the run's other files (nothing_to_apply).
            what = {T.FILE: "input", T.KUSTOMIZE: "kustomization's output", T.HELM: "chart's output"}[target.kind]
            out.findings.append(Finding(ERROR, "input", f"the {what} holds no Kubernetes object", file, target=out_target(target)))
    return out


# k8s.io/kubectl v0.36.3 pkg/cmd/apply/apply.go RunApply: `if len(infos) == 0 && len(errs) == 0 { return
# fmt.Errorf("no objects passed to apply") }`: the pinned kubectl 1.37.1 says `error: no objects passed to apply`
# (exit 1) for `kubectl apply --dry-run=client -f FILE` on an empty file, one of only comments, or of only `---`.
KUBECTL_NO_OBJECTS = "no objects passed to apply"


def holds_nothing(target: T.Target, documents: int, findings: list, skipped: int, text=None) -> bool:
    """Whether `target` is a file the user named (not standard input, not met walking a folder) that gave no
    object, no finding and nothing skipped because it is empty, or only comments, directives and `---` lines
    (`text`: its text when the caller holds it; else it is read, up to BLANK_READ bytes). An empty `kind: List`
    is an object written on purpose, not this."""
    if not (target.kind == T.FILE and not target.in_folder and str(target.path) != "-" and not documents
            and not findings and not skipped):
        return False
    if text is None:
        try:
            with open(target.path, "rb") as fh:
                raw = fh.read(BLANK_READ + 1)
        except OSError:
            return False
        if len(raw) > BLANK_READ:
            return False
        text = raw.decode("utf-8", errors="replace")
    return is_blank(text)


BLANK_READ = 1 << 20     # bytes: a file larger than this that holds no object is not read again to say so


def nothing_to_apply(empty: list[T.Target], documents: int) -> list[Finding]:
    """One located line for each file named that holds no Kubernetes object (`holds_nothing`).

    kubectl refuses the run only when nothing it was given holds an object (KUBECTL_NO_OBJECTS) and otherwise
    applies the rest without a word, so: an error when the run has no object at all (rule `input`: exit 2, as
    for every input kubectl refuses), else a warning (the named file is most likely not the one meant, and the
    others' results stand). A file met walking a folder says nothing, as `kubectl apply -f DIR` says nothing of
    it: a folder of manifests may hold commented-out examples."""
    if not empty:
        return []
    level = ERROR if documents == 0 else WARNING
    how = (f'kubectl apply says "{KUBECTL_NO_OBJECTS}"' if documents == 0
           else "kubectl apply -f skips it and applies the other files")
    return [Finding(level, "input", f"no Kubernetes object in this file (it is empty or holds only comments): {how}",
                    t.name, line=1, col=1) for t in empty]


def built_documents(target: T.Target) -> list[Document]:
    """A target's documents, rendered once per run (what kdt.trainer_release.decide asks of a kustomization that
    builds a file named alone); none when it does not render (its own run reports that)."""
    r = render(target)
    return r.documents if r.ok else []


def out_target(target: T.Target) -> str:
    return target.name if target.kind != T.FILE else ""


def render_all(targets: list[T.Target], jobs: int | None = None) -> list[Rendered]:
    """Every target rendered, in the order given; `jobs` at a time (default: the cores there are). Targets
    that name the same input (a symlink, the same folder twice) are rendered once, as the first of them
    that was given, whichever thread gets there first."""
    jobs = jobs or cores()
    first: dict[tuple, T.Target] = {}
    for t in targets:
        first.setdefault(_key(t, ()), t)
    with render_cache.batch():
        if jobs <= 1 or len(first) <= 1:
            done = {k: render(t) for k, t in first.items()}
        else:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                done = dict(zip(first, pool.map(render, first.values())))
    return [done[_key(t, ())] for t in targets]


_HELM_SOURCE = re.compile(r"^# Source: [^/]+/(.+)$", re.MULTILINE)


def helm_sources(docs: list[Document], chart: Path | None) -> list[str]:
    out = []
    for d in docs:
        m = _HELM_SOURCE.search(d.text)
        out.append(display(chart / m.group(1)) if (m and chart) else "")
    return out


def kustomize_sources(folder: Path) -> dict[tuple[str, str], str]:
    """(kind, name) -> source file, for the local resources of a kustomization tree.

    (kind, "*") names the file when a kind appears in exactly one file, so that
    renamed resources (namePrefix, nameSuffix) still find their source.
    """
    found: dict[tuple[str, str], str] = {}
    files_by_kind: dict[str, set[str]] = {}
    seen: set[Path] = set()

    def walk(kdir: Path) -> None:
        kdir = kdir.resolve()
        if kdir in seen:
            return
        seen.add(kdir)
        kfile = next((kdir / f for f in T.KUSTOMIZATION_FILES if (kdir / f).is_file()), None)
        if kfile is None:
            return
        try:
            spec = (load_all(kfile.read_text(errors="replace")) or [{}])[0]
        except OSError:
            return
        if not isinstance(spec, dict):
            return
        for entry in list(spec.get("resources") or []) + list(spec.get("components") or []):
            if not isinstance(entry, str) or "://" in entry or entry.startswith("github.com"):
                continue
            p = (kdir / entry)
            if p.is_dir():
                walk(p)
            elif p.is_file():
                try:
                    docs = load_all(p.read_text(errors="replace"))
                except OSError:
                    continue
                for d in docs:
                    if isinstance(d, dict):
                        kind = str(d.get("kind", ""))
                        name = str((d.get("metadata") or {}).get("name", ""))
                        found.setdefault((kind, name), display(p))
                        files_by_kind.setdefault(kind, set()).add(display(p))

    walk(folder)
    for kind, files in files_by_kind.items():
        if len(files) == 1:
            found[(kind, "*")] = next(iter(files))
    return found


_HELM_LINT_LINE = re.compile(r"^\[(ERROR|WARNING)\] (.*)$")


def helm_lint(target: T.Target) -> list[Finding]:
    """`helm lint --strict` of a chart with a target's values file: its [ERROR] and [WARNING] lines as findings."""
    if target.kind != T.HELM or target.chart is None:
        return []
    cmd = [tool("helm"), "lint", "--strict", str(target.chart)]
    if target.path.name != "values.yaml" or target.path.parent != target.chart:
        cmd += ["-f", str(target.path)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=_env())
    except subprocess.TimeoutExpired:
        return [Finding(ERROR, "helm-lint", f"helm lint did not finish in {TIMEOUT_S} s", target.name, target=target.name)]
    out: list[Finding] = []
    for line in proc.stdout.splitlines():
        m = _HELM_LINT_LINE.match(line.strip())
        if m:
            level = ERROR if m.group(1) == "ERROR" else "warning"
            out.append(Finding(level, "helm-lint", f"helm lint --strict: {m.group(2).strip()}", target.name,
                               target=target.name, source=display(target.chart)))
    if proc.returncode != 0 and not any(f.level == ERROR for f in out):
        msg = " ".join(proc.stderr.split()) or f"exit code {proc.returncode}"
        out.append(Finding(ERROR, "helm-lint", f"helm lint --strict failed: {msg}", target.name, target=target.name))
    return out


def render_edited(root: Path, edits: dict[Path, str]) -> tuple[str, Finding | None]:
    """The render of kustomization `root` as it would be with some of its tree's files (real paths) holding
    other text, the tree left untouched: the edited files are written into a shadow of the folders that
    hold them (every other entry of those folders, and of the folders above them, a symbolic link to the
    real one), and kustomize builds the shadow of `root` with `--load-restrictor LoadRestrictionsNone`
    (the links lead out of the shadow; kustomize's default refuses files whose real path is outside the
    kustomization, api/krusty and api/loader fileloader.go). Relative references resolve in the shadow as
    in the tree, so the render differs from the real one only by the edits."""
    import shutil
    import tempfile
    root = root.resolve()
    edited = {p.resolve(): text for p, text in edits.items()}
    needed: set[Path] = {root, *root.parents}
    for p in edited:
        needed |= set(p.parents)
    base = Path(tempfile.mkdtemp(prefix="kdt-shadow-"))
    try:
        def mirror(real: Path, shadow: Path) -> None:
            shadow.mkdir(exist_ok=True)
            for entry in real.iterdir():
                there = shadow / entry.name
                if entry in edited:
                    there.write_text(edited[entry])
                elif entry in needed and entry.is_dir() and not entry.is_symlink():
                    mirror(entry, there)
                else:
                    os.symlink(entry, there)
        mirror(Path(root.anchor), base / "fs")
        shadow_root = base / "fs" / root.relative_to(root.anchor)
        target = T.Target(display(root), T.KUSTOMIZE, root)
        return _run([tool("kubectl"), "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(shadow_root)],
                    target)
    except OSError as exc:
        return "", Finding(ERROR, "render", f"cannot build a shadow of {display(root)}: {exc}", display(root))
    finally:
        shutil.rmtree(base, ignore_errors=True)

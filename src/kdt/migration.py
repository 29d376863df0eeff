"""The migration stage (`kdt migrate`): a target moved to a Trainer shape, and the proof that nothing else moved.

For each target (YAML files, an overlay, a chart values file):
1. render it and ask each document's kind for its plan (the kinds' `migrate` hook; kdt.migrate): a
   PyTorchJob becomes a TrainJob on a runtime, a TrainJob or runtime changes shape;
2. write the migrated target in a folder of its own, the input untouched: a YAML file with the migrated
   documents in place (round-trip: comments and key order kept), an overlay beside the original (a
   kustomization that takes the original as its resource, the plans as JSON6902 patches, the generated
   runtimes as resources), a values file of the chart with the new mode;
3. render what was written and prove it: the merge preview (kdt.merge_preview) before and after, the pods of
   each job compared pod by pod and its run policy field by field (kdt.operators.framework.migrate.compare; each kind says how it
   speaks of its pods: the `migration_side` hook), every difference explained by a row of the table of
   equivalences (kdt.operators.migration) or left unexplained; and the output validated and linted for the
   Trainer release it is written for.

    results = migrate_targets(targets, "2.3", runtimes=[...], output=Path("migrated"))
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import kinds as K
from . import targets as T
from .documents import Document, _chunks
from .errors import MALFORMED, UsageError
from .expand.model import Limit, Loader
from .findings import ERROR, WARNING, Finding
from .merge_preview import expand_documents
from .migrate import chart as MC
from .operators.framework.migrate.compare import Claim, Difference, compare
from .operators.framework.migrate.patch import PatchError, apply, dump, normalize_comments, patch_text
from .operators.framework.migrate.plan import Plan
from .operators.trainer_v2 import shapes as SH
from .paths import display
from .render import helm_lint, render

RULE = "migrate"
LABELS = {s.key: s.label for s in SH.SHAPES}   # "2.3" -> "2.2+" (kdt.operators.trainer_v2.shapes)
# The proof builds every pod of a job up to this many per group (a replica type, a Job); past it, the merge
# preview's first and last ones (kdt.expand.model.Limit) and the proof compares those built on both sides.
PROOF_PODS = 4096


@dataclass
class JobProof:
    """One migrated job: what it was, what it became, on which runtime, and every difference the proof found."""
    before: str                        # "PyTorchJob/mnist-ddp"
    after: str                         # "TrainJob/mnist-ddp"
    runtime: str
    done: list[tuple[str, str]]
    differences: list[Difference] = field(default_factory=list)
    pods: int = 0                      # pods compared, before and after paired
    partial: bool = False              # past PROOF_PODS: the pods the preview built on both sides

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if not d.explained]


@dataclass
class Result:
    """One target's migration."""
    name: str
    version: str                       # "2.1" or "2.3" (written as 2.2+)
    jobs: list[JobProof] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)    # what changes for the jobs; what went wrong
    checks: list[Finding] = field(default_factory=list)      # validate and lint of the migrated output
    files: dict[str, str] = field(default_factory=dict)      # output path (below the output folder) -> text
    nothing: str = ""                  # why nothing was migrated
    others: list[tuple[str, list]] = field(default_factory=list)   # objects with no pods of their own (a runtime)
    failed: bool = False               # the input or the migrated output could not be rendered: nothing written

    @property
    def unexplained(self) -> int:
        return sum(len(j.unexplained) for j in self.jobs)


def release(version: str) -> str:
    """The shape a Trainer release is written in, by the release it is checked as: "2.1", or "2.3" for 2.2 and later."""
    return SH.checked_as(version)


def _rel(path: Path) -> Path:
    """Where a target's output goes below the output folder: its path in the repository (outside it, the
    path without its leading `..` and `/`)."""
    shown = Path(display(path))
    parts = [p for p in shown.parts if p not in ("..", "/", ".")]
    return Path(*parts) if parts else Path(path.name)


# ------------------------------------------------------------------------------------------- plans
def _plans(docs: list[Document], version: str, runtimes: list[Document], manager: str, loader: Loader
           ) -> tuple[list[Plan], list[Finding]]:
    ctx = K.MigrateContext(docs, version, K.runtimes(docs) + list(runtimes), loader, manager)
    plans, findings = [], []
    for d in docs:
        k = K.of(d)
        if k is None or not isinstance(d.data, dict):
            continue
        try:
            p = k.migrate(d, ctx)
        except MALFORMED as exc:
            # fields of the wrong shape (a list where a mapping goes): the schema findings say where
            findings.append(d.finding(RULE, f"not migrated: the {d.kind} does not have the shape its operator reads "
                                            f"({type(exc).__name__}); see its schema findings", level=ERROR))
            continue
        if p is None:
            continue
        if d.prefix:
            findings.append(d.finding(RULE, "an object inside a List is not migrated: take it out of the List first",
                                      level=WARNING))
            continue
        plans.append(p)
    # other documents a move changes (their selectors of the job's pods), unless they move themselves
    own = {id(p.doc) for p in plans}
    for p in list(plans):
        p.extra = [c for c in p.extra if id(c.doc) not in own and not c.doc.prefix]
        own |= {id(c.doc) for c in p.extra}
        plans.extend(p.extra)
    return plans, findings


# ------------------------------------------------------------------------------------------- writers
def _file_text(path: Path, docs: list[Document], plans: list[Plan], loader: Loader) -> str:
    """A YAML file with its migrated documents in place and the runtimes they need before them."""
    text = path.read_text() if str(path) != "-" else "".join(d.text for d in docs)
    by_index = {p.doc.index: p for p in plans if p.ops or p.added}
    chunks = _chunks(text)
    out = [text[:text.find(chunks[0][0])]] if chunks and chunks[0][0] else []   # comments before the first ---
    for index, (part, _) in enumerate(chunks):
        p = by_index.get(index)
        if p is None:
            out.append(part if part.endswith("\n") or not part else part + "\n")
            continue
        pieces = [dump(obj) for obj in p.added] + [dump(apply(p.ops, normalize_comments(loader(p.doc))))]
        out.append(("---\n" if part.startswith("---") or any(out) else "") + "---\n".join(pieces))
    return "".join(out)


def _kustomization(target: T.Target, final_dir: Path, plans: list[Plan], version: str) -> dict[str, str]:
    """An overlay beside the original: the original as its resource, each plan a JSON6902 patch, each generated
    runtime a resource of its own."""
    files: dict[str, str] = {}
    resources = [os.path.relpath(target.path.resolve(), final_dir.resolve())]
    patches = []
    for p in plans:
        for obj in p.added:
            name = f"{obj['metadata']['name']}-runtime.yaml"
            files[name] = dump(obj)
            resources.append(name)
        if not p.ops:
            continue
        d = p.doc
        fname = f"{d.name}-{d.kind.lower()}-to-trainer-{LABELS[version].replace('+', '')}.yaml"
        files[fname] = patch_text(p.ops)
        tgt = {"group": d.group, "version": d.api_version.rpartition("/")[2], "kind": d.kind, "name": d.name}
        if d.namespace:
            tgt["namespace"] = d.namespace
        patches.append({"target": tgt, "path": fname})
    head = (f"# kdt:trainer-version={version}  (read by validate, lint and merge preview; a comment, so it never "
            f"reaches the cluster)\n"
            f"# {target.name} migrated to Kubeflow Trainer {LABELS[version]} by `kdt migrate` (docs/migration.md): the "
            f"original overlay as it is,\n# each migrated object patched (JSON6902: what moves where, row by row), "
            f"the runtimes it needs beside it.\n")
    body = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources}
    if patches:
        body["patches"] = patches
    files["kustomization.yaml"] = head + dump(body)
    return files


# ------------------------------------------------------------------------------------------- the proof
def _sides(plan: Plan, before: list, bdocs: list, after: list, adocs: list) -> tuple | None:
    after_doc = next((d for d in adocs if d.key() == plan.after_key), None)
    if after_doc is None:
        return None
    bk, ak = K.of(plan.doc), K.of(after_doc)
    bs = bk.migration_side(plan.doc, [e for e in before if e.source is plan.doc], bdocs) if bk else None
    as_ = ak.migration_side(after_doc, [e for e in after if e.source is after_doc], adocs) if ak else None
    return bs, as_, after_doc


def _prove(plans: list[Plan], bdocs: list[Document], adocs: list[Document], version: str, options: dict,
           extra_claims: list[Claim] = (), runtimes: list[Document] = ()) -> tuple[list[JobProof], list[Finding]]:
    # a runtime given to the migration is the cluster's: there before and after
    bdocs = bdocs + [r for r in runtimes if r not in bdocs]
    adocs = adocs + [r for r in runtimes if r not in adocs]
    options = {**options, "limit": Limit(whole=PROOF_PODS)}
    before, bf = expand_documents(bdocs, options=options)
    after, af = expand_documents(adocs, trainer_version=version, options=options)
    findings = [f for f in af if f not in bf]
    claims = [c for p in plans for c in p.claims] + list(extra_claims)
    proofs = []
    for p in plans:
        if not p.compare or not p.ops:
            continue
        sides = _sides(p, before, bdocs, after, adocs)
        job = JobProof(f"{p.doc.kind}/{p.doc.name}", "", p.runtime, p.done)
        proofs.append(job)
        if sides is None or sides[0] is None or sides[1] is None:
            job.differences.append(Difference("job", ("job",), p.doc.name, "(not in the migrated output)"))
            continue
        bs, as_, adoc = sides
        job.after = f"{adoc.kind}/{adoc.name}"
        if not bs.pods or not as_.pods:
            job.differences.append(Difference("job", ("pods",), len(bs.pods), len(as_.pods)))
        partial = any(e.facts.get("elided") for e in (*before, *after) if e.source in (p.doc, adoc))
        diffs, job.pods = compare(bs, as_, claims, p.by, partial)
        job.partial = partial
        job.differences.extend(diffs)
        job.differences.extend(_companion_selections(p, bs, as_, adocs))
    return proofs, findings


def _companion_selections(p: Plan, before, after, adocs: list[Document]) -> list[Difference]:
    """The selectors other objects hold on the job's pods select the same pods after (row selectors): those the
    move rewrote, and those left as written that select some of the job's pods before or after."""
    from .operators.framework.migrate.compare import selected_nodes
    from .operators.framework.migrate.patch import get
    out = []
    for c in p.extra:
        adoc = next((d for d in adocs if d.key() == c.after_key), None)
        for path, rewritten in [(x, True) for x in c.selectors] + [(x, False) for x in c.watch]:
            where = f"{c.doc.kind}/{c.doc.name}"
            try:
                bsel, asel = get(c.doc.data, path), get(adoc.data, path) if adoc is not None else None
            except PatchError:
                bsel, asel = get(c.doc.data, path), None
            b, a = selected_nodes(bsel, before), selected_nodes(asel, after) if asel is not None else []
            if rewritten or b or a:
                out.append(Difference(where, ("selects",) + tuple(path), b, a, "selectors" if b == a else None))
    return out


def _checks(target: T.Target, docs: list[Document], version: str, cluster, runtimes: list[Document] = ()
            ) -> list[Finding]:
    """The migrated output validated and linted for the release it is written for (as `kdt preview` does); the
    runtimes given to the migration are the cluster's, so references to them resolve."""
    from .lint import config as lint_config
    from .lint import lint_target
    from .validate import validate_documents
    out = list(helm_lint(target))
    out += validate_documents(docs, trainer_version=version)
    out += lint_target(target, docs, trainer_version=version, config=lint_config.load(None), cluster=cluster,
                       run_docs=docs + [r for r in runtimes if r not in docs])
    return out


# ------------------------------------------------------------------------------------------- targets
def _unrendered(res: Result, fs: list[Finding]) -> None:
    """A migrated output that kustomize or helm refuses: the migration's error (exit 1), with their message."""
    res.failed = True
    res.findings += [Finding(ERROR, RULE, f"the migrated output does not render: {f.message}", res.name,
                             target=res.name) for f in fs if f.rule in ("render", "input", "yaml")]


def _migrate_files(tlist: list[T.Target], version: str, runtimes, manager, root: Path, cluster) -> Result:
    name = tlist[0].name if len(tlist) == 1 else f"{len(tlist)} files"
    res = Result(name, version)
    rendered = [render(t) for t in tlist]
    docs = [d for r in rendered for d in r.documents]
    res.findings += [f for r in rendered for f in r.findings]
    if any(not r.ok for r in rendered):
        res.failed = True
        return res
    loader = Loader(roundtrip=True)
    plans, fs = _plans(docs, version, runtimes, manager, loader)
    res.findings += fs + [f for p in plans for f in p.findings]
    if not any(p.ops for p in plans):
        res.nothing = _nothing(docs, version)
        return res
    after_targets = []
    for t, r in zip(tlist, rendered):
        mine = [p for p in plans if p.doc in r.documents]
        rel = _rel(t.path) if str(t.path) != "-" else Path("stdin.yaml")
        try:
            text = _file_text(t.path, r.documents, mine, loader) if mine else (
                t.path.read_text() if str(t.path) != "-" else "".join(d.text for d in r.documents))
        except PatchError as exc:
            # the file's own YAML reads otherwise than the rendered object (a key YAML 1.1 and 1.2 read apart)
            res.findings.append(Finding(ERROR, RULE, f"not migrated: the patch does not apply to the file as it is "
                                                     f"written ({exc})", t.name, target=""))
            res.failed = True
            return res
        out = _write(res, root, rel, text)
        if not mine:
            res.files.pop(str(rel))       # written for the proof only: the input as it is
        after_targets.append(T.Target(display(out), T.FILE, out))
    after = [render(t) for t in after_targets]
    adocs = [d for r in after for d in r.documents]
    bad = [f for r in after for f in r.findings if f.rule in ("render", "input", "yaml")]
    if bad:
        _unrendered(res, bad)
        return res
    res.jobs, efs = _prove(plans, docs, adocs, version, cluster.options, runtimes=runtimes)
    res.others = _others(plans)
    res.findings += efs
    res.checks += _checks(after_targets[0], adocs, version, cluster, runtimes)
    return res


def _migrate_overlay(t: T.Target, version: str, runtimes, manager, root: Path, final_root: Path, cluster) -> Result:
    res = Result(t.name, version)
    r = _input(res, t)
    if r is None:
        return res
    plans, fs = _plans(r.documents, version, runtimes, manager, Loader(roundtrip=True))
    res.findings += fs + [f for p in plans for f in p.findings]
    if not any(p.ops for p in plans):
        res.nothing = _nothing(r.documents, version)
        return res
    rel = _rel(t.path)
    out = root / rel
    for fname, text in _kustomization(t, final_root / rel, plans, version).items():
        _write(res, root, rel / fname, text)
    return _proved(res, plans, r.documents, T.Target(display(out), T.KUSTOMIZE, out), version, cluster, runtimes)


def _input(res: Result, t: T.Target):
    """The input's render, or None (its findings in `res`) when it cannot be read or rendered."""
    r = render(t)
    res.findings += r.findings
    res.failed = not r.ok
    return r if r.ok else None


def _write(res: Result, root: Path, rel: Path, text: str) -> Path:
    """A migrated file, written in the stage folder (and remembered for the output folder)."""
    out = root / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    res.files[str(rel)] = text
    return out


def _proved(res: Result, plans: list[Plan], bdocs: list[Document], at: T.Target, version: str, cluster,
            runtimes, claims: list[Claim] = ()) -> Result:
    """The migrated target rendered, proved against the input, validated and linted."""
    ar = render(at)
    if not ar.ok:
        _unrendered(res, ar.findings)
        return res
    res.jobs, efs = _prove(plans, bdocs, ar.documents, version, cluster.options, claims, runtimes)
    res.others = _others(plans)
    res.findings += efs
    res.checks += _checks(at, ar.documents, version, cluster, runtimes)
    return res


def _others(plans: list[Plan]) -> list[tuple[str, list]]:
    return [(f"{p.doc.kind}/{p.doc.name}", p.done) for p in plans if not p.compare and p.ops]


def _migrate_values(t: T.Target, version: str, runtimes, manager, root: Path, cluster) -> Result:
    res = Result(t.name, version)
    r = _input(res, t)
    if r is None:
        return res
    plans, fs = _plans(r.documents, version, runtimes, manager, Loader(roundtrip=False))
    jobs = [p for p in plans if p.compare and p.ops]
    first = jobs[0].doc if jobs else (r.documents[0] if r.documents else None)
    planned = MC.plan(t.path, t.chart, version, jobs, first) if first is not None else None
    if planned is None:
        res.nothing = _nothing(r.documents, version)
        return res
    ops, vfs, vclaims, done = planned
    res.findings += fs + [f for p in jobs for f in p.findings] + vfs
    chart_rows = {"pod-patch", "trainer-container", "python-unbuffered", "backoff-limit", "active-deadline",
                  "group-restarts", "shape-overrides", "shape-labels", "pod-index",
                  "replica-group-restarts"}   # what the chart does itself, or `done` says
    for p in jobs:
        p.done = list(done) + [(row, text) for row, text in p.done if row not in chart_rows]
    out = _write(res, root, _rel(t.path), MC.values_text(t.path, ops, version))
    at = T.Target(display(out), T.HELM, out, t.chart)
    _proved(res, jobs, r.documents, at, version, cluster, runtimes, vclaims)
    chart_runtimes = [f"{d.kind}/{d.name} (the chart's)" for d in K.runtimes(render(at).documents)]   # render: cached
    for j in res.jobs:
        j.runtime = chart_runtimes[0] if chart_runtimes else j.runtime
    return res


def _nothing(docs: list[Document], version: str) -> str:
    kinds = sorted({d.kind for d in docs if K.of(d) is not None and K.of(d).role in (K.JOB, K.RUNTIME)})
    return (f"nothing to migrate to Trainer {LABELS[version]}: " + (", ".join(kinds) + " already in that shape, or not "
            "a Training Operator job" if kinds else "no training job"))


def _relocate(results: list[Result], stage: Path, final: Path | None) -> None:
    """Findings about the migrated output name the file it will be written to (or say it was not written)."""
    import dataclasses
    old = str(display(stage))
    new = str(display(final)) if final is not None else "<migrated, not written>"
    for r in results:
        r.checks = [dataclasses.replace(f, file=f.file.replace(old, new, 1)) if f.file.startswith(old) else f
                    for f in r.checks]
        r.findings = [dataclasses.replace(f, file=f.file.replace(old, new, 1)) if f.file.startswith(old) else f
                      for f in r.findings]


def migrate_targets(tlist: list[T.Target], version: str, runtimes: list[Document] = (), output: Path | None = None,
                    cluster=None, manager: str = "torch-k8s.io/kdt-migrate") -> list[Result]:
    """Every target migrated to the Trainer shape `version` ("2.1" or "2.3"), proved; written to `output` (whole
    or not at all) when given, else to a folder removed afterwards."""
    from .cluster_file import load
    cluster = cluster or load(None, None)
    version = release(version)
    parent = output.resolve().parent if output is not None else None
    if parent is not None and not parent.is_dir():
        raise UsageError(f"--output {output}: folder {parent} does not exist")
    stage = Path(tempfile.mkdtemp(prefix=".kdt-migrate-", dir=parent))
    final_root = output.resolve() if output is not None else stage
    results = []
    try:
        files = [t for t in tlist if t.kind == T.FILE]
        for t in tlist:
            if t.kind == T.KUSTOMIZE:
                results.append(_migrate_overlay(t, version, runtimes, manager, stage, final_root, cluster))
            elif t.kind == T.HELM:
                results.append(_migrate_values(t, version, runtimes, manager, stage, cluster))
        if files:
            results.append(_migrate_files(files, version, runtimes, manager, stage, cluster))
        if output is not None and not any(r.failed for r in results):     # whole or not at all
            for r in results:
                for rel, text in r.files.items():
                    dest = final_root / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    tmp = dest.with_name(f".{dest.name}.kdt-migrate")
                    tmp.write_text(text)
                    os.replace(tmp, dest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    _relocate(results, stage, final_root if output is not None else None)
    return results


def load_runtimes(paths: list[str]) -> list[Document]:
    """The runtimes of the files, folders, overlays and charts named by --runtime."""
    out: list[Document] = []
    for t in T.from_args(paths):
        r = render(t)
        if not r.ok:
            raise UsageError(f"--runtime {t.name}: " + "; ".join(f.message for f in r.findings if f.level == ERROR))
        out.extend(K.runtimes(r.documents))
    return out


__all__ = ["JobProof", "Result", "migrate_targets", "load_runtimes", "release"]

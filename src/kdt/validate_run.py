"""`kdt validate`'s run over its targets (the stage the command calls): everything renders first (in parallel)
while the files are looked through for CRDs and Trainer objects (every CRD of the run is a schema for all of it:
kdt.schemas.crds.RunCrds); each rendered target is validated whole, each file or standard input as a stream
(kdt.stream, a bounded window of documents at a time), each at the Trainer release decided for it
(kdt.trainer_release.decide)."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from . import findings as F
from . import kinds as K
from . import targets, trainer_release
from .documents import is_blank, load_stream
from .errors import UsageError
from .kubeyaml import APPLY, BOTH
from .paths import ROOT
from .render import built_documents, holds_nothing, nothing_to_apply, render_all
from .schemas.crds import RunCrds
from .stream import open_blocks, validate_stream
from .targets import FILE
from .validate import supersede, validate_documents


@dataclass
class Options:
    kubernetes_version: str
    trainer_version: str | None = None
    training_operator: str = ""
    ignore_missing_schemas: bool = False
    crds: tuple = ()
    jobs: int | None = None
    inventory: bool = False          # keep every document validated (junit's inventory)
    apply: str = "server-side"       # client-side | server-side: how the manifests are applied (kdt.validate)


@dataclass
class Run:
    findings: list = field(default_factory=list)
    documents: int = 0
    inventory: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    skipped: int = 0
    rendered: dict = field(default_factory=dict)     # id(target) -> its render result
    built: list = field(default_factory=list)         # the targets that were rendered


def validate_targets(tlist, o: Options) -> Run:
    """Every finding of the targets, with what the report says beside them."""
    run = Run()
    run.built = built = [t for t in tlist if t.kind != FILE]
    with ThreadPoolExecutor(max_workers=1) as background:     # the files are read while kubectl and helm run
        renders = background.submit(render_all, built, o.jobs)
        scanned = {id(t): _scan(t) for t in tlist if t.kind == FILE}
        if not o.trainer_version:
            trainer_release.repository_pin(ROOT)        # read now, while they run (cached for decide)
        run.rendered = rendered = {id(t): r for t, r in zip(built, renders.result())}
    run_docs = [d for r in rendered.values() for d in r.documents] + [d for docs in scanned.values() for d in docs]
    found = RunCrds(d for d in run_docs if K.CRD.matches(d)) or None
    decided: list = []
    empty: list = []           # files named that hold no object (kdt.render.nothing_to_apply)
    for t in tlist:
        if t.kind == FILE:
            decision = _validate_file(t, o, scanned[id(t)], found, run, empty)
            if decision is not None:
                decided.append((t.name, decision))
            continue
        r = rendered[id(t)]
        run.skipped += r.skipped
        decision = trainer_release.decide(t, r.documents, o.trainer_version, kubernetes_version=o.kubernetes_version,
                                          build=built_documents)
        schema = validate_documents(r.documents, kubernetes_version=o.kubernetes_version,
                                    trainer_version=decision.release, ignore_missing_schemas=o.ignore_missing_schemas,
                                    crds=o.crds, found=found, training_operator=o.training_operator, apply=o.apply)
        run.findings.extend(supersede(r.findings, schema) + schema)
        run.documents += len(r.documents)
        run.inventory.extend(r.documents)
        if trainer_release.has_trainer_objects(r.documents):
            decided.append((t.name, decision))
    run.findings.extend(nothing_to_apply(empty, run.documents))
    run.notes = trainer_release.notes(decided) + (found.note() if found is not None else [])
    return run


def _validate_file(t, o: Options, scanned: list, found, run: Run, empty: list):
    """A file or standard input, validated as a stream: a bounded window of documents at a time. Standard input is
    what `kubectl apply -f -` reads; a file may also be a kustomize resource. Its Trainer release decision when it
    holds Trainer objects (said in the output), else None."""
    problems: list[F.Finding] = []
    paths = (APPLY,) if str(t.path) == "-" else BOTH
    lines, size, head = open_blocks(str(t.path), t.name, problems, paths)
    decision = trainer_release.decide(t, scanned, o.trainer_version, head[:targets.MARKER_SPAN], o.kubernetes_version,
                                      build=built_documents)
    got = validate_stream(lines, t.name, o.kubernetes_version, decision.release, o.ignore_missing_schemas,
                          inventory=o.inventory, size_hint=size, crds=o.crds, found=found,
                          training_operator=o.training_operator, paths=paths, named=not t.in_folder, apply=o.apply)
    problems += got.findings
    if got.documents == 0 and not problems and str(t.path) == "-" and is_blank(head):
        # kubeconform: empty standard input fails; a blank file named passes with 0 resources.
        problems.append(F.Finding(F.ERROR, "input", "the input holds no Kubernetes object", t.name))
    if got.documents == 0 and got.skipped and not problems:
        run.skipped += 1       # a CI config, a values file... met walking a folder
    if holds_nothing(t, got.documents, problems, got.skipped):
        empty.append(t)
    run.findings.extend(problems)
    run.documents += got.documents
    run.inventory.extend(got.entries)
    return decision if trainer_release.has_trainer_objects(scanned) else None


def live_groups(tlist, run: Run) -> list:
    """(target, documents) of every target for `--live`: the rendered ones and the files (read whole)."""
    groups = [(t, run.rendered[id(t)].documents) for t in run.built if run.rendered[id(t)].ok]
    for t in tlist:
        if t.kind == FILE and str(t.path) != "-":
            try:
                docs, _ = load_stream(t.path.read_text(encoding="utf-8-sig"), t.name)
            except (OSError, UnicodeDecodeError, UsageError):
                continue            # its read error is already a finding
            groups.append((t, docs))
    return groups


SCAN_LIMIT = 4 << 20    # bytes: a larger file is streamed only (its CRDs and Trainer objects are not looked for)
_WORTH_READING = re.compile(rb"CustomResourceDefinition|trainer\.kubeflow\.org|jobset\.x-k8s\.io")


def _scan(t) -> list:
    """The documents of a file named or walked, when it holds a CRD or Trainer objects (read again as a
    stream afterwards); [] for standard input, a large file, or one that does not."""
    if str(t.path) == "-":
        return []
    try:
        if t.path.stat().st_size > SCAN_LIMIT:
            return []
        raw = t.path.read_bytes()
    except OSError:
        return []
    if not _WORTH_READING.search(raw):
        return []
    try:
        docs, _ = load_stream(raw.decode("utf-8-sig"), t.name)
    except (UnicodeDecodeError, UsageError):
        return []
    return docs

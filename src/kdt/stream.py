"""Validate a YAML file or standard input as a stream: a bounded window of documents at a time.

`kdt.documents.load_stream` holds a whole stream; a generated manifest bundle or
a `kubectl get -o yaml` dump can hold 100,000 documents. Here the stream is read
line by line, cut into documents at `---` lines, and validated a window of
WINDOW documents at a time, so peak memory stays flat however long the stream
is: only findings (and, for JUnit, one light record per document) are kept.

Large streams are validated by two processes (this machine has two cores; the
number follows os.cpu_count() up to MAX_JOBS): the reader hands windows to the
workers, at most two windows per worker in flight, and results come back in
order, so the report is the same as from one process.
"""
from __future__ import annotations

import os
from collections import namedtuple
from concurrent.futures import Future, ProcessPoolExecutor
from typing import IO, Iterator, NamedTuple

from . import kubeyaml as KY, versions
from .documents import _DIRECTIVE, bad_bytes_finding, doc_starts, is_blank, load_parts, with_markers
from .findings import ERROR, Finding
from .validate import supersede, validate_documents

WINDOW = 500             # documents per window
WARM_UP = 64             # documents validated here before the workers fork (they inherit its compiled schemas)
PARALLEL_FROM = 2 << 20  # bytes: smaller streams are validated in this process (a pool costs ~30 ms)
MAX_JOBS = 4

# What the JUnit report needs of a document once its data is gone.
Entry = namedtuple("Entry", "file index kind name target prefix")


def parts(blocks: Iterator[str]) -> Iterator[tuple[int, tuple[str, int]]]:
    """(index, (document text, line offset)) of each `---`-separated document, as documents.load_stream cuts them.

    `blocks`: the stream's text in pieces that each end at a line end (lines, or large blocks).
    """
    carry: list[str] = []      # the current document's text so far
    start = 0                  # its first line
    line_no = 0                # lines before the current block
    index = 0
    first = True

    def emit(text: str, at: int):
        nonlocal index, first
        # The text before the first `---` that holds only comments is no document of its own.
        if first and is_blank(text) and not _DIRECTIVE.search(text):
            first = False
            return None
        first = False
        out = (index, (text, at))
        index += 1
        return out

    for block in blocks:
        pos = 0
        at = line_no                           # line number of block[pos]
        for s in doc_starts(block):
            if s == 0 and line_no == 0 and not carry:
                continue                       # the stream starts with a marker
            item = emit("".join(carry) + block[pos:s], start)
            if item:
                yield item
            carry = []
            at += block.count("\n", pos, s)
            start = at
            pos = s
        carry.append(block[pos:])
        line_no += block.count("\n")
    text = "".join(carry)
    if text or first:
        if first:
            yield index, (text, start)         # a single document (or an empty stream) is kept as it is
        else:
            item = emit(text, start)
            if item:
                yield item


BLOCK = 1 << 20


def decoded_blocks(fh: IO[bytes], name: str, problems: list[Finding], paths: tuple = KY.BOTH) -> Iterator[str]:
    """The stream as text in blocks that end at a line end, decoded as `kubectl apply -f` decodes it
    (kdt.kubeyaml.decode: BOMs, U+FFFD for a byte that is not UTF-8, reported once, located)."""
    rest = b""
    line_no = 0
    first = True
    reported = False
    while True:
        chunk = fh.read(BLOCK)
        data = rest + chunk
        if first and data.startswith((b"\xff\xfe", b"\xfe\xff")):
            text, _ = KY.decode(data + fh.read())      # UTF-16: the whole stream, transcoded
            if text:
                yield text
            return
        if not chunk:
            rest = b""
        else:
            cut = data.rfind(b"\n") + 1
            data, rest = data[:cut], data[cut:]
        if first and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        if data:
            first = False
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text, bad = KY.decode(data)
            if bad is not None and not reported:
                bad.line += line_no
                problems.append(bad_bytes_finding(bad, name, paths))
                reported = True
        line_no += text.count("\n")
        if text:
            yield text
        if not chunk:
            return


def _window(args) -> tuple[list[Finding], int, list[Entry], int]:
    window, file, k8s, trainer, ignore_missing, inventory, crds, run_crds, training_operator, paths, named, apply = args
    read = load_parts(window, file, paths=paths, named=named)
    docs = read.documents
    schema = validate_documents(docs, kubernetes_version=k8s, trainer_version=trainer,
                                ignore_missing_schemas=ignore_missing, crds=crds, found=run_crds,
                                training_operator=training_operator, apply=apply)
    found = supersede(read.findings, schema) + schema
    entries = [Entry(d.file, d.index, d.kind, d.name, d.target, d.prefix) for d in docs] if inventory else []
    return found, len(docs), entries, read.skipped


def _windows(blocks: Iterator[str], first: int = WINDOW) -> Iterator[list]:
    window: list = []
    size = first
    for item in with_markers(parts(blocks)):      # kubectl's buffer runs across windows
        window.append(item)
        if len(window) >= size:
            yield window
            window = []
            size = WINDOW
    if window:
        yield window


class Validated(NamedTuple):
    findings: list[Finding]
    documents: int            # objects validated
    entries: list[Entry]      # inventory=True: a light record of each
    skipped: int              # documents that are no Kubernetes object (named=False)


def validate_stream(lines: Iterator[str], file: str, kubernetes_version: str, trainer_version: str,
                    ignore_missing_schemas: bool = False, inventory: bool = False,
                    size_hint: int = 0, crds: tuple[str, ...] = (), found=None,
                    training_operator: str = versions.TRAINING_OPERATOR_DEFAULT, paths: tuple = KY.BOTH,
                    named: bool | None = True, apply: str = "server-side") -> Validated:
    """Every finding of a stream, the number of objects, a record of each (inventory) and the skipped count.

    `found`: the CRDs of the run (kdt.schemas.crds.RunCrds; a forked worker finds it by its number);
    paths and named: as kdt.documents.load_stream takes them; apply: as kdt.validate.validate_documents takes it."""
    out = Validated([], 0, [], 0)
    totals = [0, 0]

    def take(result) -> None:
        f, n, e, skipped = result
        out.findings.extend(f)
        out.entries.extend(e)
        totals[0] += n
        totals[1] += skipped

    jobs = min(os.cpu_count() or 1, MAX_JOBS)
    opts = (file, kubernetes_version, trainer_version, ignore_missing_schemas, inventory, tuple(crds), found,
            training_operator, paths, named, apply)
    if jobs < 2 or size_hint < PARALLEL_FROM:
        for window in _windows(lines):
            take(_window((window, *opts)))
        return out._replace(documents=totals[0], skipped=totals[1])
    import multiprocessing
    windows = _windows(lines, first=WARM_UP)
    # A first small window in this process: the schemas it compiles are inherited by the forked workers.
    for window in windows:
        take(_window((window, *opts)))
        break
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        pending: list[Future] = []

        def drain(limit: int) -> None:
            while len(pending) > limit:
                take(pending.pop(0).result())

        for window in windows:
            pending.append(pool.submit(_window, (window, *opts)))
            drain(2 * jobs)
        drain(0)
    return out._replace(documents=totals[0], skipped=totals[1])


def open_blocks(path: str, name: str, problems: list[Finding],
                paths: tuple = KY.BOTH) -> tuple[Iterator[str], int, str]:
    """(text blocks, size in bytes, head text for the Trainer marker) of a file or `-`; a file that cannot be
    read is an `input` finding of its own (exit 2), so that the other files are still judged."""
    import sys
    if path == "-":
        fh = sys.stdin.buffer
        size = 0
    else:
        try:
            fh = open(path, "rb")   # closed when the process ends: one per file named
            size = os.fstat(fh.fileno()).st_size
        except FileNotFoundError:
            problems.append(Finding(ERROR, "input", "no such file or folder", name))
            return iter(()), 0, ""
        except IsADirectoryError:
            problems.append(Finding(ERROR, "input", "is a folder", name))
            return iter(()), 0, ""
        except OSError as exc:
            problems.append(Finding(ERROR, "input", f"cannot read: {exc.strerror}", name))
            return iter(()), 0, ""
    blocks = decoded_blocks(fh, name, problems, paths)
    first = next(blocks, "")
    import itertools
    return itertools.chain([first] if first else [], blocks), size, first[:8192]

"""Read YAML streams as kubectl does, once, keeping what is needed to locate every node.

A file reaches the API server by one of two readers that do not read YAML alike, `kubectl apply -f`
(YAML 1.1) and `kubectl kustomize` (YAML 1.2 scalars, stricter about keys): `kdt.kubeyaml` holds their
facts and the exact reader. A document both refuse is an error; one that one of them refuses is an error
naming it; where both read it but differently (`team: yes`, a boolean to one, a string to the other), the
data is what `kubectl apply -f` reads, the other reading is kept (`Document.kustomize`) for validate to
judge, and the difference is a warning. Rendered output (kustomize's, helm's) is read as `kubectl apply`
reads it only. Every problem is located to line and column.

Three tiers, because the exact reader costs and line numbers are needed only where something is wrong:
- fast: a document with nothing the two libraries read differently from yaml-rs (no YAML 1.1 boolean,
  no number or date yaml-rs and go-yaml spell apart, no anchor, tag, merge key, tab, odd key; the
  pattern `_EXACT` below) goes through yaml-rs (compiled, ~20,000 documents/s), which also refuses
  duplicate keys;
- exact: every other document, and every one yaml-rs refuses, goes through `kdt.kubeyaml.read`
  (libyaml's events, go-yaml's resolver, merge keys, anchors and limits);
- positions: PyYAML's libyaml composer builds a document's node tree the first time a finding asks
  where a path is (`Document.locate`), from that document's own slice of the stream.
Before either, the stream is cut as kubectl cuts it (a line starting with `---` ends a document; after
`...` nothing is read up to the next `---`; a JSON stream is split into its objects), and bytes and
sizes are bounded: control characters, documents past kdt's size and depth limits and alias bombs are
located errors, never a hang or a traceback.

Timestamps stay strings, as JSON carries them (go-yaml's time.Time, written RFC 3339).
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any, Iterable, Sequence

import yaml
import yaml_rs
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from . import kubeyaml as KY
from .errors import UsageError
from .findings import ERROR, WARNING, Finding, format_path
from .kubeyaml import APPLY, BOTH, KUSTOMIZE, key_string  # noqa: F401  (key_string: re-exported)
from .paths import display

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
try:
    from yaml._yaml import CParser as _CParser           # libyaml's parser alone
except ImportError:                                      # PyYAML without libyaml: its pure-Python loader
    _CParser = _Loader


@dataclass
class Document:
    """One YAML document of a stream."""

    data: Any
    index: int                     # index in the stream, 0-based, empty documents counted
    file: str                      # the stream's display name
    text: str = ""                 # this document's slice of the stream
    line_offset: int = 0           # lines of the stream before `text`
    target: str = ""               # the overlay / chart values file it was rendered from
    source: str = ""               # the source file of the resource, when known
    meta: dict = field(default_factory=dict)
    prefix: tuple = ()             # path of this object inside the document (`items[3]` of a List)
    _node: Any = field(default=None, repr=False, compare=False)
    # The object as `kubectl kustomize` reads it, where that differs from `data` (what `kubectl apply -f`
    # reads: `yes` is a boolean there, a string here); None where the two agree.
    kustomize: Any = field(default=None, repr=False, compare=False)

    @property
    def node(self) -> Any:
        """The libyaml node tree of this document, composed on first use."""
        if self._node is None:
            self._node = _compose_one(self.text)
        return self._node

    @property
    def line(self) -> int:
        return self.locate(())[0]

    # Identity fields are strings whatever the document holds (`kind:` left empty, `apiVersion: 5`):
    # every stage compares them, and a wrong type is validate's finding, never a crash. They are read from
    # `data` each time it is set (here, not in a property): every lint rule asks every document for them, a
    # property read cost a stream of 50,000 documents seconds. A document's identity is not edited in place
    # (an expansion or migration makes new objects); `data` is replaced whole.
    kind: str = field(default="", init=False, repr=False, compare=False)
    api_version: str = field(default="", init=False, repr=False, compare=False)
    group: str = field(default="", init=False, repr=False, compare=False)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name == "data":
            kind = value.get("kind") if isinstance(value, dict) else None
            av = value.get("apiVersion") if isinstance(value, dict) else None
            av = av if isinstance(av, str) else ""
            object.__setattr__(self, "kind", kind if isinstance(kind, str) else "")
            object.__setattr__(self, "api_version", av)
            object.__setattr__(self, "group", av.split("/")[0] if "/" in av else "")

    @property
    def name(self) -> str:
        meta = self.data.get("metadata") if isinstance(self.data, dict) else None
        v = meta.get("name") if isinstance(meta, dict) else None
        return "" if v is None or isinstance(v, (dict, list)) else str(v)

    @property
    def namespace(self) -> str:
        meta = self.data.get("metadata") if isinstance(self.data, dict) else None
        v = meta.get("namespace") if isinstance(meta, dict) else None
        return "" if v is None or isinstance(v, (dict, list)) else str(v)

    def key(self) -> tuple:
        """Identity of the resource: (group, kind, namespace, name)."""
        return (self.group, self.kind, self.namespace, self.name)

    def node_at(self, path: Sequence[Any]) -> Any:
        """The node at `path` (relative to this object), or None."""
        node = self.node
        for part in (*self.prefix, *path):
            child = None
            if isinstance(node, MappingNode):
                child = next((v for k, v in node.value if isinstance(k, ScalarNode) and k.value == str(part)), None)
            elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                child = node.value[part]
            if child is None:
                return None
            node = child
        return node

    def key_position(self, path: Sequence[Any], key: Any) -> tuple[int, int] | None:
        """(line, col) of the key `key` of the mapping at `path` (an unknown field is its key)."""
        node = self.node_at(path)
        if isinstance(node, MappingNode):
            for k, _ in node.value:
                if isinstance(k, ScalarNode) and k.value == str(key):
                    return self.line_offset + k.start_mark.line + 1, k.start_mark.column + 1
        return None

    def locate(self, path: Sequence[Any]) -> tuple[int, int, bool]:
        """(line, col, exact) of the node at `path`; the deepest existing ancestor when it is absent."""
        node = self.node
        if node is None:
            return self.line_offset + 1, 1, False
        exact = True
        for part in (*self.prefix, *path):
            child = None
            if isinstance(node, MappingNode):
                for k, v in node.value:
                    if isinstance(k, ScalarNode) and k.value == str(part):
                        child = v
                        break
            elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                child = node.value[part]
            if child is None:
                exact = False
                break
            node = child
        return self.line_offset + node.start_mark.line + 1, node.start_mark.column + 1, exact

    def get(self, path: Sequence[Any], default: Any = None) -> Any:
        cur = self.data
        for part in path:
            if isinstance(part, int) and isinstance(cur, list) and -len(cur) <= part < len(cur):
                cur = cur[part]
            elif isinstance(cur, dict) and part in cur:
                cur = cur[part]
            else:
                return default
        return cur

    def finding(self, rule: str, message: str, path: Sequence[Any] = (), level: str = ERROR, **extra) -> Finding:
        """A finding located at `path` in this document."""
        line, col, _ = self.locate(path)
        return Finding(level=level, rule=rule, message=message, file=self.file, doc=self.index,
                       line=line, col=col, path=format_path((*self.prefix, *path)), kind=self.kind, name=self.name,
                       target=self.target, source=self.source, extra=extra)


def _compose_one(text: str) -> Any:
    loader = _Loader(text)
    try:
        return loader.get_single_node()
    except yaml.YAMLError:
        return None
    except RecursionError:
        return None
    finally:
        loader.dispose()


# --- cutting a stream into documents ------------------------------------------------------------------
# apimachinery pkg/util/yaml/decoder.go YAMLReader.Read: a line that starts with `---` ends a document;
# anything after it but spaces and a comment is an error ("invalid Yaml document separator"). kyaml's
# splitDocuments (kio/byteio_reader.go) cuts and refuses alike.
_MARKER = re.compile(r"\n---")           # a literal first: `re` scans for it in C


def doc_starts(text: str) -> list[int]:
    """Where each line that starts with `---` starts."""
    return ([0] if text.startswith("---") else []) + [m.start() + 1 for m in _MARKER.finditer(text)]


# go-yaml reads one document per piece (yaml.Unmarshal): after a `...` line, nothing up to the next `---`.
_DOC_END = re.compile(r"^\.\.\.[ \t]*(?:#.*)?$", re.MULTILINE)
_DIRECTIVE = re.compile(r"^%", re.MULTILINE)


def _chunks(text: str) -> list[tuple[str, int]]:
    """(document text, line offset) for each `---`-separated part of a stream."""
    starts = doc_starts(text)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    out = []
    line = 0
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else len(text)
        part = text[s:e]
        out.append((part, line))
        line += part.count("\n")
    # The text before the first `---` holds only comments when the stream starts with a marker after them:
    # it is no document of its own (a directive there is: kubectl refuses it alone, see _read_part).
    if len(out) > 1 and is_blank(out[0][0]) and not _DIRECTIVE.search(out[0][0]):
        out.pop(0)
    return out


# apimachinery's YAMLReader.Read (decoder.go) writes a `---` line into the document it starts only when nothing
# is buffered yet (the stream's first line, or the line after a `---` that ended a document): a `---` that ends
# a document is dropped, so the next piece reaches go-yaml as an implicit document, where a `...` with nothing
# before it is refused ("did not find expected node content"; kyaml's splitDocuments cuts alike). A part's
# marker is kubectl's to keep when the buffer was empty before it: `marker_kept`, then `empty_after`.
def marker_kept(part: str, empty_before: bool) -> bool:
    """Whether kubectl's reader keeps the `---` line that opens `part` (False when `part` opens with none)."""
    return empty_before and part.startswith("---")


def empty_after(part: str, empty_before: bool) -> bool:
    """Whether kubectl's buffer is empty after `part`: only after a dropped marker alone on its line."""
    if not part.startswith("---") or empty_before:
        return False
    nl = part.find("\n")
    return nl < 0 or nl == len(part) - 1


def with_markers(parts, empty_before: bool | None = None):
    """(index, (part, offset), kept) for (index, (part, offset)) of a stream: `empty_before` is kubectl's buffer
    before the first part (None: empty where the first part opens the stream at line 0, as a first window does)."""
    for index, (part, offset) in parts:
        if empty_before is None:
            empty_before = index == 0 and offset == 0
        yield index, (part, offset), marker_kept(part, empty_before)
        empty_before = empty_after(part, empty_before)


_ORPHAN_END = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)*(\.\.\.)(?:[ \t]|\n|\Z)")


# A line with content: not blank, not a comment or directive, not a `---` or `...` marker line.
_CONTENT = re.compile(r"^(?!(?:---|\.\.\.)(?:[ \t]|$))[ \t]*[^\s#%]", re.MULTILINE)


def is_blank(part: str) -> bool:
    """Only blank lines, comments, directives and `---`/`...` marker lines: no content."""
    return _CONTENT.search(part) is None


# --- which documents the exact reader reads -------------------------------------------------------------
# yaml-rs reads YAML 1.2 core scalars, has no merge keys and no limit on block nesting: a document with
# anything it may read otherwise than kubectl goes to kdt.kubeyaml. Over-matching costs only time;
# tests/reader/test_fast_path.py reads shipped, generated and mutated documents both ways and compares.
_TE = r"(?=[ \t]*(?:$|#|,|\]|\}|:(?:[ \t]|$)))"         # where a plain scalar ends
_KEY = r"[ \t]*:(?:[ \t]|$)"                                # ... as a mapping key
# Tokens: one pass of a pattern whose first character is a class (so that `re` skips to candidates in
# C), then a check that the candidate starts a token (a line start, a space or a flow indicator before
# it), then what follows.
_EXACT = re.compile(
    r"[yYnNoOtTfF~0-9+._&*!?<-](?<![^\s\[{,].)(?:" + "|".join((
        r"(?<=[yYnNoO])(?:|[eE][sS]|[oO]|[nN]|[fF][fF])" + _TE,    # a YAML 1.1 boolean: yes no on off y n
        r"(?<=[tTfFnN~])(?:rue|RUE|alse|ALSE|ull|ULL|)" + _KEY,     # a boolean or null as a key
        r"(?<=\+)[0-9._]|(?<=\.)[0-9]|(?<=_)[0-9._]",                # +5 +.5 .5, and _1 (yaml-rs reads 1)
        r"(?<=\.)(?:inf|Inf|INF|nan|NaN|NAN)" + _TE,
        r"(?<=-)[._+0]",                                           # -.5 -0x1F
        r"(?<=0)[0-9_xXoObB]",                                     # 0777 0x1F 0o7 0b1 0_1 (Go's base prefixes)
        r"(?<=[0-9-])[0-9.]*[eE][-+0-9]",                          # 1e3, 80.7E1: floats, integral ones ints in JSON
        r"(?<=[0-9-])[0-9]*(?:_|\.[0-9]*0" + _TE + r"|\." + _TE + r")",  # 1_000, 30.0, 30.
        r"(?<=[0-9-])[0-9.]*" + _KEY,                              # a number as a key
        r"(?<=[0-9-])[0-9]{18}",                                   # past int64
        r"(?<=[0-9])[0-9a-zA-Z.:+-]*_",                            # Go drops underscores: 4._ is 4.
        r"(?<=[0-9])[0-9]{3}-[0-9]",                               # a date: go-yaml's time.Time
        r"(?<=[&*!])(?:\S|(?<=!)(?=\s))",                           # an anchor, an alias, a tag (yaml-rs takes
                                                                   # names libyaml refuses: `&@`)
        r"(?<=\?)(?:[ \t]|$)|(?<=[\[{,]\?)|(?<=[\[{,] \?)|(?<=[\[{,]  \?)",  # a complex key; `?x` in flow
        # a flow mapping's entry with no `:` whose key is no string (`{a: 1, 5}`, `{true}`)
        r"(?:(?<=[{,].)|(?<=[{,] .)|(?<=[{,]  .))(?:(?:(?<=[0-9])|(?<=[-+.])(?=[0-9.]))[^\s:,\]}]*|(?<=~)|(?<=[tT])(?:rue|RUE)"
        r"|(?<=[fF])(?:alse|ALSE)|(?<=[nN])(?:ull|ULL))[ \t]*[,}]",
        r"(?<=<)<",                                                # a merge key (`<<`, a key even without `:`)
    )) + ")", re.MULTILINE)
# Searched in "\n" + text: a flow collection as a key (a `{{ template }}`), a directive, an empty key,
# `@` or a backquote starting a line's token.
_EXACT_LINE = re.compile(r"\n[ \t]*+(?:-[ \t]++)*+(?:[\[{][^\n]*[\]}]" + _KEY + r"|%|:(?:[ \t]|$)|[@`])", re.MULTILINE)
# What yaml-rs reads and libyaml and go-yaml refuse outside flow collections (found by fuzzing shipped
# and public documents, tests/reader/test_fast_path.py): `@` or a backquote starting a token (after `: `,
# `- `, a flow indicator, or a line's indentation, above). (Inside
# flow collections there is more, `{a: |x}`, `[b:?]`: fast_read has libyaml check those documents.)
_LENIENT = re.compile(r"[@`](?:(?<=: .)|(?<=- .)|(?<=[\[{,].)|(?<=[\[{,] .))")
# Tabs; line breaks of YAML 1.1 only (NEL, LS, PS); a BOM inside; an escape libyaml knows and go-yaml not;
# a `{{ template }}` (a flow mapping as a key).
_EXACT_CHARS = ("\t", "\u0085", "\u2028", "\u2029", "\ufeff", "\\/", "{{")
# yaml-rs refuses flow collections nested past ~256 levels, reads block ones as deep as kdt's size limit
# allows (4,900 levels) but crashes on 100,000 `- ` on one line: a line of 64 of them goes to the exact
# reader, and fast_read measures the depth of a document indented 96 columns deep or with 64 flow
# collections (a large CRD, mostly) against kdt.kubeyaml.MAX_DEPTH.
_DEEP = re.compile(r"\n {96}")
_DEEP_DASHES = re.compile(r"(?:-[ \t]+){64}")


def _deeper_than(data: Any, limit: int) -> bool:
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return False


# A block scalar's header. yaml-rs reads otherwise one with an explicit indentation, an empty one (`k: |`
# and nothing more indented below: "\n", where libyaml and go-yaml read ""), and one that ends the
# document before blank lines.
_BLOCK_HEADER = re.compile(r"[|>][-+]?(?:[0-9]|[ \t]*(?:#[^\n]*)?\n)")
_EXPLICIT_INDENT = re.compile(r"[|>][-+]?[0-9]")
_TRAILING_BLANK = re.compile(r"\n[ \t]*\n\Z")
_EMPTY_BLOCK = re.compile(r"\n([ \t]*)[^\n]*[|>][-+]?[ \t]*(?:#[^\n]*)?\n(?:[ \t]*\n)*(?!\1[ \t])")


# The characters the rarer checks start from, with the control characters (kdt.kubeyaml.CONTROL): one
# pass over a document that has none of them (most have none) skips those checks.
_RARE = re.compile(r"[^\n\r\x20-\x3d\x3f-\x5b\x5d-\x7b\x7d\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd"
                   r"\U00010000-\U0010ffff]")


def fast_read(part: str) -> tuple[bool, Any]:
    """(True, data) of a document needs_exact passed, read by yaml-rs; (False, None) when the exact reader
    must read it (to say where it is wrong, or because kustomize reads it otherwise)."""
    try:
        data = yaml_rs.loads(part, parse_datetime=False)       # refuses flow nesting past ~256 levels
    except (yaml_rs.YAMLDecodeError, ValueError, TypeError, OverflowError, RecursionError):
        return False, None
    if (part.count("[") + part.count("{") >= 64 or _DEEP.search("\n" + part) is not None) \
            and _deeper_than(data, KY.MAX_DEPTH):
        return False, None            # the exact reader says where
    if "[" in part or "{" in part:
        # yaml-rs reads flow collections more leniently than libyaml and go-yaml (`{a: |x}`, `[b:?]`):
        # libyaml, in C, counting events without building them, says whether they are well formed.
        try:
            _CParser(part).raw_parse() if hasattr(_CParser, "raw_parse") else _Loader(part).get_single_node()
        except yaml.YAMLError:
            return False, None
    # kustomize writes annotations back as text: a value that is no string is read otherwise there
    meta = data.get("metadata") if isinstance(data, dict) else None
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    if isinstance(ann, dict) and not all(isinstance(v, str) for v in ann.values()):
        return False, None
    if isinstance(data, dict) and isinstance(data.get("items"), list) and any(
            isinstance(i, dict) and isinstance(i.get("metadata"), dict)
            and isinstance(i["metadata"].get("annotations"), dict)
            and not all(isinstance(v, str) for v in i["metadata"]["annotations"].values()) for i in data["items"]):
        return False, None
    return True, data


def needs_exact(part: str, rare: bool = True) -> bool:
    """Whether yaml-rs could read `part` otherwise than kubectl (then kdt.kubeyaml reads it); rare=False:
    `part` has none of the characters _RARE finds."""
    nl = "\n" + part
    if _EXACT.search(part) is not None or _EXACT_LINE.search(nl) is not None or _LENIENT.search(part) is not None:
        return True
    if "{{" in part or ("- - - -" in part and _DEEP_DASHES.search(part) is not None):
        return True
    if not rare or _RARE.search(part) is None:
        return False
    header = _BLOCK_HEADER.search(part)
    if header is not None and (_EXPLICIT_INDENT.search(part, header.start()) is not None
                               or _EMPTY_BLOCK.search(nl + "\n") is not None or _TRAILING_BLANK.search(part) is not None):
        return True
    return any(c in part for c in _EXACT_CHARS)


# --- keys ------------------------------------------------------------------------------------------------
def _string_keys(obj: Any, path: tuple, bad: list) -> Any:
    """`obj` with every mapping key a string, as kubectl reads it; refused keys go to `bad` as (path, key)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            ks = key_string(k)
            if ks is None:
                bad.append((path, k))
                continue
            out[ks] = _string_keys(v, path + (ks,), bad)
        return out
    if isinstance(obj, list):
        return [_string_keys(v, path + (i,), bad) for i, v in enumerate(obj)]
    return obj


def _describe_key(key: Any) -> str:
    if key is None:
        return "null"
    if isinstance(key, (frozenset, dict)):
        return "a mapping (a `{{ ... }}` template expression?)"
    if isinstance(key, (tuple, list)):
        return "a list"
    return type(key).__name__


def _bad_key_position(doc: "Document", path: tuple, key: Any) -> tuple[int, int]:
    """Line and column of a refused key: the first key of the mapping at `path` that is not a plain scalar."""
    node = doc.node_at(path)
    if isinstance(node, MappingNode):
        for k, _ in node.value:
            plain_null = isinstance(k, ScalarNode) and k.tag == "tag:yaml.org,2002:null"
            if not isinstance(k, ScalarNode) or (key is None and plain_null):
                return doc.line_offset + k.start_mark.line + 1, k.start_mark.column + 1
    line, col, _ = doc.locate(path)
    return line, col


def normalize_keys(doc: Document) -> list[Finding]:
    """Make every mapping key of `doc.data` the string kubectl reads; the keys kubectl refuses, as findings.

    Documents read by kdt.kubeyaml have string keys already; this serves data built elsewhere."""
    bad: list = []
    doc.data = _string_keys(doc.data, (), bad)
    out = []
    for path, key in bad:
        line, col = _bad_key_position(doc, path, key)
        out.append(Finding(level=ERROR, rule="yaml",
                           message=f"mapping key is {_describe_key(key)}: kubectl cannot read it "
                                   f"(a key must be a string, number or boolean)",
                           file=doc.file, doc=doc.index, line=line, col=col, path=format_path((*doc.prefix, *path)),
                           kind=doc.kind, name=doc.name, target=doc.target))
    return out


def is_list_kind(data: Any) -> bool:
    """`kind: List` and every `*List` kind with an `items` list: kubectl applies each item."""
    return (isinstance(data, dict) and isinstance(data.get("kind"), str) and data["kind"].endswith("List")
            and isinstance(data.get("items"), list))


def is_manifest(data: Any) -> bool:
    """A mapping with apiVersion or kind: meant as a Kubernetes object (a CI or values file is not)."""
    return isinstance(data, dict) and ("apiVersion" in data or "kind" in data)


# --- reading -----------------------------------------------------------------------------------------------
@dataclass
class Stream:
    """What reading a stream gave: its objects, the findings, and the documents that are no object."""

    documents: list[Document] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    skipped: int = 0          # non-empty documents that are no Kubernetes object (named=False)
    read: list[int] = field(default_factory=list)   # indexes of the documents that hold something, in order


def load_stream(text: str, file: str, target: str = "", paths: tuple = BOTH,
                named: bool | None = None) -> tuple[list[Document], list[Finding]]:
    """Every object of a YAML stream (the items of a List each), and the findings that reading produced.

    paths: the ways the text is applied (kdt.kubeyaml.BOTH for a file, (APPLY,) for rendered output).
    named: True for a file the user named (a document that is no object is an error, as kubectl says),
    False for a file met walking a folder (such documents are skipped and counted: read_stream), None for
    a library caller (mappings are returned whatever they hold). Every key is the string kubectl makes of
    it, or an error where kubectl refuses it."""
    s = read_stream(text, file, target, paths=paths, named=named)
    return s.documents, s.findings


def read_stream(text: str, file: str, target: str = "", paths: tuple = BOTH, named: bool | None = None) -> Stream:
    """load_stream, with the count of documents skipped as no Kubernetes object."""
    return load_parts(enumerate(_chunks(text)), file, target, paths=paths, named=named)


def load_parts(parts, file: str, target: str = "", paths: tuple = BOTH, named: bool | None = None) -> Stream:
    """read_stream over (index, (document text, line offset)) pairs, or the (index, (text, offset), kept) triples
    of `with_markers` over a longer stream (a window of it)."""
    out = Stream()
    parts = list(parts)
    if len(parts) == 1 and parts[0][1][0].lstrip()[:1] == "{":
        parts = _json_parts(parts[0][:2], file, target, paths, out.findings)
    if parts and len(parts[0]) == 2:
        parts = list(with_markers(parts))
    for index, (part, offset), kept in parts:
        if _load_one(part, offset, index, file, target, paths, named, out, kept):
            out.read.append(index)
    return out


def _finding(message: str, file: str, index: int, line: int | None, col: int | None = None, target: str = "",
             level: str = ERROR, path: tuple = (), refused_by: tuple = BOTH, kind: str = "", name: str = "") -> Finding:
    extra = {"refused_by": list(refused_by)} if refused_by and level == ERROR and refused_by != BOTH else {}
    return Finding(level=level, rule="yaml", message=message, file=file, doc=index, line=line, col=col,
                   path=format_path(path), kind=kind, name=name, target=target, extra=extra)


def _json_parts(part: tuple, file: str, target: str, paths: tuple, findings: list) -> list:
    """A JSON stream (apimachinery YAMLOrJSONDecoder: the first non-space byte is `{`): one part per object."""
    index, (text, offset) = part
    dec = json.JSONDecoder()
    pos, objects = 0, []
    try:
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            _, end = dec.raw_decode(text, pos)
            objects.append((pos, end))
            pos = end
    except ValueError:
        return [part]           # not a JSON stream after all: YAML, as kubectl falls back to
    if len(objects) < 2:
        return [part]
    out = []
    for i, (s, e) in enumerate(objects):
        line = offset + text.count("\n", 0, s)
        out.append((index + i, ("\n" * 0 + text[s:e], line)))
    if KUSTOMIZE in paths:
        s = objects[1][0]
        findings.append(_finding(f"kubectl kustomize reads only the first JSON object of a stream: the other "
                                 f"{len(objects) - 1} are dropped without a word (kyaml reads one document per "
                                 f"piece); separate them with ---", file, index + 1, offset + text.count("\n", 0, s) + 1,
                                 target=target, level=WARNING, refused_by=()))
    return out


@dataclass
class _Part:
    """One document read: its text as kubectl reads it, data, kustomize's reading, problems (line 0-based)."""

    text: str
    data: Any = None
    kustomize: Any = None
    ok: bool = True
    # (message, line, col, level, path, refused_by, doc delta): doc delta -1 is the document above
    problems: list = field(default_factory=list)


def _read_part(part: str, paths: tuple, kept: bool = True) -> _Part:
    """A document of a stream as kubectl reads it (every check but what depends on the document's use);
    kept: whether kubectl keeps the `---` line that opens it (`with_markers`)."""
    out = _Part(part)
    if len(part) > KY.MAX_DOCUMENT_CHARS:
        out.problems.append((f"a document of {len(part) / 2**20:.0f} MiB: kdt reads documents up to "
                             f"{KY.MAX_DOCUMENT_CHARS // 2**20} MiB (the API server takes an object of 3 MiB at most, "
                             f"k8s.io/apiserver MaxRequestBodyBytes)", 0, 0, ERROR, (), BOTH, 0))
        out.ok = False
        return out
    first_nl = part.find("\n")
    head = part if first_nl < 0 else part[:first_nl]
    if _orphan_end(part, head, first_nl, kept, out):
        return out
    if head.startswith("---"):
        rest = head[3:].strip()
        if rest and not rest.startswith("#"):
            # kubectl stops at this line before it hands over the document above it: the error is that one's.
            out.problems.append((f"invalid document separator `{head.strip()[:40]}` below this document: kubectl "
                                 f"refuses the file here (only a comment may follow --- on its line; "
                                 f"apimachinery YAMLReader, kyaml splitDocuments)", 0, 0, ERROR, (), BOTH, -1))
            part = part[first_nl:] if first_nl >= 0 else ""
        elif first_nl >= 0 and part.startswith("\ufeff", first_nl + 1):
            # A byte-order mark opening a document: go-yaml takes it for the encoding's (readerc.go), as kubectl
            # hands each document to go-yaml on its own.
            part = part[:first_nl + 1] + part[first_nl + 2:]
    if not part.endswith("\n"):
        part += "\n"          # apimachinery's LineReader ends every line with one, the last one too
    end = _DOC_END.search(part) if ("\n..." in part or part.startswith("...")) else None
    if end is not None:
        tail = part[end.end():]
        if not is_blank(tail):
            at = part.count("\n", 0, end.end()) + (len(tail) - len(tail.lstrip("\n")))
            out.problems.append((f"kubectl reads nothing after `...` up to the next `---`: {tail.count(chr(10))} line(s) "
                                 f"ignored (go-yaml reads one document per piece); start a new document with ---",
                                 at, 0, WARNING, (), (), 0))
        part = part[:end.end()] + "\n"
    out.text = part
    directive = _DIRECTIVE.search(part) if ("\n%" in part or part.startswith("%")) else None
    if directive is not None and is_blank(part):
        out.problems.append(("a %YAML or %TAG directive with no document after it before the next ---: kubectl cuts "
                             "the stream at that --- and refuses the directive alone (did not find expected "
                             "<document start>)", part.count("\n", 0, directive.start()), 0, ERROR, (), BOTH, 0))
        out.ok = False
        return out
    rare = _RARE.search(part) is not None
    bad = KY.control_problem(part) if rare else None
    if bad is not None:
        out.problems.append((bad.message, bad.line, bad.col, ERROR, (), BOTH, 0))
        out.ok = False
        return out
    if not needs_exact(part, rare):
        ok, data = fast_read(part)
        if ok:
            out.data = data
            return out
    r = KY.read(part, paths)
    out.problems += [(p.message, p.line, p.col, p.level, p.path, p.refused_by, 0) for p in r.problems]
    if not r.ok:
        out.ok = False
        return out
    out.data = r.data
    out.kustomize = r.kustomize if r.kustomize is not r.data else None
    if r.aliases or len(part) > KY.MAX_OBJECT_BYTES // 3:
        size = KY.json_size(r.data)
        if size > KY.MAX_OBJECT_BYTES:
            out.problems.append((f"the object is {size / 2**20:.1f} MiB as JSON: the API server refuses a request body "
                                 f"over 3 MiB (k8s.io/apiserver MaxRequestBodyBytes)", 0, 0, ERROR, (), BOTH, 0))
            out.ok = False
            out.data = out.kustomize = None
    return out


def _orphan_end(part: str, head: str, first_nl: int, kept: bool, out: _Part) -> bool:
    """A `...` that opens the piece go-yaml gets (kubectl dropped the `---` above it, or the stream starts with
    it): an error, as kubectl's; whether it was one."""
    if head.startswith("---"):
        if kept or first_nl < 0 or head[3:].strip()[:1] not in ("", "#"):
            return False
        m = _ORPHAN_END.match(part, first_nl + 1)
        why = "kubectl drops the `---` line that ends the document above, so this piece opens with `...`"
        fix = "delete the `...` line (or write `---` twice)"
    else:
        m = _ORPHAN_END.match(part)
        why = "the stream opens with `...`"
        fix = "delete the `...` line"
    if m is None:
        return False
    out.problems.append((f"a `...` with no document before it: {why}, which go-yaml refuses (did not find expected "
                         f"node content; apimachinery YAMLReader, kyaml splitDocuments); {fix}",
                         part.count("\n", 0, m.start(1)), 0, ERROR, (), BOTH, 0))
    out.ok = False
    return True


def load_all(text: str, paths: tuple = BOTH, errors: list[str] | None = None) -> list[Any]:
    """The data of every document of `text` that kubectl reads, whatever it holds (a kustomization, a patch, a
    config): bounded like every reading here. For the files around the manifests; `errors` gets a line
    (`LINE:COL: message`) for each error where the caller wants them."""
    out = []
    for _, (part, offset), kept in with_markers(enumerate(_chunks(text))):
        p = _read_part(part, paths, kept)
        if errors is not None:
            errors.extend(f"{offset + line + 1}:{col + 1}: {msg}" for msg, line, col, level, _, refused, _ in p.problems
                          if level == ERROR and set(refused) & set(paths))
        if p.ok and p.data is not None:
            out.append(p.data)
    return out


def _load_one(part: str, offset: int, index: int, file: str, target: str, paths: tuple, named: bool | None,
              out: Stream, kept: bool = True) -> bool:
    """Read one document into `out`; whether it held anything (an empty or `null` one kubectl skips)."""
    findings = out.findings
    read = _read_part(part, paths, kept)
    problems = [_finding(msg, file, max(index + delta, 0), offset + line + 1, col + 1, target, level=level, path=path,
                         refused_by=refused) for msg, line, col, level, path, refused, delta in read.problems]
    data, kust, part = read.data, read.kustomize, read.text
    if not read.ok or data is None:
        findings.extend(problems)
        return bool(problems)
    doc = Document(data=data, index=index, file=file, text=part, line_offset=offset, target=target, kustomize=kust)
    if named is not None and not (is_manifest(data) or _objects(data)):
        # No Kubernetes object (a CI config, a values file): what one way of applying it says of its keys and
        # scalars is no concern; a document both refuse still is.
        findings.extend(f for f in problems if f.level == ERROR and not f.extra.get("refused_by"))
        if not isinstance(data, dict):
            _not_an_object(doc, named, out)
        elif named:
            findings.append(doc.finding("yaml", "missing 'kind' key: kubectl refuses a document without kind and "
                                                "apiVersion (Object 'Kind' is missing); not a Kubernetes object?"))
        else:
            out.skipped += 1
        return True
    findings.extend(problems)
    if kust is not None:
        findings.extend(_divergences(doc))
    if not isinstance(data, dict):
        _not_an_object(doc, named, out)
        return True
    if named and not (isinstance(data.get("kind"), str) and data["kind"]):
        findings.append(doc.finding("yaml", "missing 'kind' key: kubectl refuses a document without kind "
                                            "(Object 'Kind' is missing)", ["kind"] if "kind" in data else []))
        return True
    if named and not (isinstance(data.get("apiVersion"), str) and data["apiVersion"]):
        findings.append(doc.finding("yaml", "missing 'apiVersion' key: kubectl refuses a document without "
                                            "apiVersion", ["apiVersion"] if "apiVersion" in data else []))
        return True
    if is_list_kind(data):
        out.documents.extend(_list_items(doc, findings))
        return True
    out.documents.append(doc)
    return True


def _objects(data: Any) -> bool:
    """A list that holds Kubernetes objects (a mistake kubectl refuses, reported as such)."""
    return isinstance(data, list) and any(is_manifest(x) for x in data)


def _not_an_object(doc: Document, named: bool | None, out: Stream) -> None:
    """A document that is a list or a plain value: an error where the file was named, else skipped."""
    data = doc.data
    if _objects(data):
        # A list of objects is a mistake kubectl refuses, wherever the file was found.
        out.findings.append(doc.finding("yaml", "document is a list of objects; kubectl reads one object per document "
                                                "(separate them with ---, or use kind: List with items)"))
    elif named:
        what = "a list" if isinstance(data, list) else f"a {type(data).__name__} value"
        out.findings.append(doc.finding("yaml", f"the document is {what}, not an object: kubectl refuses it "
                                                f"(cannot unmarshal it into an object); not a Kubernetes manifest?"))
    elif named is False:
        out.skipped += 1


def _divergences(doc: Document) -> list[Finding]:
    """Warnings where `kubectl apply -f` and `kubectl kustomize` read the same text into different values."""
    out: list[Finding] = []
    for path, a, k in _diff(doc.data, doc.kustomize, ()):
        if _under_annotations(path):
            continue            # kustomize writes annotations back as text: validate judges what apply reads
        if isinstance(a, bool) and isinstance(k, str):
            msg = (f"`{k}` is {str(a).lower()} to kubectl apply -f (a YAML 1.1 boolean) and the string \"{k}\" to "
                   f"kubectl kustomize: quote it, or write {str(a).lower()}")
        elif path and path[-1] == "<key>":
            msg = (f"key `{k}` is \"{a}\" to kubectl apply -f (a YAML 1.1 boolean) and \"{k}\" to kubectl kustomize: "
                   f"quote it")
            path = path[:-1]
        else:
            msg = (f"kubectl apply -f reads {json.dumps(a, default=str)[:60]} here, kubectl kustomize "
                   f"{json.dumps(k, default=str)[:60]} (a merge key `<<` before the mapping's own keys?)")
        out.append(doc.finding("yaml", msg, list(path), level=WARNING, divergence=True))
    return out


def _under_annotations(path: tuple) -> bool:
    return len(path) >= 2 and (path[:2] == ("metadata", "annotations") or
                               (len(path) >= 4 and path[0] == "items" and path[2:4] == ("metadata", "annotations")))


def _diff(a: Any, k: Any, path: tuple):
    """(path, apply's value, kustomize's value) where the two readings part; a renamed key as (path + "<key>")."""
    if a is k:
        return
    if isinstance(a, dict) and isinstance(k, dict):
        ka, kk = list(a), list(k)
        if len(ka) == len(kk) and ka != kk and set(ka) != set(kk):
            for x, y in zip(ka, kk):
                if x != y:
                    yield path + (x, "<key>"), x, y
        for key in a:
            if key in k:
                yield from _diff(a[key], k[key], path + (key,))
        return
    if isinstance(a, list) and isinstance(k, list) and len(a) == len(k):
        for i, (x, y) in enumerate(zip(a, k)):
            yield from _diff(x, y, path + (i,))
        return
    if a != k or type(a) is not type(k):
        yield path, a, k


def _list_items(doc: Document, findings: list[Finding]) -> list[Document]:
    """The items of a List document, each a Document located inside it (`items[i]`)."""
    out = []
    kitems = doc.kustomize.get("items") if isinstance(doc.kustomize, dict) else None
    for i, item in enumerate(doc.data["items"]):
        kitem = kitems[i] if isinstance(kitems, list) and i < len(kitems) and kitems[i] is not item else None
        sub = Document(data=item, index=doc.index, file=doc.file, text=doc.text, line_offset=doc.line_offset,
                       target=doc.target, prefix=(*doc.prefix, "items", i), _node=doc._node, kustomize=kitem)
        if not isinstance(item, dict):
            findings.append(sub.finding("yaml", f"{doc.kind} item is a {type(item).__name__}, "
                                                f"expected a mapping (a Kubernetes object)"))
            continue
        if is_list_kind(item):
            out.extend(_list_items(sub, findings))
            continue
        out.append(sub)
    return out


def read_file(path: str) -> tuple[str, str, KY.BadBytes | None]:
    """(display name, text, first byte that is not UTF-8) of a file or `-` (stdin), decoded as `kubectl apply -f`
    decodes it (kdt.kubeyaml.decode). A file that cannot be opened is a UsageError (exit 2)."""
    if path == "-":
        return ("<stdin>", *KY.decode(sys.stdin.buffer.read()))
    p = FsPath(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file or folder") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a folder") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    return (display(p), *KY.decode(data))


def read_text(path: str) -> tuple[str, str]:
    """(display name, text) of a file or `-`: read_file without the report of bytes that are not UTF-8."""
    name, text, _ = read_file(path)
    return name, text


def bad_bytes_finding(bad: KY.BadBytes, file: str, paths: tuple = BOTH, target: str = "") -> Finding:
    """The finding for a byte that is not UTF-8: an error where kustomize may read the file, which refuses it."""
    where = f"byte 0x{bad.byte:02X} at line {bad.line}, column {bad.col}"
    if KUSTOMIZE in paths:
        return _finding(f"not UTF-8 text ({where}): kubectl kustomize refuses the file (go-yaml: invalid UTF-8); "
                        f"kubectl apply -f reads U+FFFD in place of the byte (k8s.io/cli-runtime FileVisitor); save "
                        f"the file as UTF-8", file, None, bad.line, bad.col, target, refused_by=(KUSTOMIZE,))
    return _finding(f"not UTF-8 text ({where}): kubectl reads U+FFFD in place of the byte; save it as UTF-8",
                    file, None, bad.line, bad.col, target, level=WARNING, refused_by=())


# kubectl apply -f FOLDER and kubeconform read these (k8s.io/cli-runtime FileExtensions; kubeconform
# pkg/resource/files.go isYAMLFile/isJSONFile, any case).
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def is_manifest_file(p: FsPath) -> bool:
    return p.suffix.lower() in MANIFEST_SUFFIXES


def yaml_files(folder: FsPath) -> list[FsPath]:
    return sorted(p for p in folder.rglob("*") if is_manifest_file(p) and p.is_file())


def load_paths(paths: Iterable[str]) -> tuple[list[Document], list[Finding]]:
    docs: list[Document] = []
    findings: list[Finding] = []
    for path in paths:
        p = FsPath(path)
        files = yaml_files(p) if path != "-" and p.is_dir() else [path]
        for f in files:
            name, text, bad = read_file(str(f))
            if bad is not None:
                findings.append(bad_bytes_finding(bad, name))
            d, fs = load_stream(text, name)
            docs.extend(d)
            findings.extend(fs)
    return docs, findings

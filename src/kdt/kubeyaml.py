"""YAML as kubectl reads it, both ways a file is applied: the facts, and the exact reader.

Two readers take a manifest file to the API server, and they do not read YAML alike:

- `kubectl apply -f FILE` (and `create`, `helm`, Argo CD): k8s.io/cli-runtime pkg/resource/visitor.go
  (FileVisitor.Visit: the file through x/text's UTF-8 decoder with a BOM override, so a UTF-16 BOM
  transcodes and an invalid UTF-8 byte becomes U+FFFD; StreamVisitor.Visit: documents one by one, the
  first one that does not parse ends the file), k8s.io/apimachinery pkg/util/yaml/decoder.go
  (YAMLOrJSONDecoder: a JSON stream when the first non-space byte of the first 4 KiB is `{`; YAMLReader:
  a document ends at a line starting with `---`, anything but a comment after it is an error),
  sigs.k8s.io/yaml v1.6.0 yaml.go (YAMLToJSON over go.yaml.in/yaml/v2 v2.4.4: YAML 1.1 scalars, keys made
  strings by convertToJSONableObject) and Go's encoding/json;
- `kubectl kustomize` / `kubectl apply -k`: sigs.k8s.io/kustomize/kyaml v0.21.1 (kio/byteio_reader.go
  splitDocuments and ByteReader.Read, yaml/rnode.go DeAnchor) over go.yaml.in/yaml/v3 v3.0.4, whose
  scalars differ from v2's only in the YAML 1.1 booleans (`yes`, `no`, `on`, `off`, `y`, `n`, ... are
  strings); kustomize then refuses keys that are not strings, duplicate keys and a second merge key,
  and writes annotations back as the text of their values (api/resource/resource.go
  RemoveBuildAnnotations, kyaml yaml/rnode.go getMapFromMeta).

`read()` reads one document as both do, from libyaml's events (PyYAML's C parser: go-yaml is a
translation of libyaml), with go-yaml's resolver, merge keys, anchors and limits. What both refuse is a
Problem refused by both; what one refuses names it. The data is what `kubectl apply -f` sends; where
`kubectl kustomize` reads a value otherwise, the other reading is kept beside it (`Read.kustomize`).
`kdt.documents` calls this only for documents that need it (the fast path there reads the rest).
"""
from __future__ import annotations

import base64
import json
import math
import re
import struct
from decimal import Decimal
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import yaml
from yaml.events import (AliasEvent, DocumentEndEvent, MappingEndEvent, MappingStartEvent, ScalarEvent,
                         SequenceEndEvent, SequenceStartEvent, StreamEndEvent)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

APPLY = "kubectl apply -f"
KUSTOMIZE = "kubectl kustomize"
BOTH = (APPLY, KUSTOMIZE)

# --- limits ------------------------------------------------------------------------------------------
# Go's encoding/json refuses JSON nested deeper than 10,000 levels (src/encoding/json/scanner.go
# maxNestingDepth), which sigs.k8s.io/yaml's JSON decode meets; go-yaml's scanner refuses more than
# 10,000 open flow collections or indentation levels (go.yaml.in/yaml/v2 v2.4.4 and v3 v3.0.4
# scannerc.go max_flow_level, max_indents).
KUBECTL_MAX_DEPTH = 10_000
# kdt stops earlier: no Kubernetes object nests anywhere near this (the deepest document of the shared
# corpus and the fetched Trainer repository, a Trainer 2.3 TrainJob CRD, nests 47 levels), and every
# later stage may walk the object recursively. Deeper documents are a located error here.
MAX_DEPTH = 256
# The API server decodes a request body of at most 3 MiB (k8s.io/apiserver pkg/server/config.go
# NewConfig: MaxRequestBodyBytes = 3 * 1024 * 1024; kubectl sends the object as JSON).
MAX_OBJECT_BYTES = 3 * 1024 * 1024
# kdt parses no document longer than this (its JSON is then well past MAX_OBJECT_BYTES, comments aside).
MAX_DOCUMENT_CHARS = 4 * MAX_OBJECT_BYTES


def allowed_alias_ratio(decode_count: int) -> float:
    """go.yaml.in/yaml/v2 v2.4.4 decode.go allowedAliasRatio: the share of decoded nodes aliases may add."""
    low, high = 400_000, 4_000_000
    if decode_count <= low:
        return 0.99
    if decode_count >= high:
        return 0.10
    return 0.99 - 0.89 * ((decode_count - low) / (high - low))


def excessive_aliasing(alias_count: int, decode_count: int) -> bool:
    """go-yaml v2 decoder.unmarshal's check, made after each alias (its ratio only grows within one)."""
    return (alias_count > 100 and decode_count > 1000
            and alias_count / decode_count > allowed_alias_ratio(decode_count))


# --- scalars -------------------------------------------------------------------------------------------
STR, BOOL, INT, FLOAT, NULL, TIMESTAMP, BINARY, MERGE = (
    f"tag:yaml.org,2002:{t}" for t in ("str", "bool", "int", "float", "null", "timestamp", "binary", "merge"))
_RESOLVABLE = {None, STR, BOOL, INT, FLOAT, NULL, TIMESTAMP}

# go.yaml.in/yaml/v2 v2.4.4 resolve.go resolveMapList; v3 v3.0.4 has the same table without the rows
# marked 1.1 (YAML 1.2 dropped them).
BOOL_11 = {**{w: True for w in ("y", "Y", "yes", "Yes", "YES", "on", "On", "ON")},
           **{w: False for w in ("n", "N", "no", "No", "NO", "off", "Off", "OFF")}}
_MAP = {**{w: True for w in ("true", "True", "TRUE")}, **{w: False for w in ("false", "False", "FALSE")},
        **{w: None for w in ("", "~", "null", "Null", "NULL")},
        ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan,
        **{w: math.inf for w in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
        **{w: -math.inf for w in ("-.inf", "-.Inf", "-.INF")}}
_MAP_TAGS = {True: BOOL, False: BOOL, None: NULL}
_HINT_M = set("yYnNtTfFoO~")
_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_INT = re.compile(r"^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_GO_FLOAT = re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$"
                       r"|^[-+]?(?:inf|infinity|nan)$", re.IGNORECASE)
_INT64 = (-(1 << 63), (1 << 63) - 1)


class GoError(Exception):
    """What go-yaml or the JSON step fails with (failf's message)."""


def _go_parse_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), then ParseUint: Go's base prefixes, a leading 0 is octal."""
    if not _GO_INT.match(text):
        return None
    sign = -1 if text[0] == "-" else 1
    body = text.lstrip("+-")
    if len(body) > 1 and body[0] == "0" and body[1] not in "xXoObB":
        value = int(body, 8)
    else:
        value = int(body, 0)
    value *= sign
    if _INT64[0] <= value <= _INT64[1] or (sign > 0 and value < (1 << 64)):
        return value
    return None


_TIMESTAMP = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(\.\d+)?(Z|[+-]\d{2}:\d{2}))"
                        r"|(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(\.\d+)?))?$")


def _timestamp(text: str) -> str | None:
    """go-yaml parseTimestamp (resolve.go allowedTimestampFormats), as JSON writes the time.Time: RFC 3339."""
    m = _TIMESTAMP.match(text)
    if not m:
        return None
    y, mo, d = int(m[1]), int(m[2]), int(m[3])
    h, mi, s, frac, zone = (m[4], m[5], m[6], m[7], m[8]) if m[4] else (m[9], m[10], m[11], m[12], None)
    try:
        when = datetime(y, mo, d, int(h or 0), int(mi or 0), int(s or 0))
    except ValueError:
        return None
    nanos = (frac or ".")[1:10].ljust(9, "0") if frac else ""
    out = when.strftime("%Y-%m-%dT%H:%M:%S")
    if nanos.strip("0"):
        out += "." + nanos.rstrip("0")
    if zone and zone != "Z":
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 24 or minutes > 59:
            return None
        out += "Z" if hours == minutes == 0 else zone
    else:
        out += "Z"
    return out


def resolve(text: str, tag: str | None, v3: bool = False) -> tuple[str, Any]:
    """(tag, value) of a plain or tagged scalar: go.yaml.in/yaml/v2 v2.4.4 resolve.go resolve (v3=True: v3 v3.0.4)."""
    if tag not in _RESOLVABLE:
        return tag, text
    rtag, out = _resolve(text, tag, v3)
    if tag in (None, rtag, STR, BINARY):
        return rtag, out
    if tag == FLOAT and rtag == INT:
        return FLOAT, float(out)
    raise GoError(f"cannot decode {_short_tag(rtag)} `{text}` as a {_short_tag(tag)}")


def _short_tag(tag: str) -> str:
    return "!!" + tag.rsplit(":", 1)[-1] if tag and tag.startswith("tag:yaml.org,2002:") else str(tag)


def _resolve(text: str, tag: str | None, v3: bool) -> tuple[str, Any]:
    hint = text[:1]
    if tag == STR or not (hint == "" or hint in "+-0123456789." or hint in _HINT_M):
        return STR, text
    if text in _MAP:
        v = _MAP[text]
        return (_MAP_TAGS[v] if not isinstance(v, float) else FLOAT), v
    if not v3 and text in BOOL_11:
        return BOOL, BOOL_11[text]
    if hint == ".":
        if _GO_FLOAT.match(text) and not math.isinf(float(text)):
            return FLOAT, float(text)       # strconv.ParseFloat; out of range is an error there
    elif hint and hint in "+-0123456789":
        if tag in (None, TIMESTAMP):
            ts = _timestamp(text)
            if ts is not None:
                return TIMESTAMP, ts
        plain = text.replace("_", "")
        iv = _go_parse_int(plain)
        if iv is not None:
            return INT, iv
        if _YAML_FLOAT.match(plain) and not math.isinf(float(plain)):
            return FLOAT, float(plain)
        for prefix, base in (("0b", 2), ("-0b", 2)) + ((("0o", 8), ("-0o", 8)) if v3 else ()):
            if plain.startswith(prefix):
                digits = plain[len(prefix):]
                try:
                    value = int(digits, base)
                except ValueError:
                    break
                return INT, -value if prefix[0] == "-" else value
    return STR, text


def json_number(value: float) -> int | float:
    """A float as the API server reads it back from Go's JSON: integral values below 1e21 are written
    without a fraction (encoding/json floatEncoder uses %f there), so an integer field takes them."""
    if value.is_integer() and abs(value) < 1e21:
        return int(Decimal(repr(value)))     # Go writes the shortest digits that round-trip, then zeros
    return value


def go_float32(value: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 32), as sigs.k8s.io/yaml turns a float key into a string."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    f32 = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        text = f"{f32:.{digits - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            break
    mantissa, exp_text = text.split("e")
    exp = int(exp_text)
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    if exp < -4 or exp >= 6:      # Go 'g', shortest: %e when the exponent is < -4 or >= 6 (ftoa.go eprec)
        return f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    fixed = f"{float(text):f}"
    return fixed.rstrip("0").rstrip(".") if "." in fixed else fixed


def key_string(key: Any) -> str | None:
    """The string sigs.k8s.io/yaml makes of a mapping key (convertToJSONableObject), or None when it refuses it."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key) if _INT64[0] <= key <= _INT64[1] else None    # a uint64 key: unsupported
    if isinstance(key, float):
        return go_float32(key)
    return None


# --- the reader ---------------------------------------------------------------------------------------
@dataclass
class Problem:
    """Something a reader refuses (or, level warning, reads otherwise), located in the document's text."""

    message: str
    line: int                      # 0-based, in the document's text
    col: int                       # 0-based
    path: tuple = ()
    refused_by: tuple = BOTH       # the ways of applying this problem breaks (both, for kdt's own limits too)
    level: str = "error"


@dataclass
class Read:
    """One document as the readers read it."""

    data: Any = None               # the object as `kubectl apply -f` reads it (None: none, or refused)
    kustomize: Any = None          # as `kubectl kustomize` reads it: the same object where they agree
    problems: list[Problem] = field(default_factory=list)
    ok: bool = True                # False: a reader it is read for refuses it
    aliases: int = 0               # alias expansions


class _Stop(Exception):
    """A problem that ends the reading of the document."""

    def __init__(self, problem: Problem):
        self.problem = problem


class _Value:
    """A finished node: both readings, its size in go-yaml decode operations, its text (scalars)."""

    __slots__ = ("a", "k", "size", "text", "kind", "tag", "plain", "line", "col")

    def __init__(self, a, k, size, text=None, kind="scalar", tag=None, plain=False, line=0, col=0):
        self.a, self.k, self.size, self.text, self.kind, self.tag, self.plain = a, k, size, text, kind, tag, plain
        self.line, self.col = line, col


class _Node:
    """An open collection while its events are read."""

    __slots__ = ("kind", "anchor", "line", "col", "path", "items", "size", "key", "annotations")

    def __init__(self, kind, anchor, mark, path, annotations=False):
        self.kind, self.anchor, self.path, self.annotations = kind, anchor, path, annotations
        self.line, self.col = mark.line, mark.column
        self.items: list = []         # sequence: values; mapping: (key, value) with key None for a merge
        self.size = 1
        self.key = None               # mapping: the key read, waiting for its value


_B64_WS = re.compile(r"[\r\n]")


def _is_annotations(path: tuple) -> bool:
    """metadata.annotations of a resource (or of a List's item), whose values kustomize writes back as text."""
    return path[-2:] == ("metadata", "annotations") and (len(path) == 2 or (len(path) == 4 and path[0] == "items"))


class _Reader:
    """go-yaml's decoder over libyaml's events: both readings at once, go-yaml's counts and limits."""

    def __init__(self, text: str, paths: tuple):
        self.text, self.paths = text, paths
        self.kustomize = KUSTOMIZE in paths
        self.problems: list[Problem] = []
        self.anchors: dict[str, _Value] = {}
        self.open_anchors: set[str] = set()
        self.decode = 1                   # go-yaml's decode operations: the document node, then every node
        self.alias_count = 0
        self.aliases = 0

    def soft(self, problem: Problem) -> None:
        """A problem of one reader only: recorded when that reader matters, reading goes on."""
        if set(problem.refused_by) & set(self.paths):
            self.problems.append(problem)

    # scalars ------------------------------------------------------------------------------------------
    def scalar(self, ev: ScalarEvent) -> _Value:
        mark = ev.start_mark
        line, col = mark.line, mark.column
        value = ev.value
        plain = ev.style in ("", None)
        tag = STR if ev.tag == "!" else ev.tag        # the non-specific tag `!`: a string
        if ev.style == '"' and "\\/" in self.text[mark.index:ev.end_mark.index]:
            # libyaml reads `\/`; go-yaml v2.4.4 and v3.0.4 do not (scannerc.go: "found unknown escape character").
            raise _Stop(Problem("found unknown escape character `\\/` in a double-quoted string: kubectl refuses "
                                "it (go-yaml has no such escape; write `/`)", line, col))
        if tag is None and not plain:
            return _Value(value, value, 1, value, tag=STR, line=line, col=col)
        try:
            atag, a = resolve(value, tag)
        except GoError as exc:
            raise _Stop(Problem(f"{exc}: kubectl refuses it (go-yaml resolve)", line, col)) from None
        k = a
        if self.kustomize and ((plain and tag is None and value in BOOL_11) or tag == BOOL):
            try:
                _, k = resolve(value, tag, v3=True)
            except GoError as exc:
                self.soft(Problem(f"{exc}: kubectl kustomize refuses it (go-yaml v3 resolve); kubectl apply -f "
                                  f"reads it", line, col, refused_by=(KUSTOMIZE,)))
        if atag == BINARY or tag == BINARY:
            try:
                a = k = base64.b64decode(_B64_WS.sub("", value), validate=True).decode("utf-8", "replace")
            except ValueError:
                raise _Stop(Problem("!!binary value contains invalid base64 data: kubectl refuses it",
                                    line, col)) from None
        return _Value(a, k, 1, value, tag=atag, plain=plain and tag is None, line=line, col=col)

    def json(self, v: _Value, kust: bool = False) -> Any:
        """A scalar's value as JSON carries it."""
        x = v.k if kust else v.a
        if isinstance(x, float):
            if x != x or x in (math.inf, -math.inf):
                word = "NaN" if x != x else ("+Inf" if x > 0 else "-Inf")
                raise _Stop(Problem(f"`{v.text}` is a number JSON cannot carry: kubectl refuses it "
                                    f"(json: unsupported value: {word})", v.line, v.col))
            return json_number(x)
        return x

    # the document -------------------------------------------------------------------------------------
    def read(self, loader) -> _Value | None:
        stack: list[_Node] = []
        root = None
        get = loader.get_event
        get()                                         # StreamStart
        if loader.check_event(StreamEndEvent):
            return None
        get()                                         # DocumentStart
        while True:
            ev = get()
            cls = type(ev)
            top = stack[-1] if stack else None
            if cls is ScalarEvent:
                val = self.scalar(ev)
                self.decode += 1
                if ev.anchor:
                    self.anchors[ev.anchor] = val
            elif cls is MappingStartEvent or cls is SequenceStartEvent:
                if top is not None and top.kind == "map" and top.key is None:
                    what = "a mapping (a `{{ ... }}` template expression?)" if cls is MappingStartEvent else "a list"
                    raise _Stop(Problem(f"mapping key is {what}: kubectl refuses it (go-yaml: invalid map key)",
                                        ev.start_mark.line, ev.start_mark.column, top.path))
                if len(stack) >= MAX_DEPTH:
                    raise _Stop(Problem(f"nested more than {MAX_DEPTH} levels deep: kdt reads no deeper (Kubernetes "
                                        f"objects nest about 50 levels at most; kubectl refuses past "
                                        f"{KUBECTL_MAX_DEPTH:,}, Go encoding/json maxNestingDepth)",
                                        ev.start_mark.line, ev.start_mark.column))
                path = self.child_path(top)
                kind = "map" if cls is MappingStartEvent else "seq"
                stack.append(_Node(kind, ev.anchor, ev.start_mark, path, kind == "map" and _is_annotations(path)))
                if ev.anchor:
                    self.open_anchors.add(ev.anchor)
                self.decode += 1
                continue
            elif cls is MappingEndEvent or cls is SequenceEndEvent:
                node = stack.pop()
                val = self.finish(node)
                if node.anchor:
                    self.open_anchors.discard(node.anchor)
                    self.anchors[node.anchor] = val
                top = stack[-1] if stack else None
            elif cls is AliasEvent:
                val = self.alias(ev)
            else:                                     # DocumentEnd: the rest of the text is not read
                return root
            if top is None:
                root = val
            elif top.kind == "seq":
                top.size += val.size
                top.items.append(val)
            elif top.key is None:
                top.size += val.size
                top.key = val
            else:
                top.size += val.size
                top.items.append((top.key, val))
                top.key = None

    def child_path(self, parent: _Node | None) -> tuple:
        if parent is None:
            return ()
        if parent.kind == "seq":
            return parent.path + (len(parent.items),)
        key = parent.key
        s = key_string(key.a) if key is not None and key.kind == "scalar" else None
        return parent.path + (s if s is not None else "?",)

    def alias(self, ev: AliasEvent) -> _Value:
        name, mark = ev.anchor, ev.start_mark
        if name in self.open_anchors:
            raise _Stop(Problem(f"anchor '{name}' value contains itself: kubectl apply -f refuses it (go-yaml "
                                f"decode.go); kubectl kustomize overflows its stack", mark.line, mark.column))
        target = self.anchors.get(name)
        if target is None:
            raise _Stop(Problem(f"unknown anchor '{name}' referenced: kubectl refuses it", mark.line, mark.column))
        self.decode += 1 + target.size
        self.alias_count += target.size
        self.aliases += 1
        if excessive_aliasing(self.alias_count, self.decode):
            raise _Stop(Problem(f"document contains excessive aliasing ({self.decode:,} nodes, {self.alias_count:,} "
                                f"of them from aliases): kubectl apply -f refuses it (go-yaml v2 decode.go "
                                f"allowedAliasRatio); kubectl kustomize would expand them all",
                                mark.line, mark.column, refused_by=(APPLY,)))
        a = _copy(target.a)
        k = a if target.k is target.a else _copy(target.k)
        return _Value(a, k, 1 + target.size, target.text, target.kind, target.tag, target.plain, mark.line, mark.column)

    def finish(self, node: _Node) -> _Value:
        if node.kind == "seq":
            a = [self.json(v) if v.kind == "scalar" else v.a for v in node.items]
            if self.kustomize and any(v.k is not v.a for v in node.items):
                k = [self.json(v, True) if v.kind == "scalar" else v.k for v in node.items]
            else:
                k = a
            return _Value(a, k, node.size, kind="seq", line=node.line, col=node.col)
        a: dict = {}
        own_k: dict = {}
        merged_k: dict = {}
        seen_a: set = set()
        merges = 0
        differs = False
        for key, val in node.items:
            if key.kind == "scalar" and ((key.plain and key.text == "<<") or key.tag == MERGE):
                merges += 1
                sources = self.merge_sources(val, key)
                # go-yaml v2 decode.go merge: each merged mapping is decoded into this one where the `<<` stands,
                # overriding the keys before it; in a list the earlier mappings win (it steps backwards).
                for src_a, _ in reversed(sources):
                    a.update(src_a)
                if merges == 1:
                    # kyaml rnode.go deAnchor/mergeAll: merged values first, the mapping's own keys win.
                    for _, src_k in reversed(sources):
                        merged_k.update(src_k)
                else:
                    self.soft(Problem("two merge keys (`<<`) in one mapping: kubectl kustomize refuses it (kyaml: "
                                      "duplicate merge key); kubectl apply -f merges both", key.line, key.col,
                                      node.path, refused_by=(KUSTOMIZE,)))
                differs = True
                continue
            if key.kind != "scalar":
                raise _Stop(Problem("a mapping or list as a mapping key: kubectl refuses it (invalid map key)",
                                    key.line, key.col))
            sa = key_string(key.a) if key.tag != TIMESTAMP else None
            if sa is None:
                what = ("null" if key.a is None else "a timestamp" if key.tag == TIMESTAMP
                        else "an integer past int64" if isinstance(key.a, int) else type(key.a).__name__)
                raise _Stop(Problem(f"mapping key `{key.text}` is {what}: kubectl refuses it (sigs.k8s.io/yaml: "
                                    f"unsupported map key)", key.line, key.col, node.path))
            kk = key.k
            if sa in seen_a:
                # An error for both ways: kustomize refuses it; `kubectl apply -f` keeps the last value (the data
                # here too) and the API server's strict field validation refuses a duplicate field.
                self.problems.append(Problem(f"duplicate key {sa!r}: kubectl kustomize refuses it (mapping key "
                                             f"already defined); kubectl apply -f keeps only the last value, and the "
                                             f"API server's strict field validation refuses a duplicate field",
                                             key.line, key.col, node.path + (sa,)))
            seen_a.add(sa)
            va = self.json(val) if val.kind == "scalar" else val.a
            a[sa] = va
            if not self.kustomize:
                continue
            if not isinstance(kk, str):
                self.soft(Problem(f"mapping key `{key.text}` is {_kind_of(kk)}: kubectl kustomize refuses it (a key "
                                  f"must be a string); kubectl apply -f reads it as \"{sa}\" (quote it)",
                                  key.line, key.col, node.path + (sa,), refused_by=(KUSTOMIZE,)))
                kk = sa
            if node.annotations:
                vk = (val.text or "") if val.kind == "scalar" else ""
            else:
                vk = self.json(val, True) if val.kind == "scalar" else val.k
            own_k[kk] = vk
            if kk != sa or vk is not va and not (type(vk) is type(va) and vk == va):
                differs = True
        if not (self.kustomize and differs):
            k = a
        else:
            k = {**merged_k, **own_k}
            if k == a:
                k = a
        return _Value(a, k, node.size, kind="map", line=node.line, col=node.col)

    def merge_sources(self, val: _Value, key: _Value) -> list[tuple[dict, dict]]:
        if val.kind == "map":
            return [(val.a, val.k)]
        if val.kind == "seq" and all(isinstance(x, dict) for x in val.a):
            return list(zip(val.a, val.k))
        raise _Stop(Problem("map merge requires map or sequence of maps as the value: kubectl refuses it",
                            key.line, key.col))


def _kind_of(x: Any) -> str:
    if isinstance(x, bool):
        return "a boolean"
    if isinstance(x, (int, float)):
        return "a number"
    return "null" if x is None else "not a string"


def _copy(x: Any) -> Any:
    """An alias's value, copied as Go decodes it afresh (so that no later stage shares one object)."""
    if isinstance(x, dict):
        return {k: _copy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copy(v) for v in x]
    return x


def read(text: str, paths: tuple = BOTH) -> Read:
    """The first document of `text` as the readers in `paths` read it (what follows a `...` they ignore)."""
    out = Read()
    reader = _Reader(text, paths)
    loader = _Loader(text)
    try:
        root = reader.read(loader)
        if root is not None:
            out.data = reader.json(root) if root.kind == "scalar" else root.a
            out.kustomize = (reader.json(root, True) if root.kind == "scalar" else root.k) if reader.kustomize \
                else out.data
    except _Stop as stop:
        reader.problems.append(stop.problem)
        out.ok = False
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        msg = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        reader.problems.append(Problem(f"YAML syntax error: {msg}", mark.line if mark else 0, mark.column if mark else 0))
        out.ok = False
    except yaml.YAMLError as exc:
        reader.problems.append(Problem(f"YAML error: {exc}", 0, 0))
        out.ok = False
    finally:
        loader.dispose()
    if not out.ok:
        out.data = out.kustomize = None
    out.problems = reader.problems
    out.aliases = reader.aliases
    return out


def json_size(data: Any) -> int:
    """Bytes of the object as kubectl sends it (compact JSON)."""
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())


# --- bytes --------------------------------------------------------------------------------------------
@dataclass
class BadBytes:
    line: int          # 1-based
    col: int           # 1-based, in characters of the decoded line
    byte: int
    offset: int        # byte offset in the input


def decode(data: bytes) -> tuple[str, BadBytes | None]:
    """Bytes as `kubectl apply -f` reads them (cli-runtime FileVisitor: x/text unicode.BOMOverride over a
    UTF-8 decoder): a UTF-8 BOM dropped, a UTF-16 BOM transcoding the rest, and every byte that is not
    UTF-8 replaced by U+FFFD. The first such byte is returned: go-yaml, and so `kubectl kustomize`, refuses
    the file there (readerc.go: invalid leading UTF-8 octet)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16-le" if data[:2] == b"\xff\xfe" else "utf-16-be"
        return data[2:].decode(codec, "replace"), None
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        before = data[:exc.start]
        line = before.count(b"\n") + 1
        col = len(before[before.rfind(b"\n") + 1:].decode("utf-8", "replace")) + 1
        return data.decode("utf-8", "replace"), BadBytes(line, col, data[exc.start], exc.start)


# Characters go-yaml refuses (readerc.go yaml_parser_update_buffer: "control characters are not allowed"):
# all but TAB, LF, CR, 0x20-0x7E, NEL, 0xA0-0xD7FF, 0xE000-0xFFFD and above 0xFFFF.
CONTROL = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def control_problem(text: str) -> Problem | None:
    m = CONTROL.search(text)
    if not m:
        return None
    before = text[:m.start()]
    line = before.count("\n")
    col = m.start() - (before.rfind("\n") + 1)
    ch = m.group()
    return Problem(f"control character U+{ord(ch):04X} ({_CONTROL_NAMES.get(ord(ch), 'a control character')}): "
                   f"kubectl refuses the file (go-yaml: control characters are not allowed)", line, col)


_CONTROL_NAMES = {0: "NUL", 0x1B: "ESC", 0x7F: "DEL", 0x0B: "vertical tab", 0x0C: "form feed", 0xFFFE: "a noncharacter",
                  0xFFFF: "a noncharacter"}

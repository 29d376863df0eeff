"""Parse YAML streams once, keeping what is needed to locate every node.

Two tiers, because line numbers are needed only where something is wrong:
- data: each document's text goes through yaml-rs (compiled, about 20 times
  PyYAML), which also rejects duplicate keys;
- positions: PyYAML's libyaml composer builds a document's node tree the first
  time a finding asks where a path is (`Document.locate`), from that document's
  own slice of the stream, so a valid stream never pays for it.
A document that yaml-rs refuses (syntax error, duplicate key) is read by the
positions tier, which names the line and column. Syntax errors, duplicate keys
and documents that are not mappings become findings, never exceptions.

Scalars follow YAML 1.2 (yaml-rs): `yes` and `on` are strings, `010` is ten.
Timestamps stay strings, as Kubernetes sees them.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any, Iterable, Sequence

import yaml
import yaml_rs
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from .errors import UsageError
from .findings import ERROR, Finding, format_path
from .paths import display

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_constructor = SafeConstructor()
_SCALARS = {
    "tag:yaml.org,2002:null": lambda n: None,
    "tag:yaml.org,2002:bool": lambda n: _constructor.construct_yaml_bool(n),
    "tag:yaml.org,2002:int": lambda n: _constructor.construct_yaml_int(n),
    "tag:yaml.org,2002:float": lambda n: _constructor.construct_yaml_float(n),
}
# A document starts at a `---` line (column 0). Block scalars are indented, so
# such a line is always a marker in a Kubernetes stream.
_DOC_START = re.compile(r"^---(?=[ \t\r\n]|$)", re.MULTILINE)


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
    # every stage compares them, and a wrong type is validate's finding, never a crash.
    @property
    def kind(self) -> str:
        v = self.data.get("kind") if isinstance(self.data, dict) else None
        return v if isinstance(v, str) else ""

    @property
    def api_version(self) -> str:
        v = self.data.get("apiVersion") if isinstance(self.data, dict) else None
        return v if isinstance(v, str) else ""

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

    @property
    def group(self) -> str:
        av = self.api_version
        return av.split("/")[0] if "/" in av else ""

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
    finally:
        loader.dispose()


class _Walker:
    """Node tree -> plain data (PyYAML tier), collecting duplicate keys."""

    __slots__ = ("dups",)

    def __init__(self) -> None:
        self.dups: list[tuple[Any, tuple]] = []

    def build(self, node: Any, path: tuple) -> Any:
        if isinstance(node, ScalarNode):
            tag = node.tag
            if tag == _STR:
                return node.value
            conv = _SCALARS.get(tag)
            return conv(node) if conv else node.value
        if isinstance(node, MappingNode):
            out: dict = {}
            for knode, vnode in node.value:
                if knode.tag == _MERGE:
                    merged = self.build(vnode, path)
                    for m in merged if isinstance(merged, list) else [merged]:
                        if isinstance(m, dict):
                            for mk, mv in m.items():
                                out.setdefault(mk, mv)
                    continue
                key = self.build(knode, path)
                if isinstance(key, (list, dict)):
                    key = str(key)
                if key in out:
                    self.dups.append((knode, path + (key,)))
                out[key] = self.build(vnode, path + (key,))
            return out
        if isinstance(node, SequenceNode):
            return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
        return None


def _chunks(text: str) -> list[tuple[str, int]]:
    """(document text, line offset) for each `---`-separated part of a stream."""
    starts = [m.start() for m in _DOC_START.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    out = []
    line = 0
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else len(text)
        part = text[s:e]
        out.append((part, line))
        line += part.count("\n")
    # The text before the first `---` holds only comments or directives when the
    # stream starts with a marker after them: it is no document of its own.
    if len(out) > 1 and is_blank(out[0][0]):
        out.pop(0)
    return out


def is_blank(part: str) -> bool:
    for ln in part.splitlines():
        s = ln.strip()
        if s and not s.startswith("#") and not s.startswith("%"):
            return False
    return True


def _slow(part: str, offset: int, file: str, index: int, target: str,
          findings: list[Finding]) -> tuple[Any, Any, bool]:
    """Read one document with the positions tier: (data, node, ok)."""
    loader = _Loader(part)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        msg = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        findings.append(Finding(level=ERROR, rule="yaml", message=f"YAML syntax error: {msg}",
                                file=file, doc=index, line=offset + mark.line + 1 if mark else None,
                                col=mark.column + 1 if mark else None, target=target))
        return None, None, False
    except yaml.YAMLError as exc:
        findings.append(Finding(level=ERROR, rule="yaml", message=f"YAML error: {exc}", file=file, doc=index,
                                line=offset + 1, target=target))
        return None, None, False
    finally:
        loader.dispose()
    if node is None:
        return None, None, True
    walker = _Walker()
    try:
        data = walker.build(node, ())
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        findings.append(Finding(level=ERROR, rule="yaml", message=f"cannot read value: {exc}", file=file,
                                doc=index, line=offset + node.start_mark.line + 1,
                                col=node.start_mark.column + 1, target=target))
        return None, node, False
    ident = Document(data=data, index=index, file=file)
    kind, name = ident.kind, ident.name
    for knode, path in walker.dups:
        findings.append(Finding(level=ERROR, rule="yaml",
                                message=f"duplicate key {path[-1]!r} (kubectl would keep only the last one)",
                                file=file, doc=index, line=offset + knode.start_mark.line + 1,
                                col=knode.start_mark.column + 1, path=format_path(path),
                                kind=kind, name=name, target=target))
    return data, node, True


# A mapping key that is not a plain string starts a line as a number, a boolean,
# null, a flow collection or `?`. Only documents with such a line are walked
# (kubectl reads such keys; JSON, and so every later stage, needs strings).
_ODD_KEY = re.compile(r"^[ \t]*(?:-[ \t]+)*(?:[-+]?[.0-9]|[~\[{?]|(?:true|false|null|True|False|TRUE|FALSE|Null|NULL)[ \t]*:)",
                      re.MULTILINE)


def _go_float32(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'g', -1, 32), as sigs.k8s.io/yaml turns a float key into a string."""
    import math
    import struct
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
    if exp < -4 or exp >= 6:     # Go: shortest form uses %e from exponent 6 on
        return f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return f"{float(text):f}".rstrip("0").rstrip(".") if "." in f"{float(text):f}" else f"{float(text):f}"


def key_string(key: Any) -> str | None:
    """The string kubectl (sigs.k8s.io/yaml) makes of a mapping key, or None when it refuses the key."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_float32(key)
    return None


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


def is_list_kind(data: Any) -> bool:
    """`kind: List` and every `*List` kind with an `items` list: kubectl applies each item."""
    return (isinstance(data, dict) and isinstance(data.get("kind"), str) and data["kind"].endswith("List")
            and isinstance(data.get("items"), list))


def normalize_keys(doc: Document) -> list[Finding]:
    """Make every mapping key of `doc.data` the string kubectl reads; the keys kubectl refuses, as findings."""
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


def load_stream(text: str, file: str, target: str = "", check_keys: bool = True) -> tuple[list[Document], list[Finding]]:
    """Every object of a YAML stream (the items of a List each), and the findings that parsing produced.

    check_keys=False skips looking for keys that are not strings (numbers, booleans, templates):
    only for a caller that handles them itself (validate_documents does, when the schema
    validator refuses such a key), since every other stage expects string keys.
    """
    return load_parts(enumerate(_chunks(text)), file, target, check_keys)


def load_parts(parts, file: str, target: str = "", check_keys: bool = True) -> tuple[list[Document], list[Finding]]:
    """load_stream over (index, (document text, line offset)) pairs: a window of a longer stream."""
    docs: list[Document] = []
    findings: list[Finding] = []
    for index, (part, offset) in parts:
        node = None
        try:
            data = yaml_rs.loads(part, parse_datetime=False)
        except (yaml_rs.YAMLDecodeError, ValueError, TypeError, OverflowError):
            data, node, ok = _slow(part, offset, file, index, target, findings)
            if not ok:
                continue
        if data is None:
            continue
        doc = Document(data=data, index=index, file=file, text=part, line_offset=offset, target=target, _node=node)
        if check_keys and _ODD_KEY.search(part):
            bad = normalize_keys(doc)
            if bad:
                findings.extend(bad)
                continue
            data = doc.data
        if not isinstance(data, dict):
            # A list of objects is a mistake kubectl refuses; any other non-mapping document (a
            # pre-commit hook list, a playbook, a bare value) is no Kubernetes object: not judged.
            if isinstance(data, list) and any(isinstance(x, dict) and ("apiVersion" in x or "kind" in x) for x in data):
                line, col, _ = doc.locate(())
                findings.append(Finding(level=ERROR, rule="yaml",
                                        message="document is a list of objects; kubectl reads one object per document "
                                                "(separate them with ---, or use kind: List with items)",
                                        file=file, doc=index, line=line, col=col, target=target))
            continue
        if is_list_kind(data):
            docs.extend(_list_items(doc, findings))
            continue
        docs.append(doc)
    return docs, findings


def _list_items(doc: Document, findings: list[Finding]) -> list[Document]:
    """The items of a List document, each a Document located inside it (`items[i]`)."""
    out = []
    for i, item in enumerate(doc.data["items"]):
        sub = Document(data=item, index=doc.index, file=doc.file, text=doc.text, line_offset=doc.line_offset,
                       target=doc.target, prefix=(*doc.prefix, "items", i), _node=doc._node)
        if not isinstance(item, dict):
            findings.append(sub.finding("yaml", f"{doc.kind} item is a {type(item).__name__}, "
                                                f"expected a mapping (a Kubernetes object)"))
            continue
        if is_list_kind(item):
            out.extend(_list_items(sub, findings))
            continue
        out.append(sub)
    return out


def read_text(path: str) -> tuple[str, str]:
    """(display name, text) of a file or `-` (stdin). Unreadable input is a UsageError (exit 2)."""
    if path == "-":
        return "<stdin>", sys.stdin.read().removeprefix("\ufeff")
    p = FsPath(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file or folder") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a folder") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return display(p), data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def yaml_files(folder: FsPath) -> list[FsPath]:
    return sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def load_paths(paths: Iterable[str]) -> tuple[list[Document], list[Finding]]:
    docs: list[Document] = []
    findings: list[Finding] = []
    for path in paths:
        p = FsPath(path)
        files = yaml_files(p) if path != "-" and p.is_dir() else [path]
        for f in files:
            name, text = read_text(str(f))
            d, fs = load_stream(text, name)
            docs.extend(d)
            findings.extend(fs)
    return docs, findings

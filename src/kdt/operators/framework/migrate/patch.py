"""JSON patches (RFC 6902) as a migration is written: one list of operations for a whole object.

The same operations are applied to a file's round-trip YAML (ruamel.yaml: a moved subtree keeps its
comments and key order) and written as a kustomize JSON6902 patch beside an overlay (kustomize applies
them to the rendered object, after the base's own patches and components). `move` and `copy` carry a
value without restating it, so the overlay's base stays the one place it is written; `test` guards
every index the patch relies on, so a base that changes shape stops the build instead of patching the
wrong item.
"""
from __future__ import annotations

import copy
import io
import textwrap
from dataclasses import dataclass
from typing import Any

MISSING = object()


class PatchError(ValueError):
    """An operation that does not apply (a path that is not there, a `test` that fails)."""


@dataclass
class Op:
    op: str                        # test, add, replace, remove, move, copy
    path: tuple
    value: Any = MISSING
    src: tuple | None = None       # `from` of move and copy
    note: str = ""                 # a comment written above the operation (why; the row of docs/migration.md)
    keep_comments: bool = True     # move: the moved key's own comments go along (False: they no longer hold)

    def as_dict(self) -> dict:
        d: dict = {"op": self.op}
        if self.src is not None:
            d["from"] = pointer(self.src)
        d["path"] = pointer(self.path)
        if self.value is not MISSING:
            d["value"] = self.value
        return d


def cmap(*pairs) -> Any:
    """A round-trip mapping of (key, value) pairs, in that order (what the migration writes)."""
    from ruamel.yaml.comments import CommentedMap
    m = CommentedMap()
    for k, v in pairs:
        m[k] = v
    return m


def pointer(path) -> str:
    """A JSON pointer: `/spec/trainer/env/-`."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def plain(value: Any) -> Any:
    """Builtin types of a (round-trip) value: dicts, lists, str, int, float, bool, None."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def get(doc: Any, path: tuple) -> Any:
    cur = doc
    for p in path:
        if isinstance(cur, dict) and p in cur:
            cur = cur[p]
        elif isinstance(cur, list) and isinstance(p, int) and 0 <= p < len(cur):
            cur = cur[p]
        else:
            raise PatchError(f"{pointer(path)}: not there")
    return cur


def has(doc: Any, path: tuple) -> bool:
    try:
        get(doc, path)
        return True
    except PatchError:
        return False


def _drop_comments(parent: Any, key: Any) -> Any:
    """A removed key's comments go with it (ruamel keeps them per key in `.ca.items`); returned for a move."""
    ca = getattr(parent, "ca", None)
    return ca.items.pop(key, None) if ca is not None else None


def _split(token: Any) -> tuple[str, str]:
    """(the end-of-line comment, the full comment lines after it) of a ruamel comment token's text."""
    value = token.value
    nl = value.find("\n")
    if nl < 0:
        return value, ""
    return value[:nl + 1], value[nl + 1:]


def _trailing(container: Any, key: Any) -> tuple[list, int] | None:
    """Where ruamel keeps the comment lines after `container[key]`: the slot of its deepest last value."""
    v = container[key]
    if isinstance(v, dict) and v and hasattr(v, "ca"):
        return _trailing(v, list(v.keys())[-1])
    if isinstance(v, list) and v and hasattr(v, "ca"):
        return _trailing(v, len(v) - 1)
    slot = container.ca.items.get(key)
    return (slot, 2) if slot is not None and len(slot) > 2 and slot[2] is not None else None


def normalize_comments(node: Any, root: bool = True) -> Any:
    """ruamel keeps the comment lines above a key (or a list item) at the end of the value before it, however
    deep; move each onto the key it precedes, so that moving or removing a key takes its comment along."""
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken
    if not hasattr(node, "ca"):
        return node
    keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
    for v in (node[k] for k in keys):
        normalize_comments(v, root=False)
    if isinstance(node, dict) and keys and not root and node.ca.comment and len(node.ca.comment) > 1 \
            and node.ca.comment[1]:
        slot = node.ca.items.setdefault(keys[0], [None, None, None, None])
        slot[1] = list(node.ca.comment[1]) + list(slot[1] or [])
        node.ca.comment[1] = None
    if isinstance(node, dict):
        for k in keys:
            # the comment between `key:` and a block map's first key is also kept here: now that key's own
            slot = node.ca.items.get(k)
            if slot is not None and len(slot) > 3 and slot[3] and isinstance(node[k], dict) and node[k] \
                    and hasattr(node[k], "ca"):
                slot[3] = None
    for prev, key in zip(keys, keys[1:]):
        where = _trailing(node, prev)
        if where is None:
            continue
        slot, i = where
        eol, rest = _split(slot[i])
        if not rest.strip():
            continue
        slot[i] = CommentToken(eol, slot[i].start_mark) if eol.strip() else None
        mine = node.ca.items.setdefault(key, [None, None, None, None])
        mine[1] = [CommentToken(rest, CommentMark(0))] + list(mine[1] or [])
    return node


def _add(doc: Any, path: tuple, value: Any) -> None:
    if not path:
        raise PatchError("the root cannot be added")
    parent = get(doc, path[:-1])
    key = path[-1]
    if isinstance(parent, list):
        if key == "-":
            parent.append(value)
        elif isinstance(key, int) and 0 <= key <= len(parent):
            parent.insert(key, value)
        else:
            raise PatchError(f"{pointer(path)}: index out of range")
    elif isinstance(parent, dict):
        parent[key] = value
    else:
        raise PatchError(f"{pointer(path[:-1])}: not an object or an array")


def _remove(doc: Any, path: tuple) -> tuple[Any, Any]:
    """The value removed, and its comments (a map key's)."""
    parent = get(doc, path[:-1])
    key = path[-1]
    value = get(doc, path)
    comments = None
    if isinstance(parent, list):
        del parent[key]
    else:
        comments = _drop_comments(parent, key)
        del parent[key]
    return value, comments


def apply(ops: list[Op], doc: Any) -> Any:
    """Apply `ops` to `doc` in place (and return it), as kustomize's JSON6902 patcher would."""
    for o in ops:
        if o.op == "test":
            if plain(get(doc, o.path)) != plain(o.value):
                raise PatchError(f"test {pointer(o.path)}: {plain(get(doc, o.path))!r} is not {plain(o.value)!r}")
        elif o.op == "add":
            _add(doc, o.path, copy.deepcopy(o.value))
        elif o.op == "replace":
            get(doc, o.path)
            parent = get(doc, o.path[:-1])
            parent[o.path[-1]] = copy.deepcopy(o.value)
        elif o.op == "remove":
            _remove(doc, o.path)
        elif o.op == "move":
            value, comments = _remove(doc, o.src)
            _add(doc, o.path, value)
            parent = get(doc, o.path[:-1])
            if o.keep_comments and comments is not None and isinstance(parent, dict) and hasattr(parent, "ca"):
                parent.ca.items[o.path[-1]] = comments
        elif o.op == "copy":
            _add(doc, o.path, copy.deepcopy(get(doc, o.src)))
        else:
            raise PatchError(f"unknown operation {o.op!r}")
    return doc


def yaml_writer():
    """ruamel.yaml round-trip writer in the house style (2-space maps, lists indented under their key)."""
    from ruamel.yaml import YAML
    y = YAML(typ="rt")
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    y.preserve_quotes = True
    return y


def dump(value: Any) -> str:
    out = io.StringIO()
    yaml_writer().dump(value, out)
    return reindent_comments(out.getvalue())


_BLOCK = ("|", "|-", "|+", ">", ">-", ">+")


def reindent_comments(text: str) -> str:
    """Each comment line at the indentation of the line it precedes (ruamel writes a comment at the column it
    was read from, which is wrong once its key moved); block scalars' lines are left alone."""
    lines = text.splitlines(keepends=True)
    out = list(lines)
    block_at = None            # indentation of the key whose block scalar is being read
    content = []               # (index, is comment) outside block scalars
    for i, ln in enumerate(lines):
        stripped = ln.strip()
        indent = len(ln) - len(ln.lstrip(" "))
        if block_at is not None:
            if not stripped or indent > block_at:
                continue
            block_at = None
        if stripped.startswith("#"):
            content.append((i, True))
            continue
        if stripped:
            content.append((i, False))
            head = stripped.split(" #")[0].rstrip()
            if any(head.endswith((":" + " " + b, "- " + b)) or head == b for b in _BLOCK):
                block_at = indent
    nxt = None
    for i, is_comment in reversed(content):
        if not is_comment:
            ln = lines[i]
            nxt = len(ln) - len(ln.lstrip(" "))
        elif nxt is not None:
            out[i] = " " * nxt + lines[i].lstrip(" ")
    return "".join(out)


def patch_text(ops: list[Op], header: str = "") -> str:
    """The operations as a kustomize JSON6902 patch file: each note a comment line above its operation."""
    from ruamel.yaml.comments import CommentedMap
    parts = [header] if header else []
    for o in ops:
        if o.note:
            parts.extend(f"# {line}".rstrip() + "\n" for line in o.note.splitlines())
        item = CommentedMap()
        for k, v in o.as_dict().items():
            item[k] = v
        parts.append(textwrap.dedent(dump([item])))   # a top-level list starts at column 0
    return "".join(parts)

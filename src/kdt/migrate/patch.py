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

    def as_dict(self) -> dict:
        d: dict = {"op": self.op}
        if self.src is not None:
            d["from"] = pointer(self.src)
        d["path"] = pointer(self.path)
        if self.value is not MISSING:
            d["value"] = self.value
        return d


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


def _drop_comments(parent: Any, key: Any) -> None:
    """A removed key's comments go with it (ruamel keeps them per key in `.ca.items`)."""
    ca = getattr(parent, "ca", None)
    if ca is not None:
        ca.items.pop(key, None)


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


def _remove(doc: Any, path: tuple) -> Any:
    parent = get(doc, path[:-1])
    key = path[-1]
    value = get(doc, path)
    if isinstance(parent, list):
        del parent[key]
    else:
        _drop_comments(parent, key)
        del parent[key]
    return value


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
            _add(doc, o.path, _remove(doc, o.src))
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
    return out.getvalue()


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

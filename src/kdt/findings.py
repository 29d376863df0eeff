"""One finding type for validation, lint, rendering and expansion alike."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

ERROR = "error"
WARNING = "warning"
LEVELS = (ERROR, WARNING)

# Findings that mean the input could not be read or rendered at all: exit 2.
FATAL_RULES = frozenset({"input", "render"})

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")

Path = Sequence[Any]  # JSON path: keys (str) and list indexes (int)


def format_path(path: Path) -> str:
    """`spec.containers[0].env[2].name`; keys with dots or slashes are quoted: labels["app.kubernetes.io/name"]."""
    out = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _PLAIN_KEY.match(str(part)):
            out.append(("." if out else "") + str(part))
        else:
            out.append(f'["{part}"]')
    return "".join(out)


_ITEMS = re.compile(r"items\[(\d+)\]")
_ITEMS_PREFIX = re.compile(r"^(?:items\[\d+\]\.?)+")


def list_item_prefix(path: str) -> tuple:
    """The List-item part (`items[3].items[0]`) a finding's path starts with, as Document.prefix holds it."""
    m = _ITEMS_PREFIX.match(path or "")
    return tuple(x for i in _ITEMS.findall(m.group(0)) for x in ("items", int(i))) if m else ()


@dataclass(frozen=True)
class Finding:
    level: str                 # error | warning
    rule: str                  # rule ID (lint), "schema", "yaml", "render", "input", "expand"
    message: str
    file: str                  # the stream: a path, or a target such as "overlays/ddp"
    doc: int | None = None     # document index in the stream, 0-based
    line: int | None = None    # 1-based
    col: int | None = None     # 1-based
    path: str = ""             # JSON path inside the document
    kind: str = ""
    name: str = ""
    target: str = ""           # overlay or chart values file the stream was rendered from
    source: str = ""           # source file the resource came from, when known
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def location(self) -> str:
        loc = self.file
        if self.line is not None:
            loc += f":{self.line}"
            if self.col is not None:
                loc += f":{self.col}"
        return loc

    @property
    def object(self) -> str:
        return f"{self.kind}/{self.name}" if self.kind else ""

    def to_dict(self) -> dict:
        d = asdict(self)
        if not d["extra"]:
            d.pop("extra")
        return d


def sort_key(f: Finding):
    return (f.file, f.doc if f.doc is not None else -1, f.line or 0, f.col or 0, f.rule, f.message)


def exit_code(findings: Iterable[Finding], warnings_fail: bool = False) -> int:
    """0 clean, 1 invalid (errors; warnings too with warnings_fail), 2 unreadable or unrenderable input."""
    code = 0
    for f in findings:
        if f.rule in FATAL_RULES and f.level == ERROR:
            return 2
        if f.level == ERROR or (warnings_fail and f.level == WARNING):
            code = 1
    return code

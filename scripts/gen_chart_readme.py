#!/usr/bin/env python3
"""Write the values table of a chart's README.md from its values.yaml.

Every key of values.yaml is documented by a `# -- ...` comment block right
above it (continued by further `#` lines); a key without one is documented by
its nearest documented parent. The table (key, type from values.schema.json,
default, description) replaces what lies between the README's
`<!-- values:begin -->` and `<!-- values:end -->` markers.

Exit 0 when written (or, with --check, when the README is current), 1 with
--check when it is stale or a key is undocumented, 2 on bad input.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import yaml  # noqa: E402

from kdt.cli import Parser, invoke  # noqa: E402
from kdt.errors import UsageError  # noqa: E402
from kdt.generated import write_or_check  # noqa: E402
from kdt.paths import ROOT, display  # noqa: E402

BEGIN = "<!-- values:begin -->"
END = "<!-- values:end -->"
_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z0-9_.\-/]+|\"[^\"]+\"):(?:\s|$)")
_DOC = re.compile(r"^(?P<indent>\s*)#\s?--(?:\s+(?P<text>.*))?$")
_CONT = re.compile(r"^(?P<indent>\s*)#\s?(?P<text>.*)$")


@dataclass
class Entry:
    path: str          # dotted: torchrun.maxRestarts
    line: int
    description: str
    type: str
    default: str


def comments(text: str) -> dict[str, tuple[int, str]]:
    """Dotted key path -> (line, description) for every key with a `# --` block above it."""
    out: dict[str, tuple[int, str]] = {}
    stack: list[tuple[int, str]] = []   # (indent, key) of the enclosing mappings
    pending: list[str] | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            pending = None
            continue
        m = _DOC.match(raw)
        if m:
            pending = [(m["text"] or "").strip()]
            continue
        m = _CONT.match(raw)
        if m and raw.lstrip().startswith("#"):
            if pending is not None:
                pending.append(m["text"].strip())
            continue
        m = _KEY.match(raw)
        if not m or raw.lstrip().startswith("-"):
            pending = None
            continue
        indent, key = len(m["indent"]), m["key"].strip('"')
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        if pending is not None:
            out[path] = (n, " ".join(p for p in pending if p))
        pending = None
        stack.append((indent, key))
    return out


def schema_at(schema: dict, path: str) -> dict:
    node = schema
    for part in path.split("."):
        node = (node.get("properties") or {}).get(part)
        if node is None:
            return {}
    return node


def type_of(node: dict, value) -> str:
    if "enum" in node:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "anyOf" in node or "oneOf" in node:
        return " or ".join(type_of(n, value) for n in node.get("anyOf") or node.get("oneOf"))
    t = node.get("type")
    if isinstance(t, list):
        return " or ".join(t)
    if t:
        return t
    return {dict: "object", list: "array", bool: "boolean", int: "integer", float: "number", str: "string"}.get(type(value), "any")


def lookup(values: dict, path: str):
    node = values
    for part in path.split("."):
        node = node[part]
    return node


def leaves(values, prefix: str = ""):
    """Dotted paths of every leaf (a scalar, a list, or an empty mapping)."""
    if isinstance(values, dict) and values:
        for k, v in values.items():
            yield from leaves(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix


def entries(chart: Path) -> tuple[list[Entry], list[str]]:
    """The table's rows, and the problems (undocumented or unknown keys), each located."""
    vfile = chart / "values.yaml"
    try:
        text = vfile.read_text()
        values = yaml.safe_load(text) or {}
        schema = json.loads((chart / "values.schema.json").read_text())
    except (OSError, yaml.YAMLError, json.JSONDecodeError) as e:
        raise UsageError(f"{display(chart)}: {e}".replace("\n", " ")) from None
    docs = comments(text)
    problems: list[str] = []
    rows: list[Entry] = []
    for path, (line, desc) in docs.items():
        try:
            value = lookup(values, path)
        except (KeyError, TypeError):
            problems.append(f"{display(vfile)}:{line}: {path}: documented but not a key of values.yaml")
            continue
        node = schema_at(schema, path)
        if not node:
            problems.append(f"{display(vfile)}:{line}: {path}: not in values.schema.json")
        if not desc:
            problems.append(f"{display(vfile)}:{line}: {path}: empty `# --` description")
        default = json.dumps(value, separators=(", ", ": "))
        rows.append(Entry(path, line, desc, type_of(node, value), default))
    for leaf in leaves(values):
        parts = leaf.split(".")
        if not any(".".join(parts[:i]) in docs for i in range(len(parts), 0, -1)):
            problems.append(f"{display(vfile)}: {leaf}: no `# --` description above it or a parent")
    return rows, problems


def table(rows: list[Entry]) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|")
    out = ["| Key | Type | Default | Description |", "|-----|------|---------|-------------|"]
    for r in rows:
        default = r.default.replace("|", "\\|")
        out.append(f"| `{r.path}` | {r.type} | `{default}` | {cell(r.description)} |")
    return "\n".join(out)


def render_readme(current: str, rows: list[Entry]) -> str:
    if BEGIN not in current or END not in current:
        raise UsageError(f"README.md: the markers {BEGIN} and {END} are missing")
    head, rest = current.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table(rows)}\n{END}{tail}"


def main(argv=None) -> int:
    p = Parser(prog="gen_chart_readme.py", description=__doc__)
    p.add_argument("--chart", default=str(ROOT / "charts" / "trainer"), help="chart folder (default: charts/trainer)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when README.md is not current")
    args = p.parse_args(argv)
    chart = Path(args.chart)
    if not (chart / "Chart.yaml").is_file():
        raise UsageError(f"{args.chart}: not a chart (no Chart.yaml)")
    rows, problems = entries(chart)
    for line in problems:
        print(line, file=sys.stderr)
    readme = chart / "README.md"
    try:
        current = readme.read_text()
    except OSError as e:
        raise UsageError(f"{display(readme)}: {e.strerror}") from None
    if problems and not args.check:
        return 1
    code = write_or_check(readme, render_readme(current, rows), args.check, "gen_chart_readme.py",
                          "values.yaml: run scripts/gen_chart_readme.py", f"{len(rows)} values")
    return code or (1 if problems else 0)


if __name__ == "__main__":
    sys.exit(invoke(main))

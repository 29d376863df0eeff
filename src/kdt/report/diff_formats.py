"""Output of `diff`: terminal (coloured on a TTY), markdown (a PR comment, one collapsible block per target), json."""
from __future__ import annotations

import json
from typing import IO

FORMATS = ("terminal", "markdown", "json")

_RED, _GREEN, _YELLOW, _BOLD, _DIM, _RESET = "\033[31m", "\033[32m", "\033[33m", "\033[1m", "\033[2m", "\033[0m"


_WIDTH = 120


def _text(v) -> str:
    return "null" if v is None else json.dumps(v)


def _value(v, other=None) -> str:
    """A value in at most _WIDTH characters. With `other` (the value it is compared with), a long
    value is cut around the first character where the two differ, so the change stays visible."""
    text = _text(v)
    if len(text) <= _WIDTH:
        return text
    start = 0
    if other is not None:
        o = _text(other)
        first = next((i for i, (a, b) in enumerate(zip(text, o)) if a != b), min(len(text), len(o)))
        start = max(0, first - 40)
    cut = text[start:start + _WIDTH - 6]
    return ("..." if start else "") + cut + ("..." if start + len(cut) < len(text) else "")


def _gib(b: float) -> str:
    return f"{b / 2**30:.3g}Gi"


def _cores(c: float) -> str:
    return f"{c:.3g}"


def summary_line(td) -> str:
    b, a = td.before, td.after

    def pair(x, y, fmt=str):
        return fmt(x) if x == y else f"{fmt(x)} -> {fmt(y)}"
    return (f"nodes {pair(b.nodes, a.nodes)}, GPUs {pair(b.gpus, a.gpus)}, "
            f"CPU {pair(b.cpu, a.cpu, _cores)}, memory {pair(b.memory, a.memory, _gib)}")


def _status_word(td) -> str:
    return {"unchanged": "no change", "changed": f"{len(td.resources)} resource(s) changed",
            "added": "new target", "removed": "target removed", "error": "could not render"}[td.status]


def terminal(diffs, out: IO[str], color: bool = False, base: str = "", head: str = "") -> None:
    def c(code, text):
        return f"{code}{text}{_RESET}" if color else text
    if base or head:
        print(c(_DIM, f"diff {base} .. {head or 'working tree'}"), file=out)
    for td in diffs:
        head_line = f"{td.target}: {_status_word(td)}; {summary_line(td)}"
        print(c(_BOLD, head_line), file=out)
        for f in td.findings:
            print(c(_RED, f"  error: {f.location}: {f.message}"), file=out)
        for r in td.resources:
            if r.op == "added":
                print(c(_GREEN, f"  + {r.label}"), file=out)
            elif r.op == "removed":
                print(c(_RED, f"  - {r.label}"), file=out)
            else:
                print(c(_YELLOW, f"  ~ {r.label}"), file=out)
                for ch in r.changes:
                    if ch.op == "added":
                        print(f"      {ch.path}: " + c(_GREEN, f"+ {_value(ch.new)}"), file=out)
                    elif ch.op == "removed":
                        print(f"      {ch.path}: " + c(_RED, f"- {_value(ch.old)}"), file=out)
                    else:
                        print(f"      {ch.path}: " + c(_RED, _value(ch.old, ch.new)) + " -> " + c(_GREEN, _value(ch.new, ch.old)), file=out)
    changed = sum(1 for td in diffs if td.changed)
    print(f"diff: {changed} of {len(diffs)} target(s) changed", file=out)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(diffs, out: IO[str], base: str = "", head: str = "", **_) -> None:
    changed = sum(1 for td in diffs if td.changed)
    print(f"### Rendered manifests: {changed} of {len(diffs)} target(s) changed", file=out)
    if base or head:
        print(f"\n`{base}` .. `{head or 'working tree'}`", file=out)
    for td in diffs:
        print(f"\n<details{' open' if td.status == 'error' else ''}><summary><b>{td.target}</b>: "
              f"{_status_word(td)}; {summary_line(td)}</summary>\n", file=out)
        for f in td.findings:
            print(f"- **error** `{f.location}`: {_md(f.message)}", file=out)
        for r in td.resources:
            sign = {"added": "➕ added", "removed": "➖ removed", "changed": "✏️ changed"}[r.op]
            print(f"- {sign} `{r.label}`", file=out)
            if r.changes:
                print("\n  | field | before | after |\n  |---|---|---|", file=out)
                for ch in r.changes:
                    old = "" if ch.op == "added" else f"`{_md(_value(ch.old, ch.new))}`"
                    new = "" if ch.op == "removed" else f"`{_md(_value(ch.new, ch.old))}`"
                    print(f"  | `{ch.path}` | {old} | {new} |", file=out)
                print(file=out)
        if not td.resources and not td.findings:
            print("No change.", file=out)
        print("\n</details>", file=out)


def as_json(diffs, out: IO[str], base: str = "", head: str = "", **_) -> None:
    doc = {"base": base, "head": head or None,
           "changed": sum(1 for td in diffs if td.changed),
           "targets": [td.to_dict() for td in diffs]}
    json.dump(doc, out, indent=2, default=str)
    out.write("\n")


def write(diffs, fmt: str, out: IO[str], color: bool = False, base: str = "", head: str = "") -> None:
    if fmt == "terminal":
        terminal(diffs, out, color=color, base=base, head=head)
    elif fmt == "markdown":
        markdown(diffs, out, base=base, head=head)
    else:
        as_json(diffs, out, base=base, head=head)

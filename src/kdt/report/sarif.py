"""SARIF 2.1.0, for GitHub code scanning (`github/codeql-action/upload-sarif`).

One run; the driver lists a rule (id, description, default level) for every
rule the findings use and every rule the tool documents. Each result has one
physical location:
- the source file of the resource when it is known (kustomize resource file,
  helm template), its region found by locating the same JSON path in that
  file's document of the same kind (and name when it is unchanged), or the
  resource's first line there when the path is not in the source (a patch
  added it); a field is located at its key, where its line starts;
- otherwise the file that was validated (its own line and column);
- otherwise the target (an overlay's kustomization file, a values file).
URIs are relative to the repository root (`uriBaseId` %SRCROOT%) when inside it.
The rendered location, document index, JSON path and kind/name travel in the
result's `properties`.
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..paths import ROOT

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFO_URI = "https://github.com/torch-k8s/trainer"
_LEVEL = {"error": "error", "warning": "warning"}


@functools.lru_cache(maxsize=256)
def _source_docs(path: str):
    from ..documents import load_stream
    try:
        text = (ROOT / path).read_text() if not Path(path).is_absolute() else Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        return []
    return load_stream(text, path)[0]


def _source_region(f) -> tuple[int, int] | None:
    docs = [d for d in _source_docs(f.source) if d.kind == f.kind]
    match = [d for d in docs if d.name == f.name] or (docs if len(docs) == 1 else [])
    if not match:
        return None
    doc = match[0]
    path = _parse_path(f.path)
    line, col, exact = doc.locate(path)
    if not exact:
        line, col, _ = doc.locate(())
    elif path and isinstance(path[-1], str):
        # The field's key, where its `name: value` line starts.
        pos = doc.key_position(path[:-1], path[-1])
        if pos:
            line, col = pos
    return line, col


def _parse_path(text: str) -> list:
    """Inverse of findings.format_path: `a.b[0]["x.y"]` -> ['a', 'b', 0, 'x.y']."""
    out: list = []
    i, n = 0, len(text)
    buf = ""
    while i < n:
        c = text[i]
        if c == ".":
            if buf:
                out.append(buf)
            buf = ""
            i += 1
        elif c == "[":
            if buf:
                out.append(buf)
            buf = ""
            if text.startswith('["', i):
                j = text.index('"]', i + 2)
                out.append(text[i + 2:j])
                i = j + 2
            else:
                j = text.index("]", i)
                out.append(int(text[i + 1:j]))
                i = j + 1
        else:
            buf += c
            i += 1
    if buf:
        out.append(buf)
    return out


def _artifact(path: str) -> dict:
    p = Path(path)
    if p.is_absolute():
        try:
            return {"uri": quote(str(p.resolve().relative_to(ROOT))), "uriBaseId": "%SRCROOT%"}
        except ValueError:
            return {"uri": p.resolve().as_uri()}
    return {"uri": quote(str(p)), "uriBaseId": "%SRCROOT%"}


def _target_file(target: str) -> str:
    p = ROOT / target
    if p.is_dir():
        for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
            if (p / name).is_file():
                return f"{target.rstrip('/')}/{name}"
    return target


def _location(f) -> dict:
    region = None
    if f.source:
        uri_path = f.source
        try:
            region = _source_region(f)
        except (ValueError, IndexError):
            region = None
        region = region or (1, 1)
    elif not f.target and f.file and not f.file.startswith("<"):
        uri_path = f.file
        region = (f.line, f.col) if f.line else None
    else:
        uri_path = _target_file(f.target or f.file)
        region = None
    phys: dict = {"artifactLocation": _artifact(uri_path)}
    if region:
        reg = {"startLine": int(region[0])}
        if region[1]:
            reg["startColumn"] = int(region[1])
        phys["region"] = reg
    loc: dict = {"physicalLocation": phys}
    if f.kind or f.path:
        name = f"{f.kind}/{f.name}" if f.kind else ""
        loc["logicalLocations"] = [{"fullyQualifiedName": f"{name}:{f.path}" if f.path else name, "kind": "object"}]
    return loc


def _rule_text(doc: str) -> str:
    return " ".join((doc or "").split()) or "(no description)"


def write(findings, tool: str, out=sys.stdout, documents=None, targets=None, rules=None, **_):
    rules = dict(rules or {})
    for f in findings:
        rules.setdefault(f.rule, "")
    ids = sorted(rules)
    index = {r: i for i, r in enumerate(ids)}
    default_level = {}
    for f in findings:
        if f.level == "error" or f.rule not in default_level:
            default_level[f.rule] = f.level
    driver = {
        "name": tool,
        "version": __version__,
        "informationUri": INFO_URI,
        "rules": [{
            "id": r,
            "name": r,
            "shortDescription": {"text": _rule_text(rules[r]).split(". ")[0][:200]},
            "fullDescription": {"text": _rule_text(rules[r])},
            "defaultConfiguration": {"level": _LEVEL.get(default_level.get(r, "error"), "error")},
        } for r in ids],
    }
    results = []
    for f in findings:
        props = {k: v for k, v in {
            "target": f.target, "file": f.file, "document": f.doc, "line": f.line, "column": f.col,
            "jsonPath": f.path, "kind": f.kind, "name": f.name, "source": f.source}.items() if v not in ("", None)}
        if f.extra:
            props.update({k: v for k, v in f.extra.items() if isinstance(v, (str, int, float, bool))})
        results.append({
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": _LEVEL.get(f.level, "warning"),
            "message": {"text": f"{f.path}: {f.message}" if f.path else f.message},
            "locations": [_location(f)],
            "properties": props,
        })
    run = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": ROOT.as_uri() + "/"}},
        "results": results,
        "properties": {"documents": documents, "targets": list(targets or [])},
    }
    payload = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    json.dump(payload, out, indent=2)
    out.write("\n")

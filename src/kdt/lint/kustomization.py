"""Reading kustomization trees for the overlay-hygiene rules.

For each kustomization reached from a target (the overlay, the local folders in
its `resources`, its `components`), the patches it declares and the resources
they apply to: the rendered output of each resource folder (pinned kubectl, one
call per folder per run) plus local resource files, plus the resources of the
components it includes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from .. import targets as T
from ..documents import Document, load_all, load_stream
from ..paths import display


@dataclass
class Patch:
    kfile: Document          # the kustomization document (for locations)
    path: tuple              # JSON path of the entry in the kustomization
    target: dict | None      # selector (group, version, kind, name, namespace, labelSelector, annotationSelector)
    ops: list | None         # JSON6902 operations, when the patch is one
    smp: list[dict] = field(default_factory=list)   # strategic-merge patch documents
    source: str = ""         # file the patch text came from ("" when inline)


@dataclass
class Layer:
    folder: Path
    kfile: Document | None
    patches: list[Patch]
    inputs: list[dict]       # resources the patches apply to




def _yaml_docs(text: str) -> list:
    docs = load_all(text)
    if len(docs) == 1 and isinstance(docs[0], list) and docs[0] and all(isinstance(x, dict) and "op" in x for x in docs[0]):
        return docs     # one JSON6902 patch
    return docs


def kustomization_file(folder: Path) -> Path | None:
    return next((folder / f for f in T.KUSTOMIZATION_FILES if (folder / f).is_file()), None)


def rendered(folder: Path) -> list[dict]:
    """The objects a nested kustomization (a base) renders to, through kdt.render (memoized there)."""
    from ..render import render
    r = render(T.Target(display(folder), T.KUSTOMIZE, folder.resolve()))
    return [d.data for d in r.documents] if r.ok else []


def _resources(folder: Path, spec: dict) -> list[dict]:
    out: list[dict] = []
    for entry in spec.get("resources") or []:
        if not isinstance(entry, str) or "://" in entry or entry.startswith("github.com"):
            continue
        p = folder / entry
        if p.is_dir():
            out.extend(rendered(p))
        elif p.is_file():
            out.extend(d for d in _yaml_docs(p.read_text(errors="replace")) if isinstance(d, dict))
    return out


def _patch_text(folder: Path, entry: Any) -> tuple[str, str]:
    if isinstance(entry, dict):
        if "path" in entry:
            p = folder / str(entry["path"])
            return (p.read_text(errors="replace") if p.is_file() else ""), display(p)
        return str(entry.get("patch") or ""), ""
    if isinstance(entry, str):
        p = folder / entry
        if "\n" not in entry and p.is_file():
            return p.read_text(errors="replace"), display(p)
        return entry, ""
    return "", ""


def _patches(folder: Path, spec: dict, kdoc: Document) -> list[Patch]:
    out: list[Patch] = []
    for key in ("patches", "patchesJson6902", "patchesStrategicMerge"):
        for i, entry in enumerate(spec.get(key) or []):
            text, src = _patch_text(folder, entry)
            parsed = _yaml_docs(text) if text else []
            ops = next((p for p in parsed if isinstance(p, list)), None)
            smp = [p for p in parsed if isinstance(p, dict)]
            target = entry.get("target") if isinstance(entry, dict) and isinstance(entry.get("target"), dict) else None
            out.append(Patch(kdoc, (key, i), target, ops, smp, src))
    return out


def layers(folder: Path, seen: set | None = None) -> list[Layer]:
    """This kustomization and every local one it reaches, each with its patches and their inputs."""
    seen = set() if seen is None else seen
    folder = folder.resolve()
    if folder in seen:
        return []
    seen.add(folder)
    kf = kustomization_file(folder)
    if kf is None:
        return []
    docs, _ = load_stream(kf.read_text(errors="replace"), display(kf))
    if not docs:
        return []
    kdoc = docs[0]
    spec = kdoc.data
    inputs = _resources(folder, spec)
    out: list[Layer] = []
    comp_inputs: list[dict] = []
    # Components run in order on the accumulated resources (kustomize
    # api/internal/target/kusttarget.go runComponents): component i sees the
    # kustomization's resources and those of components 0..i.
    for c in spec.get("components") or []:
        cdir = folder / str(c)
        ckf = kustomization_file(cdir) if cdir.is_dir() else None
        if ckf is None:
            continue
        cdocs, _ = load_stream(ckf.read_text(errors="replace"), display(ckf))
        if not cdocs:
            continue
        cres = _resources(cdir, cdocs[0].data)
        comp_inputs.extend(cres)
        seen.add(cdir.resolve())
        out.append(Layer(cdir, cdocs[0], _patches(cdir, cdocs[0].data, cdocs[0]), inputs + list(comp_inputs)))
    out.insert(0, Layer(folder, kdoc, _patches(folder, spec, kdoc), inputs + comp_inputs))
    for entry in spec.get("resources") or []:
        if isinstance(entry, str) and (folder / entry).is_dir():
            out.extend(layers(folder / entry, seen))
    return out


def _group_version(api_version: str) -> tuple[str, str]:
    return tuple(api_version.split("/", 1)) if "/" in api_version else ("", api_version)  # type: ignore


def _rx(pattern: str, value: str) -> bool:
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return pattern == value


def _labels_match(selector: str, labels: dict) -> bool:
    for term in str(selector).split(","):
        term = term.strip()
        if not term:
            continue
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if str(labels.get(k.strip().rstrip("="))) != v.strip():
                return False
        elif " in " in term or " notin " in term:
            continue
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def selects(target: dict, res: dict) -> bool:
    meta = res.get("metadata") or {}
    group, version = _group_version(str(res.get("apiVersion", "")))
    checks = [("kind", str(res.get("kind", ""))), ("name", str(meta.get("name", ""))),
              ("namespace", str(meta.get("namespace", "") or ""))]
    for key, value in checks:
        if target.get(key) and not _rx(str(target[key]), value):
            return False
    if target.get("group") is not None and target.get("group") != "" and target["group"] != group:
        return False
    if target.get("version") and target["version"] != version:
        return False
    if target.get("labelSelector") and not _labels_match(target["labelSelector"], meta.get("labels") or {}):
        return False
    if target.get("annotationSelector") and not _labels_match(target["annotationSelector"], meta.get("annotations") or {}):
        return False
    return True


def smp_target(patch: dict) -> dict:
    meta = patch.get("metadata") or {}
    group, version = _group_version(str(patch.get("apiVersion", "")))
    t = {"kind": patch.get("kind"), "name": re.escape(str(meta.get("name", "")))}
    if meta.get("namespace"):
        t["namespace"] = re.escape(str(meta["namespace"]))
    return t


def pointer(path: str) -> list[str]:
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def exists(res: Any, parts: list[str]) -> bool:
    cur = res
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                return False
            cur = cur[p]
        elif isinstance(cur, list):
            if not p.isdigit() or int(p) >= len(cur):
                return False
            cur = cur[int(p)]
        else:
            return False
    return True

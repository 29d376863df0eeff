"""Reading kustomization trees for the overlay-hygiene rules.

For each kustomization reached from a target (the overlay, the local folders in
its `resources`, its `components`), the patches it declares and the resources
they apply to: the rendered output of each resource folder (pinned kubectl, one
call per folder per run) plus local resource files, plus the resources of the
components it includes.
"""
from __future__ import annotations

import re
import threading
from concurrent.futures import Future
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
    # The kustomizations from the one that can be built (the layer's own, or the one that includes this
    # Component) down to this layer's folder: what renders with and without one of its patches.
    chain: tuple = ()
    kpath: Path | None = None   # the layer's kustomization file




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


_layers: dict = {}


def layers(folder: Path, seen: set | None = None) -> list[Layer]:
    """This kustomization and every local one it reaches, each with its patches and their inputs (once per
    folder and run)."""
    if seen is None:
        key = folder.resolve()
        if key not in _layers:
            _layers[key] = layers(folder, set())
        return _layers[key]
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
        out.append(Layer(cdir, cdocs[0], _patches(cdir, cdocs[0].data, cdocs[0]), inputs + list(comp_inputs),
                         (folder, cdir.resolve()), ckf))
    out.insert(0, Layer(folder, kdoc, _patches(folder, spec, kdoc), inputs + comp_inputs, (folder,), kf))
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


_effects: dict = {}
_effects_lock = threading.Lock()


def unmatched(layer: Layer, patch: Patch) -> list[dict]:
    """The selectors of a patch (its target, or each strategic-merge document's kind and name) that select
    none of the resources the layer includes, as far as reading them can tell."""
    selectors = [patch.target] if patch.target else [smp_target(s) for s in patch.smp]
    return [t for t in selectors if not any(selects(t, r) for r in layer.inputs)]


def patch_changes_render(layer: Layer, patch: Patch) -> bool | None:
    """Whether removing the patch from its kustomization changes what the kustomization that can be built
    (`layer.chain[0]`) renders: rendered with and without it (kdt.render.render_edited), once per patch and
    run, whatever threads ask. None when that cannot be known (a render fails, the kustomization cannot be
    rewritten)."""
    key = (str(layer.kpath), patch.path)
    with _effects_lock:
        future = _effects.get(key)
        owner = future is None
        if owner:
            future = _effects[key] = Future()
    if owner:
        try:
            future.set_result(_with_and_without(layer, patch))
        except BaseException as exc:       # the waiters get it too
            future.set_exception(exc)
    return future.result()


def _with_and_without(layer: Layer, patch: Patch) -> bool | None:
    import yaml
    from ..render import render, render_edited
    spec = layer.kfile.data if layer.kfile is not None else None
    entries = spec.get(patch.path[0]) if isinstance(spec, dict) else None
    root = Path(layer.chain[0]) if layer.chain else None
    if root is None or layer.kpath is None or not isinstance(entries, list) or patch.path[1] >= len(entries):
        return None
    full = render(T.Target(display(root), T.KUSTOMIZE, root.resolve()))
    if not full.ok:
        return None
    without = dict(spec)
    without[patch.path[0]] = [e for i, e in enumerate(entries) if i != patch.path[1]]
    text, failure = render_edited(root, {layer.kpath: yaml.safe_dump(without, sort_keys=False)})
    return None if failure is not None else text != full.text


def prefetch_patch_effects(folders: list[Path], jobs: int) -> None:
    """Render, `jobs` at a time, every patch of these kustomizations whose selector the static check cannot
    place (what kustomize-patch-target then asks, answered from the cache)."""
    from concurrent.futures import ThreadPoolExecutor
    asks = [(layer, p) for folder in folders for layer in layers(folder) for p in layer.patches if unmatched(layer, p)]
    if jobs > 1 and len(asks) > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(lambda a: patch_changes_render(*a), asks))

"""Merge helpers shared by the operator modules, each recording where a value came from.

Every helper works on plain dicts/lists and on ruamel.yaml's CommentedMap /
CommentedSeq alike (they are dict and list subclasses), so that a preview built
from round-trip-loaded YAML keeps the source's comments where values came from it.
Nothing here mutates an argument other than `base`.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

# Trainer applies podTemplateOverrides (2.1: pkg/runtime/core/trainingruntime.go
# mergePodTemplateOverrides) and runtimePatches (2.2+: mergeRuntimePatches) as
# Kubernetes strategic merge patches against corev1.PodTemplateSpec / batchv1.JobTemplateSpec.
# patchMergeKey of the lists involved (k8s.io/api core/v1 types.go); any other list
# is replaced whole (tolerations, command, args, ...).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "volumes": "name", "env": "name", "imagePullSecrets": "name",
    "schedulingGates": "name", "resourceClaims": "name",
    "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "ports": "containerPort", "hostAliases": "ip",
}

Path = tuple


@dataclass
class Trace:
    """(output path, origin) for every field an operator injected or an override set."""

    entries: list[tuple[Path, str]] = field(default_factory=list)

    def note(self, path: Path, origin: str) -> None:
        self.entries.append((tuple(path), origin))

    def origin_of(self, path: Path) -> str | None:
        """The origin recorded for `path` or its nearest recorded ancestor (last one wins)."""
        path = tuple(path)
        best = None
        for p, o in self.entries:
            if path[: len(p)] == p and (best is None or len(p) >= len(best[0])):
                best = (p, o)
        return best[1] if best else None


def clone(value: Any) -> Any:
    return copy.deepcopy(value)


def ensure_list(parent: dict, key: str) -> list:
    value = parent.get(key)
    if not isinstance(value, list):
        value = []
        parent[key] = value
    return value


def ensure_dict(parent: dict, key: str) -> dict:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def find(items: Any, key: str, value: Any) -> int:
    """Index of the mapping in `items` whose `key` equals `value`, or -1."""
    if isinstance(items, list):
        for i, item in enumerate(items):
            if isinstance(item, dict) and item.get(key) == value:
                return i
    return -1


def strategic_merge(base: dict, patch: dict, path: Path, trace: Trace, origin: str) -> dict:
    """Kubernetes strategic merge of `patch` into `base` (mutated and returned).

    Maps merge recursively; lists named in MERGE_KEYS merge item by item on their
    key; any other list, and every scalar, is replaced; a null deletes the key.
    """
    for key, pv in patch.items():
        if isinstance(key, str) and key.startswith("$"):
            continue
        p = path + (key,)
        bv = base.get(key)
        if pv is None:
            if key in base:
                del base[key]
                trace.note(p, origin + " (removed)")
            continue
        if isinstance(pv, dict) and isinstance(bv, dict):
            strategic_merge(bv, pv, p, trace, origin)
        elif (isinstance(pv, list) and isinstance(bv, list) and key in MERGE_KEYS
              and all(isinstance(i, dict) for i in pv)):
            merge_list(bv, pv, MERGE_KEYS[key], p, trace, origin)
        else:
            base[key] = clone(pv)
            trace.note(p, origin)
    return base


def merge_list(base: list, patch: list, key: str, path: Path, trace: Trace, origin: str,
               keep_order: bool = False) -> None:
    """A strategic merge of the list `patch` into `base` on `key`, in the order the API machinery gives.

    k8s.io/apimachinery pkg/util/strategicpatch/patch.go mergeSlice (v0.36.2, the release Trainer v2.3.0
    pins; v2.1.0 pins v0.34.1): each patch item merges into the base item with its key or is appended
    (mergeSliceWithoutSpecialElements); then normalizeElementOrder puts the items the patch names in the
    patch's order and the others (serverOnly) in the base's, and mergeSortedSlice interleaves them: a base
    item goes first only while it stands before the next patch item in the base. So a patch item that is
    new goes before every base item not yet placed: base [A, C] patched with [B] is [B, A, C]; patched with
    [C, B] it is [A, C, B]. `keep_order`: the list keeps the base's order, new items last (Trainer v2.3.0
    mergeRuntimePatches sorts replicatedJobs back into the runtime's order after its merge). The trace
    entries under `path` follow their items to their new places.
    """
    items = [p for p in patch if isinstance(p, dict)]
    base_keys = [b.get(key) if isinstance(b, dict) else None for b in base]
    work = list(base)
    merged_from: dict[int, list] = {}      # id of an item of `work` -> the patch items merged into it
    for item in items:
        i = find(work, key, item.get(key))
        if i < 0:
            work.append(clone(item))
            merged_from[id(work[-1])] = []
        else:
            merged_from.setdefault(id(work[i]), []).append(item)
    if keep_order:
        order = work
    else:
        patch_keys = [p.get(key) for p in items]
        named = [x for x in work if isinstance(x, dict) and x.get(key) in patch_keys]
        named.sort(key=lambda x: patch_keys.index(x.get(key)))          # normalizeSliceOrder(patch order)
        server_only = [x for x in work if not (isinstance(x, dict) and x.get(key) in patch_keys)]
        order, i, j = [], 0, 0
        while i < len(server_only) or j < len(named):                    # mergeSortedSlice
            if j >= len(named):
                order.append(server_only[i]); i += 1
                continue
            if i >= len(server_only):
                order.append(named[j]); j += 1
                continue
            lk = server_only[i].get(key) if isinstance(server_only[i], dict) else None
            rk = named[j].get(key)
            if lk in base_keys and rk in base_keys and base_keys.index(lk) < base_keys.index(rk):
                order.append(server_only[i]); i += 1
            else:
                order.append(named[j]); j += 1
    originals = {id(b) for b in base}
    moved = {old: next(n for n, x in enumerate(order) if x is item) for old, item in enumerate(base)}
    _reindex(trace, path, moved)
    base[:] = order
    for n, x in enumerate(base):
        froms = merged_from.get(id(x))
        if froms is None:
            continue                       # a base item the patch does not name
        if id(x) not in originals:
            trace.note(path + (n,), origin)     # a new item (later patch items with its key merge into it)
        for item in froms:
            strategic_merge(x, item, path + (n,), trace, origin)


def _reindex(trace: Trace, path: Path, moved: dict) -> None:
    """Trace entries under path + (old index,) moved to path + (new index,)."""
    n = len(path)
    for k, (p, o) in enumerate(trace.entries):
        if len(p) > n and p[:n] == path and isinstance(p[n], int) and p[n] in moved and moved[p[n]] != p[n]:
            trace.entries[k] = (path + (moved[p[n]],) + p[n + 1:], o)


def upsert(items: list, key: str, entry: dict, path: Path, trace: Trace, origin: str) -> int:
    """Replace the item with the same `key` or append `entry` (Trainer's apply.Upsert*); its index."""
    i = find(items, key, entry.get(key))
    if i < 0:
        items.append(entry)
        i = len(items) - 1
    else:
        items[i] = entry
    trace.note(path + (i,), origin)
    return i


def append(items: list, entry: dict, path: Path, trace: Trace, origin: str) -> int:
    """Append (the Training Operator appends env and init containers without looking)."""
    items.append(entry)
    trace.note(path + (len(items) - 1,), origin)
    return len(items) - 1


def put(parent: dict, key: str, value: Any, path: Path, trace: Trace, origin: str) -> None:
    parent[key] = value
    trace.note(path + (key,), origin)

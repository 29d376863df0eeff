"""A JSON6902 `replace` names a path that exists in the resource it patches.

RFC 6902 says replacing a missing path is an error. The pinned kustomize
(v5.8) fails when a parent of the path is missing, but when only the last key
is missing it adds the value silently: a `replace` of
`/spec/pytorchReplicaSpecs/Worker/restartPolicy` against a base that never set
it "works", so a patch meant to change a value can hide that the base was
renamed or restructured. Use `add` when the value is new. Paths created by an earlier `add` of the
same patch count as existing.
"""
from ...findings import ERROR
from ..kustomization import exists, layers, pointer, selects

ID = "kustomize-json6902-replace"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("kustomize adds the value instead of failing: the patch silently does something else than it says.")
SCOPE = "target"


def check(docs, ctx):
    return ()


def check_target(target, docs, ctx):
    for layer in layers(target.path):
        for p in layer.patches:
            if not p.ops or not p.target:
                continue
            matched = [r for r in layer.inputs if selects(p.target, r)]
            if not matched:
                continue
            added: list[list[str]] = []
            for i, op in enumerate(p.ops):
                if not isinstance(op, dict):
                    continue
                parts = pointer(str(op.get("path", "")))
                if op.get("op") in ("add", "copy", "move"):
                    added.append(parts)
                if op.get("op") != "replace":
                    continue
                if any(parts[:len(a)] == a for a in added):
                    continue
                missing = [r for r in matched if not exists(r, parts)]
                if missing:
                    r = missing[0]
                    who = f"{r.get('kind')}/{(r.get('metadata') or {}).get('name')}"
                    where = f" in {p.source}" if p.source else ""
                    yield p.kfile.finding(ID, f"replace of {op.get('path')} (op {i}{where}): the path does not exist in "
                                              f"{who}; kustomize would add it silently (use add, or fix the path)",
                                          p.path)

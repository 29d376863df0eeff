"""A kustomize patch's target matches at least one resource.

kustomize applies a `patches` / `patchesJson6902` entry to every resource its
`target` selects (kind, name and namespace are regular expressions) and a
strategic-merge patch to the resource with its kind and name; when nothing
matches it does nothing and says nothing (`patches`), so a renamed base or a
typo in the target silently drops the change. Checked for every kustomization
a target reaches (overlay, bases, components) that renders: a patch whose
target selects none of the resources the kustomization includes is then
rendered with and without (kustomize itself decides: a kustomization rewritten
without that entry, in a shadow of the tree), and reported only when the
render is the same without it. A kustomization that does not render gets its
render error only.
"""
from ...findings import ERROR
from ..kustomization import layers, patch_changes_render, unmatched

ID = "kustomize-patch-target"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("kustomize drops a patch that matches nothing without a word: the change never reaches the cluster.")
SCOPE = "target"


def check(docs, ctx):
    return ()


def _describe(t: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in t.items() if v not in (None, "")) or "(empty selector)"


def check_target(target, docs, ctx):
    for layer in layers(target.path):
        for p in layer.patches:
            missed = unmatched(layer, p)
            if not missed or patch_changes_render(layer, p) is not False:
                continue
            for t in missed:
                where = f" (patch file {p.source})" if p.source else ""
                yield p.kfile.finding(ID, f"patch target {_describe(t)} matches no resource of this "
                                          f"kustomization: it renders the same without this patch{where}",
                                      p.path + (("target",) if p.target else ()))

"""A pool of schema definitions (the Kubernetes release's, Trainer's, a set of CRDs'), below every reader of
schemas: kdt.schemas, kdt.schemas.crds and kdt.schemas.crd_sets import it, it imports none of them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Pool:
    """A set of definitions and the root definition of each (apiVersion, kind) it holds."""
    name: str
    defs: dict
    kinds: dict        # apiVersion -> kind -> definition name
    # A CRD's (kdt.schemas.crds): definition name -> what the API server does to the object before validating
    # it (its null pruning and defaults), and -> the trie of its CEL rules and formats (kdt.schemas.crd_rules.trie)
    admit: dict = field(default_factory=dict)
    rules: dict = field(default_factory=dict)


def refs(node: Any, out: list) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            out.append(ref)
        for v in node.values():
            if isinstance(v, (dict, list)):
                refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)

"""What an expansion produces: one object the operator will create, and where its fields came from."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

from ..documents import Document
from .merge import Trace


@dataclass
class Expanded:
    """An object the operator (or a built-in controller) creates from a rendered document."""

    obj: dict                      # the object, as the operator will create it
    source: Document               # the document it is made from (TrainJob, PyTorchJob, StatefulSet)
    base: Any = None               # the unmerged counterpart (runtime template, replica template)
    base_doc: Document | None = None
    base_path: tuple = ()          # where `base` sits in base_doc
    trace: Trace = field(default_factory=Trace)
    facts: dict = field(default_factory=dict)   # e.g. rank, world size, pod names (for summaries)

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name", ""))

    @property
    def target(self) -> str:
        return self.source.target


class Loader:
    """Fresh copies of a document's data: plain (from Document.data) or round-trip (ruamel, comments kept).

    Each document is parsed at most once; every call returns a deep copy, so no
    expansion can change a rendered document.
    """

    def __init__(self, roundtrip: bool = False) -> None:
        self.roundtrip = roundtrip
        self._cache: dict[int, Any] = {}
        self._yaml = None

    def __call__(self, doc: Document) -> Any:
        if not self.roundtrip:
            return copy.deepcopy(doc.data)
        key = id(doc)
        if key not in self._cache:
            if self._yaml is None:
                from ruamel.yaml import YAML
                self._yaml = YAML(typ="rt")
            try:
                self._cache[key] = self._yaml.load(doc.text) if doc.text.strip() else None
            except Exception:  # ruamel disagrees with the loader that already accepted it
                self._cache[key] = None
            if not isinstance(self._cache[key], dict):
                self._cache[key] = doc.data
        return copy.deepcopy(self._cache[key])


LoadFn = Callable[[Document], Any]

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
        """metadata.name; a pod named by generateName is called by its hostname (what DNS resolves)."""
        meta = self.obj.get("metadata") or {}
        if meta.get("name"):
            return str(meta["name"])
        return str((self.obj.get("spec") or {}).get("hostname") or meta.get("generateName") or "")

    @property
    def target(self) -> str:
        return self.source.target


@dataclass
class Held:
    """A job the operator accepts but creates nothing for yet (suspended, left to another controller), and
    why; the merge preview shows it in place of the objects. `path` is where the reason is written."""

    source: Document
    reason: str
    path: tuple = ()
    facts: dict = field(default_factory=dict)


@dataclass
class Limit:
    """How many objects of one group (the pods of a replica type or of a Job, the Jobs of a replicated job)
    a preview builds: every one up to `whole`; past it the first `head` and the last `tail`, the others
    counted, so time and memory do not grow with the counts. `whole=None` builds everything (kdt run)."""

    whole: int | None = 128
    head: int = 4
    tail: int = 2

    def cut(self, n: int) -> bool:
        return self.whole is not None and n > self.whole

    def shown(self, n: int) -> list[int]:
        if n <= 0:
            return []
        if not self.cut(n):
            return list(range(n))
        return list(range(self.head)) + list(range(n - self.tail, n))

    def indices(self, n: int, elided: list, what: str) -> list[int]:
        """The indices of `n` objects to build; a gap is recorded in `elided` as (what, first, last, count)."""
        shown = self.shown(n)
        if self.cut(n):
            elided.append((what, self.head, n - self.tail - 1, n - self.head - self.tail))
        return shown


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

"""What a migration of one object is: the patch, the objects it adds, and what the proof may find."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....documents import Document
from ....findings import WARNING, Finding
from ... import migration as M
from .compare import Claim
from .patch import Op

RULE = "migrate"


@dataclass
class Plan:
    """One document's migration (kdt.kinds: the `migrate` hook of its kind)."""
    doc: Document                     # the rendered document it migrates
    version: str                      # the Trainer release written for: "2.1" or "2.3" (2.2 and later)
    ops: list[Op] = field(default_factory=list)        # JSON patch of the rendered object
    added: list[Any] = field(default_factory=list)     # new objects (a generated runtime), round-trip maps
    findings: list[Finding] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    done: list[tuple[str, str]] = field(default_factory=list)   # (row, what the migration did)
    by: str = "node"                  # how the proof pairs pods: "node" (index) or "key" (same place)
    after_key: tuple = ()             # (group, kind, namespace, name) of the object after the patch
    runtime: str = ""                 # the runtime the TrainJob runs on, and whether it was generated
    compare: bool = True              # False for an object with no pods of its own (a runtime)
    facts: dict = field(default_factory=dict)   # what other plans read (the group restarts of a PyTorchJob)
    extra: list = field(default_factory=list)   # plans of other documents this one's move changes (their selectors)
    selectors: list = field(default_factory=list)   # paths of the selectors the move rewrote: the proof evaluates them
    watch: list = field(default_factory=list)       # paths of the others (not rewritten) that may select the job's pods

    def note(self, row_id: str, text: str) -> None:
        M.row(row_id)                 # a row of the table, or a KeyError here
        self.done.append((row_id, text))

    def finding(self, row_id: str, message: str, path: tuple = (), claims: tuple = (), nodes=None,
                level: str = WARNING) -> None:
        """A located finding for what has no equivalent (row `row_id`), and the differences it explains."""
        M.row(row_id)
        f = self.doc.finding(RULE, f"{message} [docs/migration.md#{row_id}]", path, level=level, row=row_id)
        self.findings.append(f)
        for p in claims:
            self.claims.append(Claim(row_id, tuple(p), nodes, f.message))

    def claim(self, row_id: str, *paths: tuple, nodes=None, after=None) -> None:
        """Differences the migration makes on purpose, explained by row `row_id` (each path, when `after` is
        given, only when it ends with that value)."""
        M.row(row_id)
        for p in paths:
            self.claims.append(Claim(row_id, tuple(p), nodes, "", after))

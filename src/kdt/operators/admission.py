"""What an operator's admission webhook refuses, as data both lint and the merge preview report.

Each operator module (training_operator_v1, trainer_v2) has a function that reads an object as its
validating webhook does and returns `Rejection`s: the lint rule that reports it (its ID, a module of
kdt/lint/rules), the JSON path and the message. Lint yields them as findings of that rule; the merge
preview yields the same findings and creates nothing for a refused object, so `make preview` shows
each once. A rejection with `warning=True` is a webhook warning: the object is admitted.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rejection:
    rule: str            # the lint rule that reports it (kdt/lint/rules/<rule with _>.py)
    path: tuple          # JSON path in the object refused
    message: str
    warning: bool = False


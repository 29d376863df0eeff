"""Faults a local run injects: `--kill POD[/rank=N]@WHEN[:SIGNAL]` and `--lose POD@WHEN`.

WHEN is seconds since the run started (`12`, `12.5`) or `step=N` (once any rank
logged training step N). `--kill POD` signals the container's main process
(SIGKILL, the default, ends the whole container: every process in it dies, as
when a container's PID 1 dies); `/rank=N` signals only the worker of global rank
N (torchrun restarts its group). `--lose POD` loses the whole pod, as when its
node goes away: every process killed, and the controller decides what comes next.
"""
from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from ..errors import UsageError

_SPEC = re.compile(r"^(?P<pod>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)(/rank=(?P<rank>\d+))?@"
                   r"(?P<when>step=\d+|\d+(\.\d+)?)(:(?P<sig>SIG[A-Z]+))?$")
SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT}


@dataclass
class Fault:
    action: str               # kill | lose
    pod: str
    rank: int | None
    at_seconds: float | None
    at_step: int | None
    sig: int
    spec: str
    done: bool = False

    def due(self, seconds: float, max_step: int) -> bool:
        if self.done:
            return False
        if self.at_seconds is not None:
            return seconds >= self.at_seconds
        return max_step >= (self.at_step or 0)


def parse(spec: str, action: str) -> Fault:
    m = _SPEC.match(spec.strip())
    if not m or (action == "lose" and (m.group("rank") or m.group("sig"))):
        form = "POD[/rank=N]@SECONDS|step=N[:SIGKILL|SIGTERM]" if action == "kill" else "POD@SECONDS|step=N"
        raise UsageError(f"--{action} {spec!r}: expected {form}")
    sig = m.group("sig") or "SIGKILL"
    if sig not in SIGNALS:
        raise UsageError(f"--{action} {spec!r}: signal {sig} is not one of {', '.join(SIGNALS)}")
    when = m.group("when")
    return Fault(action, m.group("pod"), int(m.group("rank")) if m.group("rank") else None,
                 None if when.startswith("step=") else float(when),
                 int(when[5:]) if when.startswith("step=") else None, SIGNALS[sig], spec)

"""A TrainJob's deadline leaves time for the first checkpoint its command asks for.

`spec.activeDeadlineSeconds` (Trainer 2.2+) fails the TrainJob (reason `DeadlineExceeded`) and deletes its
JobSet that many seconds after its creation or last resume, whatever the pods are doing. When the trainer's
command writes its first checkpoint later than that, the deadline ends every run before anything is saved:
a resubmitted job starts over from step 0, and so does each in-place restart before it.

The checkpoint interval is read from the trainer's `command` and `args` (`spec.trainer`, each string split
as a shell would, so `bash -c "..."` is read too) and `env`: trainkit's `--checkpoint-every N` (steps) with
`--step-sleep S` / `TRAINKIT_STEP_SLEEP` (seconds every step sleeps, at least): the first checkpoint comes
no earlier than N x S seconds. A step-counted interval without a known least step time cannot be put in
seconds and is not judged.

Source: kubeflow/trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go ActiveDeadlineSeconds,
pkg/controller/trainjob_controller.go reconcileDeadline; training/trainkit/args.py (--checkpoint-every,
--step-sleep), training/trainkit/loop.py Trainer.run.
"""
from __future__ import annotations

import re
import shlex

from ...findings import WARNING
from ._util import d, lst, trainjobs

ID = "trainjob-deadline-checkpoint"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The TrainJob runs; whether the deadline costs all its work depends on whether it finishes before the "
       "deadline, which the manifests cannot show.")
_EVERY = re.compile(r"^--checkpoint[-_]every(?:=(.*))?$")
_SLEEP = re.compile(r"^--step[-_]sleep(?:=(.*))?$")
SLEEP_ENV = "TRAINKIT_STEP_SLEEP"


def _tokens(trainer: dict) -> list[str]:
    out: list[str] = []
    for key in ("command", "args"):
        for t in lst(trainer.get(key)):
            try:
                out += shlex.split(str(t)) if any(c.isspace() for c in str(t)) else [str(t)]
            except ValueError:
                out.append(str(t))
    return out


def _flag(tokens: list[str], pattern: re.Pattern) -> float | None:
    value = None
    for i, t in enumerate(tokens):
        m = pattern.match(t)
        if m:
            raw = m.group(1) if m.group(1) is not None else (tokens[i + 1] if i + 1 < len(tokens) else "")
            try:
                value = float(raw)
            except ValueError:
                value = None
    return value


def checkpoint_interval_s(trainer: dict) -> tuple[float, str] | None:
    """The least seconds before the command's first checkpoint, and how that was read; None: not known."""
    toks = _tokens(trainer)
    every = _flag(toks, _EVERY)
    sleep = _flag(toks, _SLEEP)
    how = "--step-sleep"
    if sleep is None:
        env = {d(e).get("name"): d(e).get("value") for e in lst(trainer.get("env"))}
        try:
            sleep = float(env[SLEEP_ENV]) if env.get(SLEEP_ENV) is not None else None
        except ValueError:
            sleep = None
        how = SLEEP_ENV
    if not every or every <= 0 or not sleep or sleep <= 0:
        return None
    return every * sleep, f"--checkpoint-every {every:g} steps x {how} {sleep:g} s"


def check(docs, ctx):
    for job in trainjobs(docs):
        spec = d(job.get(("spec",)))
        deadline = spec.get("activeDeadlineSeconds")
        if not isinstance(deadline, int) or isinstance(deadline, bool) or deadline <= 0:
            continue
        got = checkpoint_interval_s(d(spec.get("trainer")))
        if got is None or got[0] <= deadline:
            continue
        least, how = got
        yield job.finding(ID, f"activeDeadlineSeconds {deadline} is shorter than the first checkpoint's {least:g} s at "
                              f"least ({how}): Trainer fails the TrainJob (DeadlineExceeded) before anything is saved, "
                              "and a resubmitted job starts from step 0", ("spec", "activeDeadlineSeconds"))

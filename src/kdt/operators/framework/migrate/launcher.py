"""A container's torchrun, read as torchrun reads it: which word starts it, its flags, their values.

The kubelet joins `command` and `args` into one argument list and expands `$(VAR)` from the container's
env (kubernetes pkg/kubelet/container/helpers.go ExpandContainerCommandAndArgs; `$$` escapes); torchrun
then reads each flag from the command line, else from PET_<NAME>, else its default
(kdt.operators.torchrun). A launcher inside a shell script (`sh -c "torchrun ..."`) is seen but not
taken apart: a migration does not rewrite a script.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ... import torchrun as TR

_ALIASES = TR.alias_index()
_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


@dataclass(frozen=True)
class Word:
    part: str          # "command" or "args"
    index: int
    text: str


@dataclass
class Flag:
    name: str          # the key of kdt.operators.torchrun.VALUE_FLAGS
    value: str | None
    words: list[Word]  # the word(s) that give it (`--x=v`, or `--x` and `v`)


@dataclass
class Launch:
    launcher: Word
    flags: list[Flag] = field(default_factory=list)
    bools: list[Word] = field(default_factory=list)
    script: Word | None = None

    def flag(self, name: str) -> Flag | None:
        """The last occurrence of a value flag (argparse keeps the last)."""
        found = [f for f in self.flags if f.name == name]
        return found[-1] if found else None

    def has_bool(self, *names: str) -> bool:
        return any(w.text in names for w in self.bools)


def words(container: dict) -> list[Word]:
    out = []
    for part in ("command", "args"):
        items = container.get(part)
        for i, w in enumerate(items if isinstance(items, list) else []):
            out.append(Word(part, i, str(w)))
    return out


def _is_launcher(text: str) -> bool:
    return text in TR.LAUNCHERS or text.endswith("/torchrun")


def in_shell(container: dict) -> Word | None:
    """The word of a shell script (a word with spaces) that starts torchrun, if any."""
    for w in words(container):
        if any(ch.isspace() for ch in w.text) and any(_is_launcher(t.strip("'\";")) for t in w.text.split()):
            return w
    return None


def find(container: dict) -> Launch | None:
    """torchrun as this container starts it (not inside a script), or None."""
    ws = words(container)
    start = next((i for i, w in enumerate(ws) if _is_launcher(w.text)), None)
    if start is None:
        return None
    launch = Launch(ws[start])
    i = start + 1
    while i < len(ws):
        w = ws[i]
        text = w.text
        if not text.startswith("-") or text == "-":
            launch.script = w
            break
        key, eq, val = text.partition("=")
        if key in _ALIASES:
            if eq:
                launch.flags.append(Flag(_ALIASES[key], val, [w]))
            else:
                nxt = ws[i + 1] if i + 1 < len(ws) else None
                launch.flags.append(Flag(_ALIASES[key], nxt.text if nxt else None, [w] + ([nxt] if nxt else [])))
                i += 1
        else:
            launch.bools.append(w)      # a flag without a value (--standalone, -m, ...), or one torch does not know
        i += 1
    return launch


def expand(text: str, env: dict) -> str:
    """`$(VAR)` replaced by the value of VAR in `env` (name -> str, or None for one the kubelet resolves
    later: kept as written); `$$` is a literal `$`."""
    def one(m):
        if m.group(0) == "$$":
            return "$"
        value = env.get(m.group(1))
        return m.group(0) if value is None else str(value)
    return _REF.sub(one, str(text))


def references(text: str) -> set[str]:
    """The names a word refers to as `$(NAME)`."""
    return {m.group(1) for m in _REF.finditer(str(text)) if m.group(1)}


def setting(launch: Launch, name: str, env: dict) -> str | None:
    """The value torchrun uses for flag `name`: the command line's (expanded), else PET_<NAME>, else its default."""
    f = launch.flag(name)
    if f is not None and f.value is not None:
        return expand(f.value, env)
    _, var, default = TR.VALUE_FLAGS[name]
    if var and env.get(var) is not None:
        return str(env[var])
    return default


def conf(text: str | None) -> dict[str, str]:
    """`--rdzv-conf` as torchrun splits it (kdt.operators.torchrun.rdzv_conf)."""
    return TR.rdzv_conf(text)

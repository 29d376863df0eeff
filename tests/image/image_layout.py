"""What training/Dockerfile puts where, read from the Dockerfile itself (no Docker engine needed).

A small Dockerfile reader for the instructions the image tests need: ARG
defaults, FROM chains between stages, WORKDIR, COPY, USER, ENV, LABEL, CMD,
and the directories RUN creates (`install -d`, `mkdir`, `useradd
--create-home`) with their owner and mode. Plus .dockerignore matching with
Docker's rules (patterns match a path or any of its parents; the last
matching pattern wins; `!` re-admits).
"""
from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

_VAR = re.compile(r"\$(?:\{(\w+)(?::-([^}]*))?\}|(\w+))")


@dataclass
class Instruction:
    line: int          # 1-based line of the instruction's first line
    op: str            # upper-case keyword
    text: str          # the rest, continuation lines joined, comment lines dropped


def instructions(text: str) -> list[Instruction]:
    out: list[Instruction] = []
    buf: list[str] = []
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue  # a comment line inside a continuation is dropped, as Docker does
        if not buf:
            start = n
        if raw.rstrip().endswith("\\"):
            buf.append(raw.rstrip()[:-1])
            continue
        buf.append(raw)
        joined = " ".join(part.strip() for part in buf).strip()
        buf = []
        op, _, rest = joined.partition(" ")
        out.append(Instruction(start, op.upper(), rest.strip()))
    return out


def substitute(value: str, args: dict[str, str]) -> str:
    def repl(m: re.Match) -> str:
        name = m.group(1) or m.group(3)
        if name in args and args[name] != "":
            return args[name]
        return m.group(2) or ""
    return _VAR.sub(repl, value)


def _pairs(text: str) -> dict[str, str]:
    """KEY=VALUE pairs of ENV, LABEL, ARG (shell-style quoting)."""
    out = {}
    for tok in shlex.split(text):
        key, eq, value = tok.partition("=")
        out[key] = value if eq else ""
    return out


@dataclass
class Dir:
    path: str
    owner: str = "0"
    group: str = "0"
    mode: int = 0o755
    how: str = ""


@dataclass
class Layout:
    """The final image of one variant, as far as the Dockerfile tells."""
    variant: str
    stages: list[str] = field(default_factory=list)       # the FROM chain, final stage first
    base: str = ""                                         # the external image at the bottom of the chain
    workdir: str = "/"
    user: str = "0"
    dirs: dict[str, Dir] = field(default_factory=dict)
    copies: list[tuple[str, str]] = field(default_factory=list)   # (image path, repo path), as written
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    cmd: list[str] = field(default_factory=list)
    users: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (uid, gid)


@dataclass
class Dockerfile:
    path: Path
    items: list[Instruction]
    global_args: dict[str, str]

    @classmethod
    def read(cls, path: Path) -> "Dockerfile":
        items = instructions(path.read_text())
        global_args: dict[str, str] = {}
        for ins in items:
            if ins.op == "FROM":
                break
            if ins.op == "ARG":
                global_args.update(_pairs(ins.text))
        return cls(path, items, global_args)

    def stages(self) -> list[tuple[str, str, list[Instruction]]]:
        """(FROM image as written, stage name, instructions) per stage."""
        out: list[tuple[str, str, list[Instruction]]] = []
        for ins in self.items:
            if ins.op == "FROM":
                words = [w for w in ins.text.split() if not w.startswith("--")]
                name = words[2] if len(words) >= 3 and words[1].lower() == "as" else ""
                out.append((words[0], name, []))
            elif out:
                out[-1][2].append(ins)
        return out

    def layout(self, **build_args: str) -> Layout:
        args = {**self.global_args, **build_args}
        stages = self.stages()
        by_name = {name: (image, body) for image, name, body in stages if name}
        chain: list[tuple[str, list[Instruction]]] = []
        image, name, body = stages[-1]
        while True:
            chain.append((name, body))
            resolved = substitute(image, args)
            if resolved in by_name:
                name = resolved
                image, body = by_name[resolved]
                continue
            base = resolved
            break
        out = Layout(variant=args.get("VARIANT", ""), stages=[n for n, _ in chain], base=base)
        for _, body in reversed(chain):
            stage_args = dict(args)
            for ins in body:
                self._apply(ins, out, stage_args, build_args)
        return out

    def _apply(self, ins: Instruction, out: Layout, args: dict[str, str], build_args: dict[str, str]) -> None:
        if ins.op == "ARG":
            for k, v in _pairs(ins.text).items():
                # a stage ARG without a default takes the global value; a build arg always wins
                args[k] = build_args.get(k, v if v != "" else self.global_args.get(k, ""))
        elif ins.op == "WORKDIR":
            wd = posixpath.join(out.workdir, substitute(ins.text, args))
            out.workdir = posixpath.normpath(wd)
            out.dirs.setdefault(out.workdir, Dir(out.workdir, how=f"WORKDIR (line {ins.line})"))
        elif ins.op in ("COPY", "ADD"):
            words = [w for w in _json_or_words(ins.text) if not w.startswith("--")]
            *sources, dest = [substitute(w, args) for w in words]
            dest = posixpath.normpath(posixpath.join(out.workdir, dest)) + ("/" if dest.endswith("/") else "")
            for src in sources:
                out.copies.append((dest, src))
        elif ins.op == "USER":
            out.user = substitute(ins.text, args)
        elif ins.op == "ENV":
            out.env.update({k: substitute(v, {**args, **out.env}) for k, v in _pairs(ins.text).items()})
        elif ins.op == "LABEL":
            out.labels.update({k: substitute(v, args) for k, v in _pairs(ins.text).items()})
        elif ins.op == "CMD":
            out.cmd = _json_or_words(ins.text)
        elif ins.op == "RUN":
            for command in _commands(ins.text):
                _run(command, out, ins.line)


def _json_or_words(text: str) -> list[str]:
    if text.startswith("["):
        return [str(x) for x in json.loads(text)]
    return text.split()


def _commands(script: str) -> list[list[str]]:
    """Simple commands of a RUN shell script, split at ; && || and newlines (quoting respected)."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    out: list[list[str]] = [[]]
    for tok in lexer:
        if tok in (";", "&&", "||", "|", "&"):
            out.append([])
        else:
            out[-1].append(tok)
    return [c for c in out if c]


def _run(cmd: list[str], out: Layout, line: int) -> None:
    # drop shell keywords in front (`then install ...`, `do ...`)
    while cmd and cmd[0] in ("then", "do", "else", "if", "{"):
        cmd = cmd[1:]
    if not cmd:
        return
    prog, rest = cmd[0], cmd[1:]
    if prog == "install" and ("-d" in rest or "--directory" in rest):
        opts = {"-o": "0", "-g": "0", "-m": "755"}
        paths, i = [], 0
        while i < len(rest):
            if rest[i] in opts:
                opts[rest[i]] = rest[i + 1]
                i += 2
                continue
            if rest[i].startswith("/"):
                paths.append(rest[i])
            i += 1
        for p in paths:
            out.dirs[posixpath.normpath(p)] = Dir(posixpath.normpath(p), opts["-o"], opts["-g"],
                                                  int(opts["-m"], 8), f"RUN install -d (line {line})")
    elif prog == "mkdir":
        for p in rest:
            if p.startswith("/"):
                out.dirs.setdefault(posixpath.normpath(p), Dir(posixpath.normpath(p), how=f"RUN mkdir (line {line})"))
    elif prog == "chown":
        owner = next((w for w in rest if not w.startswith("-")), "")
        user, _, group = owner.partition(":")
        for p in rest[rest.index(owner) + 1:]:
            d = out.dirs.get(posixpath.normpath(p))
            if d:
                d.owner, d.group = user, group or d.group
    elif prog == "useradd":
        uid = gid = ""
        home = ""
        create = False
        i = 0
        while i < len(rest):
            w = rest[i]
            if w in ("--uid", "-u"):
                uid = rest[i + 1]; i += 2; continue   # noqa: E702
            if w in ("--gid", "-g"):
                gid = rest[i + 1]; i += 2; continue   # noqa: E702
            if w in ("--home-dir", "-d"):
                home = rest[i + 1]; i += 2; continue  # noqa: E702
            if w in ("--create-home", "-m"):
                create = True
            if w in ("--shell", "-s", "--comment", "-c", "--groups", "-G"):
                i += 2
                continue
            i += 1
        name = rest[-1]
        out.users[name] = (uid, gid)
        home = home or f"/home/{name}"
        if create:
            out.dirs[home] = Dir(home, uid or name, gid or name, 0o755, f"RUN useradd --create-home (line {line})")


def writable(d: Dir, uid: str, gid: str, names: dict[str, tuple[str, str]]) -> bool:
    """Whether a process with uid/gid can create files in d."""
    def resolve(who: str, index: int) -> str:
        return names[who][index] if who in names else who
    owner, group = resolve(d.owner, 0), resolve(d.group, 1)
    return (owner == uid and d.mode & 0o200 != 0) or (group == gid and d.mode & 0o020 != 0) or d.mode & 0o002 != 0


# --- .dockerignore -------------------------------------------------------------

def _pattern_regex(pattern: str) -> re.Pattern:
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
            continue
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
            continue
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            j = pattern.find("]", i)
            if j < 0:
                out += re.escape(c)
            else:
                out += "[" + pattern[i + 1:j].replace("!", "^", 1) + "]"
                i = j
        else:
            out += re.escape(c)
        i += 1
    return re.compile(out + r"\Z")


@dataclass
class DockerIgnore:
    rules: list[tuple[bool, re.Pattern, str]]   # (exclude?, regex, pattern as written)

    @classmethod
    def read(cls, path: Path) -> "DockerIgnore":
        rules = []
        if path.is_file():
            for raw in path.read_text().splitlines():
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                negate = line.startswith("!")
                pattern = posixpath.normpath(line[1:].strip() if negate else line).lstrip("/")
                rules.append((not negate, _pattern_regex(pattern), line))
        return cls(rules)

    def excluded(self, rel: str) -> bool:
        """Whether the context path rel (relative to the context root) is left out of the build context."""
        rel = posixpath.normpath(rel).lstrip("/")
        parts = rel.split("/")
        candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        verdict = False
        for exclude, regex, _ in self.rules:
            if any(regex.match(c) for c in candidates):
                verdict = exclude
        return verdict

"""The lint configuration file (`.kdt-lint.yaml` at the repository root).

    rules:
      image-tag: warning            # level: error | warning
      gpu-shm: disable              # turn a rule off
      launcher-args-mismatch:       # level and the rule's own options
        level: error
        options: {...}
    ignore:                         # ignore rules for paths; each entry needs a reason
      - rules: [host-path]          # rule IDs, or "*"
        paths: ["overlays/statefulset", "base/*.yaml"]   # glob or folder; matched against
        reason: "why this is fine"                        # target, file and source file

`--strict` refuses every ignore (config and annotations alike).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path


from ..documents import load_stream
from ..errors import UsageError
from ..findings import LEVELS, Finding
from ..kubeyaml import KUSTOMIZE
from ..paths import ROOT

DEFAULT_FILE = ".kdt-lint.yaml"


@dataclass
class IgnoreEntry:
    rules: list[str]
    paths: list[str]
    reason: str


@dataclass
class Config:
    file: str = ""
    levels: dict = field(default_factory=dict)
    disabled: set = field(default_factory=set)
    rule_options: dict = field(default_factory=dict)
    ignores: list[IgnoreEntry] = field(default_factory=list)

    def enabled(self, rid: str) -> bool:
        return rid not in self.disabled

    def level(self, rid: str) -> str | None:
        return self.levels.get(rid)

    def options(self, rid: str) -> dict:
        return self.rule_options.get(rid, {})

    def ignored(self, f: Finding) -> bool:
        from .engine import _path_matches, names
        for e in self.ignores:
            if ("*" in e.rules or any(n in e.rules for n in names(f))) and _path_matches(e.paths, f):
                return True
        return False


def load(path: str | None = None) -> Config:
    """The config at `path`, else .kdt-lint.yaml at the repo root when present, else defaults."""
    if path is None:
        default = ROOT / DEFAULT_FILE
        if not default.is_file():
            return Config()
        p = default
    else:
        p = Path(path)
        if not p.is_file():
            raise UsageError(f"{path}: no such config file")
    try:
        # Read as YAML 1.2 (kyaml's reading: `off` is a string), bounded like every YAML kdt reads.
        docs, problems = load_stream(p.read_text(), str(p), paths=(KUSTOMIZE,))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{p}: cannot read config: {str(exc).splitlines()[0]}") from None
    errors = [f for f in problems if f.level == "error"]
    if errors:
        raise UsageError(f"{p}: cannot read config: {errors[0].location}: {errors[0].message}")
    data = (docs[0].data if docs[0].kustomize is None else docs[0].kustomize) if docs else {}
    return parse(data, str(p))


def parse(data, file: str = "<config>") -> Config:
    from .engine import aliases, all_rules
    rule_ids = all_rules()
    of_rule = aliases()
    known = set(rule_ids) | set(of_rule)
    if not isinstance(data, dict):
        raise UsageError(f"{file}: config must be a mapping with `rules` and/or `ignore`")
    extra = set(data) - {"rules", "ignore"}
    if extra:
        raise UsageError(f"{file}: unknown config key(s): {', '.join(sorted(map(str, extra)))}")
    cfg = Config(file=file)
    for rid, val in (data.get("rules") or {}).items():
        if rid not in known:
            raise UsageError(f"{file}: rules: unknown rule {rid!r} (see lint.py --list)")
        if val in ("disable", False):
            cfg.disabled.add(rid)
        elif val in LEVELS:
            cfg.levels[rid] = val
        elif isinstance(val, dict):
            lvl = val.get("level")
            if lvl == "disable":
                cfg.disabled.add(rid)
            elif lvl is not None and lvl not in LEVELS:
                raise UsageError(f"{file}: rules.{rid}.level must be error, warning or disable")
            elif lvl:
                cfg.levels[rid] = lvl
            opts = val.get("options") or {}
            if opts and rid in of_rule:
                raise UsageError(f"{file}: rules.{rid}: an alias of {of_rule[rid]} has no options of its own; "
                                 f"set them on rules.{of_rule[rid]}")
            unknown = set(opts) - set(rule_ids[rid].options if rid in rule_ids else ())
            if unknown:
                raise UsageError(f"{file}: rules.{rid}.options: unknown option(s) {', '.join(sorted(unknown))}")
            cfg.rule_options[rid] = dict(opts)
        else:
            raise UsageError(f"{file}: rules.{rid}: expected error, warning, disable or a mapping")
    for i, entry in enumerate(data.get("ignore") or []):
        if not isinstance(entry, dict):
            raise UsageError(f"{file}: ignore[{i}] must be a mapping with rules, paths and reason")
        rids = entry.get("rules") or []
        rids = [rids] if isinstance(rids, str) else list(rids)
        paths = entry.get("paths") or []
        paths = [paths] if isinstance(paths, str) else list(paths)
        reason = str(entry.get("reason") or "").strip()
        if not rids or not paths:
            raise UsageError(f"{file}: ignore[{i}] needs `rules` and `paths`")
        if not reason:
            raise UsageError(f"{file}: ignore[{i}] needs a `reason`: every ignore says why")
        for rid in rids:
            if rid != "*" and rid not in known:
                raise UsageError(f"{file}: ignore[{i}]: unknown rule {rid!r}")
        cfg.ignores.append(IgnoreEntry(rids, [str(p) for p in paths], reason))
    return cfg


def matches(pattern: str, name: str) -> bool:
    return fnmatch.fnmatch(name, pattern)

"""Rule registry, the run over a stream, and ignores (annotations, config file).

A rule is a module under `kdt.lint.rules` (modelled on yamllint):

    '''Docstring: the rule's documentation (first line is its summary).'''
    ID = "pytorchjob-master-replicas"
    LEVEL = ERROR                 # default level of its findings (config may change it)
    BASIS = "rejected"            # why that level: one of BASES
    WHY = "The Training Operator's webhook refuses the PyTorchJob."   # the reason, in docs/rules.md
    OPTIONS = {}                  # the rule's own options and their defaults
    SCOPE = "documents"           # or "target" for rules that read a kustomization tree
    def check(docs, ctx): ...     # documents (the whole stream) -> findings
    def check_target(target, docs, ctx): ...   # SCOPE == "target"
    ALIASES = {"old-id": "what it names"}   # optional: other IDs that name some of its findings

A rule may give a finding a lower level than LEVEL (e.g. a runtimeRef that only
names a known upstream runtime is a warning); a configured level overrides all.

Aliases keep IDs working that once were rules of their own (pod-security took over privileged,
host-path, ...): a finding lists the aliases that name it in `extra["aliases"]`, most specific
first, and an ignore, a `disable` or a level given to an alias applies to exactly those findings
(a level set on an alias wins over the rule's).

The line between the levels (BASES): an error is what is refused (the API
server, an operator's webhook, kustomize) or what is accepted but breaks the run
(it fails, hangs, never starts, or silently does something else than written);
a warning is a risk that depends on what the manifests cannot show (the
cluster, the scale, the data) or a policy choice (security, reproducibility,
hygiene). `.kdt-lint.yaml` makes any warning an error (`rules: {<id>: error}`).
"""
from __future__ import annotations

import fnmatch
import importlib
import inspect
import pkgutil
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Iterable

from .. import versions
from ..documents import Document
from ..errors import MALFORMED
from ..findings import ERROR, LEVELS, WARNING, Finding, list_item_prefix

# metadata.annotations key that ignores rule RULE for one resource; the value is the
# reason and must not be empty:  lint.kdt.dev/ignore.RULE: "why this is fine here"
IGNORE_ANNOTATION_PREFIX = "lint.kdt.dev/ignore."
# Rule ID of the engine's own findings (an ignore with no reason, an unknown rule).
ENGINE_RULE = "lint-ignore"

# Why a rule has its level (the rule's BASIS): the first two are errors, the others warnings.
BASES = {
    "rejected": "refused before it runs: by the API server, an operator's webhook, or kustomize",
    "breaks": "accepted, but the run fails, hangs, never starts, or silently does something else than written",
    "risk": "may break the run, depending on what the manifests cannot show (the cluster, the scale, the data)",
    "policy": "a choice (security, reproducibility, hygiene), not a defect",
}
ERROR_BASES = ("rejected", "breaks")
#: a finding's own basis, where it differs from its rule's (`Finding.extra[BASIS_KEY]`): a rule whose findings are
#: mostly silent breakage may report an operator webhook's refusal too (runtime-trainer-job)
BASIS_KEY = "basis"


def basis_of(finding, rules: dict) -> str:
    """The basis of one finding: its own (`extra[BASIS_KEY]`), else its rule's."""
    return finding.extra.get(BASIS_KEY) or getattr(rules.get(finding.rule), "basis", "")


@dataclass(frozen=True)
class Rule:
    id: str
    level: str
    doc: str
    module: ModuleType
    options: dict = field(default_factory=dict)
    scope: str = "documents"
    aliases: dict = field(default_factory=dict)    # alias ID -> what of the rule's findings it names
    basis: str = ""           # BASES key: why the rule has its level ("" when the module does not say)
    why: str = ""

    @property
    def summary(self) -> str:
        return (self.doc.strip().splitlines() or [""])[0].strip()


@dataclass
class Context:
    """What a rule sees besides the documents."""

    trainer_version: str = versions.TRAINER_DEFAULT
    options: dict = field(default_factory=dict)   # this rule's options (defaults + config)
    target: Any = None                            # kdt.targets.Target when linting a target
    run_docs: list = field(default_factory=list)  # every document of the run (all targets and files)
    kubernetes_version: str = versions.KUBERNETES_DEFAULT   # the release the run targets ("1.35")
    cluster: Any = None                           # kdt.cluster_file.Cluster (None: the operators' defaults)

    def opt(self, name: str) -> Any:
        return self.options.get(name)

    def pool(self, docs: list[Document]) -> list[Document]:
        """`docs` first, then the rest of the run: references (a TrainJob's runtime) resolve across files.

        Built once per target, whatever rule asks (the rules of one target share it: a whole repository's
        run has hundreds of targets and thousands of documents)."""
        if not self.run_docs:
            return docs
        cached = _last_pool[0]
        if cached is None or cached[0] is not docs or cached[1] is not self.run_docs:
            mine = {id(d) for d in docs}
            cached = (docs, self.run_docs, list(docs) + [d for d in self.run_docs if id(d) not in mine])
            _last_pool[0] = cached
        return cached[2]


    def pool_of(self, docs: list[Document], *kinds) -> list[Document]:
        """The documents of these kinds (kdt.kinds) in `pool(docs)`, in its order: what a rule looks up across
        the run (runtimes, Namespaces, ConfigMaps) without reading every document of the run for every target
        (the run's documents are indexed by kind once)."""
        wanted = {(k.group, k.kind) for k in kinds}
        own = [x for x in docs if (x.group, x.kind) in wanted]
        if not self.run_docs:
            return own
        index = _run_index[0]
        if index is None or index[0] is not self.run_docs:
            by: dict = {}
            for i, x in enumerate(self.run_docs):
                by.setdefault((x.group, x.kind), []).append((i, x))
            index = _run_index[0] = (self.run_docs, by)
        mine = {id(x) for x in own}
        rest = sorted((pair for key in wanted for pair in index[1].get(key, ()) if id(pair[1]) not in mine),
                      key=lambda pair: pair[0])
        return own + [x for _, x in rest]


_last_pool: list = [None]     # (docs, run_docs, pool) of the target whose rules run now
_run_index: list = [None]     # (run_docs, {(group, kind): [documents]})


_RULES: dict[str, Rule] | None = None


def all_rules() -> dict[str, Rule]:
    """Every rule module under kdt.lint.rules, by ID, sorted."""
    global _RULES
    if _RULES is None:
        pkg = importlib.import_module(__package__ + ".rules")
        found: dict[str, Rule] = {}
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            rid = getattr(mod, "ID")
            if rid in found:
                raise RuntimeError(f"duplicate rule ID {rid} in {info.name}")
            found[rid] = Rule(rid, getattr(mod, "LEVEL", ERROR), inspect.getdoc(mod) or "", mod,
                              dict(getattr(mod, "OPTIONS", {})), getattr(mod, "SCOPE", "documents"),
                              dict(getattr(mod, "ALIASES", {})), getattr(mod, "BASIS", ""),
                              getattr(mod, "WHY", ""))
        clash = [a for r in found.values() for a in r.aliases if a in found]
        if clash:
            raise RuntimeError(f"alias {clash[0]} is also a rule ID")
        _RULES = dict(sorted(found.items()))
    return _RULES


def aliases() -> dict[str, str]:
    """alias ID -> the ID of the rule whose findings it names."""
    return {a: r.id for r in all_rules().values() for a in r.aliases}


def known_ids() -> set[str]:
    """Every ID an ignore or the config may name: rules and their aliases."""
    return set(all_rules()) | set(aliases())


def names(f: Finding) -> tuple[str, ...]:
    """The IDs that name a finding: its aliases (most specific first), then its rule."""
    return (*f.extra.get("aliases", ()), f.rule)


def annotation_ignores(doc: Document) -> dict[str, str]:
    ann = doc.get(("metadata", "annotations"))
    if not isinstance(ann, dict):
        return {}
    return {k[len(IGNORE_ANNOTATION_PREFIX):]: str(v if v is not None else "").strip()
            for k, v in ann.items() if isinstance(k, str) and k.startswith(IGNORE_ANNOTATION_PREFIX)}


def _path_matches(patterns: Iterable[str], f: Finding) -> bool:
    names = [n for n in (f.file, f.target, f.source, f.file.removesuffix(" (rendered)")) if n]
    return any(fnmatch.fnmatch(n, p) or n.startswith(p.rstrip("/") + "/") or n == p.rstrip("/")
               for p in patterns for n in names)


def apply_ignores(findings: list[Finding], docs: list[Document], config, strict: bool) -> list[Finding]:
    """Drop findings ignored by annotation or config (not under strict); report ignores without reason."""
    out: list[Finding] = []
    by_doc = {(d.file, d.index, d.prefix): d for d in docs}
    known = known_ids()
    engine: list[Finding] = []
    for d in docs:
        for rid, reason in annotation_ignores(d).items():
            path = ("metadata", "annotations", IGNORE_ANNOTATION_PREFIX + rid)
            if rid not in known:
                engine.append(d.finding(ENGINE_RULE, f"ignore annotation names unknown rule {rid!r}", path, WARNING))
            elif not reason:
                engine.append(d.finding(ENGINE_RULE, f"ignore of {rid} carries no reason: write why in the annotation value", path))
            elif strict:
                engine.append(d.finding(ENGINE_RULE, f"--strict refuses the ignore of {rid} ({reason})", path, WARNING))
    for f in findings:
        if not strict:
            d = by_doc.get((f.file, f.doc, list_item_prefix(f.path)))
            if d is not None and any(annotation_ignores(d).get(n) for n in names(f)):
                continue
            if config is not None and config.ignored(f):
                continue
        out.append(f)
    return out + engine


SKIP_RULE = "lint-skip"


def _guarded(rule: Rule, docs: list[Document], ctx: Context) -> list[Finding]:
    """A rule's findings; when a malformed object trips it, the rule is run object by object, and the
    objects it cannot read are a warning each (the rest of the stream is still checked)."""
    try:
        return list(rule.module.check(docs, ctx) or ())
    except MALFORMED:
        pass
    out: list[Finding] = []
    for d in docs:
        try:
            out.extend(rule.module.check([d], ctx) or ())
        except MALFORMED as exc:
            out.append(replace(d.finding(SKIP_RULE, f"{rule.id} skipped this {d.kind or 'object'}: its fields do not "
                                                   f"have the shape the rule reads ({type(exc).__name__}); "
                                                   "see its schema findings", level=WARNING)))
    return out


def relevel(f: Finding, level: str | None) -> Finding:
    return replace(f, level=level) if level and level != f.level else f


def run_rules(docs: list[Document], trainer_version: str, config=None, only_scope: str = "documents",
              target=None, run_docs: list[Document] | None = None,
              kubernetes_version: str = versions.KUBERNETES_DEFAULT, cluster=None) -> list[Finding]:
    out: list[Finding] = []
    for rule in all_rules().values():
        if rule.scope != only_scope:
            continue
        if config is not None and not config.enabled(rule.id):
            continue
        ctx = Context(trainer_version, {**rule.options, **(config.options(rule.id) if config else {})}, target,
                      run_docs or [], kubernetes_version=kubernetes_version, cluster=cluster)
        level = config.level(rule.id) if config else None
        if only_scope == "documents":
            produced = _guarded(rule, docs, ctx)
        else:
            produced = rule.module.check_target(target, docs, ctx)
        for f in produced or ():
            if f.level not in LEVELS or (rule.level == WARNING and f.level == ERROR):
                f = replace(f, level=rule.level)   # a finding is never above its rule's level
            alias = f.extra.get("aliases", ())
            if config is not None and alias:
                if any(not config.enabled(a) for a in alias):
                    continue
                level_of = next((config.level(a) for a in alias if config.level(a)), level)
                out.append(relevel(f, level_of))
                continue
            out.append(relevel(f, level))
    return out

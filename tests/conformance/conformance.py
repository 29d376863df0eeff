"""The conformance suite's machinery, shared by tests/conformance/test_conformance.py and bench/merge_conformance.py.

Each fixture (fixtures/<operator>/<tag>/<upstream test file>.yaml, written for this project) restates the
cases of one upstream unit-test file as manifests and the facts the upstream test asserts; nothing of the
upstream file is copied. A fixture:

    source: {repository: kubeflow/trainer, tag: v2.3.0, file: pkg/.../torch_test.go}
    options: {trainer_version: "2.3"}          # how the merge preview is run (expand_documents)
    cases:
      - test: TestTorchEnforceMLPolicy         # the Go test function (or the ginkgo Describe)
        case: nproc_per_node=auto with CPU limit   # the case's name as upstream writes it
        manifests: [...]                       # the objects, as a user would write them
        facts:                                 # what the upstream test asserts, checked on the preview
          - [JobSet/test-job, spec.replicatedJobs[node]....env[PET_NPROC_PER_NODE].value, "4"]
          - [count, Pod, 2]
        rejected: [[trainjob-reserved-env, spec.trainer.env[0].name]]   # the webhook refuses: the finding
        warned: [[rule, path]]                 # admitted with a warning
        held: "suspend"                        # nothing created yet; the reason says this
    left_out:
      - {test: ..., case: ..., reason: lifecycle | status | not modelled: ... | plugin internals: ...}

A fact is [object, path, expected]: object `Kind/name` (a pod by its hostname) or `Kind` (the one object
of that kind); path as kdt.findings.format_path writes it, with `[name]` selecting the list item whose
`name` is that (`[containerPort=29500]` another key); expected a value, or {absent: true}, or
{quantity: "8Gi"} (compared as numbers), or {contains: text or [texts]} (a string holding each). [count, Kind, n] counts the objects of a kind.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kdt.documents import load_stream
from kdt.fields import exact_quantity
from kdt.merge_preview import expand_documents

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Path shorthands every fixture may use (a fixture's own `paths:` add to them): `$node.env[X].value`.
PATHS = {"$rj": "spec.replicatedJobs",
         "$job": "spec.replicatedJobs[node].template.spec",
         "$pod": "spec.replicatedJobs[node].template.spec.template.spec",
         "$node": "spec.replicatedJobs[node].template.spec.template.spec.containers[node]"}
_TOKEN = re.compile(r'\.?([A-Za-z0-9_$-]+)|\[(\d+)\]|\["([^"]+)"\]|\[([^\]"=]+)=([^\]"]+)\]|\[([^\]"]+)\]')


@dataclass
class Case:
    fixture: str
    source: dict
    test: str
    case: str
    manifests: list = field(default_factory=list)
    facts: list = field(default_factory=list)
    rejected: list = field(default_factory=list)
    warned: list = field(default_factory=list)
    held: str | None = None
    options: dict = field(default_factory=dict)
    paths: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.source['tag']}:{Path(self.source['file']).name}:{self.test}/{self.case}"

    @property
    def fact_count(self) -> int:
        return len(self.facts) + len(self.rejected) + len(self.warned) + (1 if self.held else 0)


@dataclass
class Fixture:
    path: Path
    source: dict
    cases: list
    left_out: list      # {test, case, reason}


def fixtures(root: Path = FIXTURES) -> list[Fixture]:
    """The fixtures under `root` (default: the unit-test restatements; bench/trainer_integration.py reads
    tests/conformance/integration, the integration tests' restatement)."""
    out = []
    for p in sorted(root.rglob("*.yaml")):
        data = yaml.safe_load(p.read_text())
        opts = data.get("options") or {}
        cases = [Case(str(p.relative_to(root)), data["source"], c["test"], str(c["case"]), c.get("manifests") or [],
                      c.get("facts") or [], c.get("rejected") or [], c.get("warned") or [], c.get("held"),
                      {**opts, **(c.get("options") or {})}, {**PATHS, **(data.get("paths") or {})})
                 for c in data.get("cases") or []]
        out.append(Fixture(p, data["source"], cases, data.get("left_out") or []))
    return out


def parse_path(path: str) -> list:
    """`spec.containers[node].env[PET_NNODES].value` -> ["spec", "containers", ("name", "node"), ...]."""
    out, pos = [], 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m or m.end() == pos:
            raise ValueError(f"bad path {path!r} at {pos}")
        key, idx, quoted, sel_k, sel_v, name = m.groups()
        out.append(key if key is not None else int(idx) if idx is not None else quoted if quoted is not None
                   else (sel_k, sel_v) if sel_k is not None else ("name", name))
        pos = m.end()
    return out


_MISSING = object()


def expand_path(path: str, paths: dict) -> str:
    """`$node.env[A]` -> the full path (the longest shorthand that prefixes it)."""
    if path.startswith("$"):
        for k in sorted(paths, key=len, reverse=True):
            if path == k or path.startswith(k + ".") or path.startswith(k + "["):
                return paths[k] + path[len(k):]
    return path


def get(obj, path: str):
    cur = obj
    for step in parse_path(path):
        if isinstance(step, tuple):
            k, v = step
            cur = next((x for x in cur if isinstance(x, dict) and str(x.get(k)) == v), _MISSING) \
                if isinstance(cur, list) else _MISSING
        elif isinstance(step, int):
            cur = cur[step] if isinstance(cur, list) and -len(cur) <= step < len(cur) else _MISSING
        else:
            cur = cur.get(step, _MISSING) if isinstance(cur, dict) else _MISSING
        if cur is _MISSING:
            return _MISSING
    return cur


def _plain(v):
    return json.loads(json.dumps(v, default=str))


def same(got, want) -> bool:
    if isinstance(want, dict) and set(want) == {"absent"}:
        return got is _MISSING
    if got is _MISSING:
        return False
    if isinstance(want, dict) and set(want) == {"contains"}:
        return isinstance(got, str) and all(part in got for part in
                                            (want["contains"] if isinstance(want["contains"], list) else [want["contains"]]))
    if isinstance(want, dict) and set(want) == {"quantity"}:
        a, b = exact_quantity(got), exact_quantity(want["quantity"])
        return a is not None and b is not None and a[0] == b[0]
    return _plain(got) == _plain(want)


def documents(case: Case):
    docs = []
    for i, m in enumerate(case.manifests):
        d, f = load_stream(json.dumps(m, indent=1), f"{case.fixture}#{case.test}/{case.case}/{i}")
        assert not f, f
        docs += d
    return docs


def _within(found: tuple, rule: str, path: str) -> bool:
    """A finding (rule, path) answers a refusal upstream locates at `path`: same rule, at that field or inside
    it (the preview may name the list item: spec.trainer.env[1].name for upstream's spec.trainer.env)."""
    r, p = found
    return r == rule and (p == path or p.startswith(path + ".") or p.startswith(path + "["))


def run(case: Case) -> list[tuple[str, bool, object]]:
    """(fact, agrees, what the preview gave) for each fact of `case`."""
    result = expand_documents(documents(case), trainer_version=case.options.get("trainer_version"),
                              options={k: v for k, v in case.options.items() if k != "trainer_version"})
    objs, findings = result
    errors = {(f.rule, f.path) for f in findings if f.level == "error"}
    warnings = {(f.rule, f.path) for f in findings if f.level == "warning"}
    out = []
    for rule, path in case.rejected:
        hit = any(_within(e, rule, path) for e in errors)
        out.append((f"rejected {rule} {path}", hit and not objs,
                    sorted(errors) if not hit else f"{len(objs)} objects created"))
    extra = sorted(e for e in errors if not any(_within(e, r, p) for r, p in case.rejected))
    if extra:
        out.append(("no other refusal", False, extra))
    for rule, path in case.warned:
        out.append((f"warned {rule} {path}", any(_within(w, rule, path) for w in warnings), sorted(warnings)))
    if case.held is not None:
        reasons = [h.reason for h in result.held] + [str(e.facts.get("held")) for e in objs if e.facts.get("held")]
        out.append((f"held: {case.held}", any(case.held in r for r in reasons), reasons))
    for fact in case.facts:
        what = f"{fact[0]} {fact[1]} = {fact[2]!r}"
        if fact[0] == "count":
            n = sum(1 for e in objs if e.kind == fact[1])
            out.append((what, n == fact[2], n))
            continue
        kind, _, name = str(fact[0]).partition("/")
        matches = [e for e in objs if e.kind == kind and (not name or e.name == name)]
        if len(matches) != 1:
            out.append((what, False, f"{len(matches)} {fact[0]} objects ({sorted(e.name for e in objs if e.kind == kind)})"))
            continue
        got = get(matches[0].obj, expand_path(fact[1], case.paths))
        out.append((what, same(got, fact[2]), "(absent)" if got is _MISSING else copy.deepcopy(got)))
    return out

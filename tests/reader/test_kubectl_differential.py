"""kdt reads YAML as the pinned kubectl does (#36): the edge-case corpus (tests/reader/cases.py, written here)
through kubectl itself, both ways a file is applied, document by document.

`kubectl create --dry-run=client --validate=false -f` decodes each file as `kubectl apply -f` does and
`kubectl kustomize` builds each as `kubectl apply -k` does (tests/reader/oracle.py); every case agrees
with kdt's reading (what kdt reports as an error for that way of applying the file), or differs exactly
as its `deliberate` entry says, with the reason. kubectl runs once per test session for the whole corpus
(one `create` for every file, one `kustomize` per file in parallel).
"""
from __future__ import annotations

import pytest

import cases as C
import differential as D
import oracle


@pytest.fixture
def rows(computed_once) -> list[D.Row]:
    assert oracle.KUBECTL.is_file(), "the pinned kubectl (make venv) is the judge here"
    return computed_once("kubectl-differential", D.compare)       # 7 s of kubectl, once per session


def _show(rs) -> str:
    return "\n".join(f"{r.case.name} [{r.path}] ours: {r.ours}; kubectl: {r.kubectl[:160]}"
                     + (f"; listed as deliberate: {r.deliberate}" if r.deliberate else "") for r in rs)


def test_every_case_agrees_with_kubectl_but_the_listed_deliberate_differences(rows):
    unexpected = [r for r in rows if not r.agree and not r.deliberate]
    assert not unexpected, "kdt reads these otherwise than kubectl:\n" + _show(unexpected)


def test_each_deliberate_difference_is_real(rows):
    # A difference listed as deliberate that kubectl does not show any more is a stale claim.
    stale = [r for r in rows if r.agree and r.deliberate]
    assert not stale, "listed as deliberate, yet kdt and kubectl agree:\n" + _show(stale)


def test_the_corpus_covers_what_issue_36_lists(rows):
    names = " ".join(c.name for c in C.CASES)
    for topic in ("ctl-", "nul-", "bom-", "crlf", "tab-", "merge-", "bool11-", "octal", "sexagesimal", "anchor-",
                  "anchor-cycle", "dup-", "marker-", "utf8-", "long-line"):
        assert topic in names, topic
    # ... and, somewhere in it, each way of applying refuses what the other takes.
    verdicts: dict = {}
    for r in rows:
        refused = ("parse:" in r.kubectl or "decode:" in r.kubectl) if r.path == "apply" else r.kubectl != oracle.OK
        verdicts.setdefault(r.case.name, {})[r.path] = refused
    only_apply = [n for n, v in verdicts.items() if v["apply"] and not v["kustomize"]]
    only_kustomize = [n for n, v in verdicts.items() if v["kustomize"] and not v["apply"]]
    assert len(only_apply) >= 3 and len(only_kustomize) >= 3, (only_apply, only_kustomize)

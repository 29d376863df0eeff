"""The line between error and warning (#34): every rule says why it has its level, and the docs say the same."""
from __future__ import annotations

import subprocess
import sys

from lint_support import FIXTURES
from kdt import targets as T
from kdt import versions
from kdt.documents import load_paths
from kdt.lint import config as C
from kdt.lint import all_rules as rules
from kdt.lint import lint_documents, lint_target
from kdt.lint.engine import BASES, ERROR_BASES
from kdt.paths import ROOT


def test_every_rule_is_an_error_exactly_when_it_is_refused_or_breaks_the_run():
    for r in rules().values():
        assert r.basis in BASES and r.why.strip(), r.id
        assert (r.level == "error") == (r.basis in ERROR_BASES), f"{r.id}: {r.level} but {r.basis}"


def test_docs_give_each_rule_its_level_and_reason():
    text = (ROOT / "docs" / "rules.md").read_text()
    for r in rules().values():
        assert f"| [`{r.id}`](#{r.id}) | {r.level} | {r.basis} |" in text
        assert f"Level: **{r.level}**" in text and r.why.split()[0] in text


def test_a_policy_warning_is_an_error_where_the_config_says_so():
    docs, _ = load_paths([str(FIXTURES / "secret-literal-env" / "bad.yaml")])
    default = [f.level for f in lint_documents(docs) if f.rule == "secret-literal-env"]
    assert default and set(default) == {"warning"}
    cfg = C.parse({"rules": {"secret-literal-env": "error"}})
    assert {f.level for f in lint_documents(docs, config=cfg) if f.rule == "secret-literal-env"} == {"error"}


def test_docs_help_and_behaviour_agree_on_the_default_trainer_release():
    assert f"else {versions.TRAINER_DEFAULT} (`kdt.versions.TRAINER_DEFAULT`" in (ROOT / "docs" / "rules.md").read_text()
    helptext = subprocess.run([sys.executable, "-m", "kdt", "lint", "--help"], capture_output=True, text=True,
                              cwd=ROOT).stdout
    assert f"else {versions.TRAINER_DEFAULT})" in " ".join(helptext.split())
    # An unmarked file with a 2.1-shaped TrainJob (podTemplateOverrides) is linted as the default release.
    f = FIXTURES / "trainer-version-fields" / "bad.yaml"
    docs, _ = load_paths([str(f)])
    found = [x for x in lint_target(T.Target(str(f), T.FILE, f), docs) if x.rule == "trainer-version-fields"]
    assert T.trainer_version(T.Target(str(f), T.FILE, f)) == versions.TRAINER_DEFAULT
    assert bool(found) == (versions.TRAINER_DEFAULT != "2.1")

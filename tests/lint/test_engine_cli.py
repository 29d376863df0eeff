"""Ignores (annotation, config), --strict, --list, CLI exit codes and output, docs current, repo clean."""
import json
import subprocess
import sys

import pytest

from lint_support import FIXTURES, ROOT
from kdt.documents import load_stream
from kdt.errors import UsageError
from kdt.lint import IGNORE_ANNOTATION_PREFIX, lint_documents
from kdt.lint import config as C

LINT = [sys.executable, "-m", "kdt", "lint"]
# Restricted but for hostNetwork: one finding, of rule pod-security, that its former rule ID host-namespace names.
POD = """apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {ANN}
spec:
  hostNetwork: true
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers: [{name: c, image: 'img:1', resources: {requests: {cpu: 1, memory: 1Gi}},
                securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}}]
"""


def lint_text(text, **kw):
    docs, _ = load_stream(text, "t.yaml")
    return lint_documents(docs, **kw)


def rules_of(fs):
    return sorted({f.rule for f in fs})


def test_annotation_ignore_with_reason():
    ann = "{%s: 'RDMA needs the host network on these nodes'}" % (IGNORE_ANNOTATION_PREFIX + "host-namespace")
    assert rules_of(lint_text(POD.replace("{ANN}", "{}"))) == ["pod-security"]
    assert lint_text(POD.replace("{ANN}", ann)) == []


def test_annotation_ignore_without_reason_is_an_error():
    ann = "{%s: ''}" % (IGNORE_ANNOTATION_PREFIX + "host-namespace")
    fs = lint_text(POD.replace("{ANN}", ann))
    assert rules_of(fs) == ["lint-ignore", "pod-security"]
    assert any(f.rule == "lint-ignore" and f.level == "error" for f in fs)


def test_strict_refuses_ignores():
    ann = "{%s: 'reason'}" % (IGNORE_ANNOTATION_PREFIX + "host-namespace")
    fs = lint_text(POD.replace("{ANN}", ann), strict=True)
    assert "pod-security" in rules_of(fs)


def test_config_ignore_level_and_disable():
    text = POD.replace("{ANN}", "{}")
    cfg = C.parse({"ignore": [{"rules": ["host-namespace"], "paths": ["t.yaml"], "reason": "lab cluster"}]})
    assert lint_text(text, config=cfg) == []
    assert rules_of(lint_text(text, config=cfg, strict=True)) == ["pod-security"]
    cfg = C.parse({"rules": {"host-namespace": "error"}})
    assert [f.level for f in lint_text(text, config=cfg)] == ["error"]
    cfg = C.parse({"rules": {"host-namespace": "disable"}})
    assert lint_text(text, config=cfg) == []


@pytest.mark.parametrize("data,msg", [
    ({"rules": {"no-such-rule": "error"}}, "unknown rule"),
    ({"ignore": [{"rules": ["host-path"], "paths": ["x"]}]}, "reason"),
    ({"rules": {"host-path": "loud"}}, "expected"),
    ({"bogus": 1}, "unknown config key"),
    ({"rules": {"runtime-install": {"options": {"nope": 1}}}}, "unknown option"),
])
def test_bad_config_is_a_usage_error(data, msg):
    with pytest.raises(UsageError, match=msg):
        C.parse(data)


def test_rule_options_from_config():
    text = POD.replace("{ANN}", "{}").replace("'img:1'", "'img:1', command: [make, deps]")
    cfg = C.parse({"rules": {"runtime-install": {"options": {"patterns": [r"\bmake\s+deps\b"]}}}})
    assert "runtime-install" in rules_of(lint_text(text, config=cfg))
    assert "runtime-install" not in rules_of(lint_text(text))


def run(args, **kw):
    return subprocess.run(LINT + args, capture_output=True, text=True, cwd=ROOT, **kw)


def test_cli_list_and_help():
    out = run(["--list"])
    assert out.returncode == 0
    assert "pytorchjob-master-replicas" in out.stdout and "kustomize-json6902-replace" in out.stdout
    assert run(["--help"]).returncode == 0


def test_cli_exit_codes_and_json(tmp_path):
    bad = run([str(FIXTURES / "pytorchjob-master-replicas" / "bad.yaml"), "-o", "json"])
    assert bad.returncode == 1
    payload = json.loads(bad.stdout)
    f = next(f for f in payload["findings"] if f["rule"] == "pytorchjob-master-replicas")
    assert f["line"] and f["col"] and f["path"] and f["doc"] == 0 and f["kind"] == "PyTorchJob"
    good = run([str(FIXTURES / "pod-security" / "good.yaml")])
    assert good.returncode == 0, good.stdout
    warn = run([str(FIXTURES / "pod-security" / "bad.yaml")])
    assert warn.returncode == 0 and "[pod-security]" in warn.stdout
    missing = run([str(tmp_path / "nope.yaml"), str(FIXTURES / "pod-security" / "bad.yaml")])
    # a path that is not there is its own finding (exit 2); the other files are still linted
    assert missing.returncode == 2 and missing.stderr == "" and "nope.yaml: error [input]: no such file" in missing.stdout
    assert "[pod-security]" in missing.stdout
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rules: {nope: error}\n")
    assert run(["--config", str(cfg), str(FIXTURES / "pod-security" / "good.yaml")]).returncode == 2
    assert run(["--trainer-version", "9", str(FIXTURES / "pod-security" / "good.yaml")]).returncode == 2


def test_cli_output_file_written_whole(tmp_path):
    out = tmp_path / "r.json"
    r = run([str(FIXTURES / "image-tag" / "bad.yaml"), "-o", "json", "--output", str(out)])
    assert r.returncode == 0 and r.stdout == ""
    assert json.loads(out.read_text())["summary"]["warnings"] >= 2
    bad_dir = run([str(FIXTURES / "image-tag" / "bad.yaml"), "--output", str(tmp_path / "no" / "r.txt")])
    assert bad_dir.returncode == 2 and not (tmp_path / "no").exists()


def test_cli_trainer_version_flag():
    f = str(FIXTURES / "trainer-version-fields" / "bad.yaml")
    assert run([f, "--trainer-version", "2.1"]).returncode == 0
    assert run([f, "--trainer-version", "2.3"]).returncode == 1


def test_rules_doc_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_rules_doc.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_shipped_targets_lint_clean():
    """Every overlay and chart values file: no errors, no warnings (or a written ignore)."""
    r = run([])
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 error(s), 0 warning(s)" in r.stdout.splitlines()[-1]

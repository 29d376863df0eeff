"""The junit and sarif reporters on findings of every shape (lint uses them too)."""
from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import jsonschema

from kdt import report
from kdt.findings import ERROR, WARNING, Finding

FINDINGS = [
    Finding(ERROR, "render", "kubectl kustomize failed: <accumulate> & \"x\"", "overlays/x", target="overlays/x"),
    Finding(ERROR, "schema", "unknown field 'a\x01b'", "overlays/y (rendered)", doc=1, line=7, col=3,
            path='metadata.labels["a.b/c"]', kind="Pod", name="p", target="overlays/y", source="no/such/source.yaml"),
    Finding(WARNING, "TK001", "something odd", "file.yaml", doc=0, line=2, col=1, path="spec", kind="Job", name="j"),
    Finding(ERROR, "TK001", "really wrong", "file.yaml", doc=0, line=3, col=1, path="spec.x", kind="Job", name="j"),
]
RULES = {"schema": "Schema doc.", "TK001": "Lint rule doc. Second sentence."}


def render(fmt: str) -> str:
    out = io.StringIO()
    report.write(FINDINGS, fmt, "lint", out, documents=3, targets=["overlays/x", "overlays/y", "file.yaml"], rules=RULES)
    return out.getvalue()


def test_junit_parses_and_counts():
    root = ET.fromstring(render("junit").split("\n", 1)[1])
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["overlays/x", "overlays/y", "file.yaml"]
    (stream,) = suites["overlays/x"].findall("testcase")
    assert stream.get("name") == "(stream)" and "<accumulate> & \"x\"" in stream.find("failure").get("message")
    (pod,) = suites["overlays/y"].findall("testcase")
    assert pod.get("name") == "Pod/p (doc 1)" and "\ufffd" in pod.find("failure").get("message")
    (job,) = suites["file.yaml"].findall("testcase")
    assert len(job.findall("failure")) == 1 and "something odd" in job.find("system-out").text
    assert root.get("tests") == "3" and root.get("failures") == "3"


def test_sarif_is_valid_and_carries_rules_levels_and_locations(sarif_schema):
    sarif = json.loads(render("sarif"))
    jsonschema.Draft4Validator(sarif_schema).validate(sarif)
    run = sarif["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"render", "schema", "TK001"}
    assert rules["TK001"]["shortDescription"]["text"] == "Lint rule doc"
    assert rules["TK001"]["defaultConfiguration"]["level"] == "error"
    by_msg = {r["message"]["text"]: r for r in run["results"]}
    job = by_msg["spec: something odd"]
    assert job["level"] == "warning"
    assert job["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "file.yaml", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 2, "startColumn": 1}}
    render_failure = by_msg["kubectl kustomize failed: <accumulate> & \"x\""]
    assert render_failure["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "overlays/x"
    pod = next(r for r in run["results"] if r["ruleId"] == "schema")
    # Source unreadable: the source file is still named, at its first line.
    assert pod["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "no/such/source.yaml"
    assert pod["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == 'Pod/p:metadata.labels["a.b/c"]'
    assert pod["properties"]["target"] == "overlays/y" and pod["properties"]["document"] == 1

"""JUnit XML: one <testsuite> per target (or file), one <testcase> per document, one <failure> per error.

The output validates against the common JUnit schema (Jenkins' junit-10.xsd,
which kubeconform's fixtures carry; tests/fixtures/junit-10.xsd): a <testcase>
carries only name, classname and time, so the file of a document is in its
suite's name and in every failure's text, never an attribute of its own.

CI systems show each document as a test: `KIND/NAME (doc N)`. Warnings are
written to the test case's <system-out>, so they show without failing it.
Findings that belong to no document (a target that failed to render, an
unreadable stream) are a `(stream)` test case of their suite.

`inventory` (the documents that were checked) makes valid documents appear as
passing test cases; without it only documents with findings are listed.
"""
from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import OrderedDict

from .. import __version__
from ..findings import list_item_prefix


# Characters XML 1.0 cannot carry, even escaped (a YAML value may hold them).
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _x(text: str) -> str:
    return _INVALID_XML.sub("\ufffd", text)


def _suite_name(f) -> str:
    return f.target or f.file


def _case_name(kind: str, name: str, doc, prefix) -> str:
    obj = f"{kind}/{name}" if kind else "(no kind)"
    items = "".join(f" items[{i}]" for i in prefix if isinstance(i, int))   # prefix: ("items", 2, ...)
    return f"{obj} (doc {doc}{items})" if doc is not None else "(stream)"


def _text(f) -> str:
    loc = f.location
    parts = [f"{loc}: {f.level} [{f.rule}]"]
    if f.path:
        parts.append(f"at {f.path}:")
    parts.append(f.message)
    if f.source:
        parts.append(f"(source {f.source})")
    return " ".join(parts)


def write(findings, tool: str, out=sys.stdout, documents=None, targets=None, inventory=None, **_):
    suites: "OrderedDict[str, OrderedDict]" = OrderedDict()
    for t in targets or []:
        suites.setdefault(str(t), OrderedDict())
    for d in inventory or []:
        suite = suites.setdefault(d.target or d.file, OrderedDict())
        suite.setdefault((d.file, d.index, d.prefix), {"name": _case_name(d.kind, d.name, d.index, d.prefix),
                                                       "findings": []})
    for f in findings:
        suite = suites.setdefault(_suite_name(f), OrderedDict())
        prefix = list_item_prefix(f.path)
        case = suite.setdefault((f.file, f.doc, prefix), {"name": _case_name(f.kind, f.name, f.doc, prefix),
                                                          "findings": []})
        case["findings"].append(f)

    root = ET.Element("testsuites", name=tool, time="0")
    total_tests = total_failures = 0
    for n_suite, (suite_name, cases) in enumerate(suites.items()):
        suite = ET.SubElement(root, "testsuite", name=_x(suite_name), id=str(n_suite), time="0")
        failures = 0
        for case in cases.values():
            tc = ET.SubElement(suite, "testcase", classname=_x(suite_name), name=_x(case["name"]), time="0")
            errors = [f for f in case["findings"] if f.level == "error"]
            warnings = [f for f in case["findings"] if f.level != "error"]
            for f in errors:
                el = ET.SubElement(tc, "failure", message=_x(f"{f.path + ': ' if f.path else ''}{f.message}"), type=f.rule)
                el.text = _x(_text(f))
            if warnings:
                ET.SubElement(tc, "system-out").text = _x("\n".join(_text(f) for f in warnings))
            if errors:
                failures += 1
        if not cases:
            ET.SubElement(suite, "testcase", classname=_x(suite_name), name="(no findings)", time="0")
        n = max(len(cases), 1)
        suite.set("tests", str(n))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        total_tests += n
        total_failures += failures
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    root.set("errors", "0")
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(f"<!-- {tool} {__version__}: {documents if documents is not None else '?'} document(s) -->\n")
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")

#!/usr/bin/env python3
"""Conformance: kdt.apivalidation against the upstream tests' own tables, at every Kubernetes release kdt targets.

    .venv/bin/python bench/apiserver.py [--tags v0.25.0,v0.35.0]

Reads kubernetes/apimachinery (a snapshot fetched with the search tool's `fetch
github:kubernetes/apimachinery`, found through bench/repos.py) at the tag of each
Kubernetes minor kdt bundles schemas for (1.25 to 1.37: v0.<minor>.<newest patch>,
a pre-release when no release exists), and from each tag the test tables of the
functions kdt ports:

| upstream test (file at the tag) | kdt function |
| --- | --- |
| TestIsDNS1123Label, TestIsDNS1123Subdomain, TestIsDNS1035Label (pkg/util/validation/validation_test.go; pkg/api/validate/content/dns_test.go where present) | formats.is_dns1123_label, is_dns1123_subdomain, is_dns1035_label |
| TestIsQualifiedName (validation_test.go), TestIsLabelKey (content/kube_test.go) | formats.is_label_key |
| TestIsValidLabelValue (validation_test.go), TestIsLabelValue (content/kube_test.go) | formats.is_label_value |
| TestIsValidPortNum, TestIsValidPortName | formats.is_valid_port_num, is_valid_port_name |
| TestIsRelaxedEnvVarName (from v0.30) | formats.is_relaxed_env_var_name |
| TestIsConfigMapKey, TestIsHTTPHeaderName | formats.is_config_map_key, is_http_header_name |
| TestMaskTrailingDash (pkg/api/validation/generic_test.go, from v0.27) | formats._mask_trailing_dash |
| TestQuantityParse (pkg/api/resource/quantity_test.go): every valid input with its expected value and format, again with a leading `-` and `+`, and the invalid list | quantity.parse_quantity |

The values are read from the Go source at run time (string literals, raw
strings, `strings.Repeat`, `string(rune(N))`, `+`); nothing upstream is copied into
the project. Prints, per test and tag range, the valid cases accepted and the
invalid cases rejected, and every case that disagrees. kubernetes/kubernetes
itself (validation_test.go of the pod, Job and StatefulSet rules) is too large to
fetch here: those rules are held by the project's own fixtures
(tests/validate/test_apivalidation.py), built on the functions above.
Target: every valid case accepted, every invalid case rejected.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from repos import checkout, missing, tags as repo_tags  # noqa: E402

from kdt import formats as F  # noqa: E402
from kdt import quantity as Q  # noqa: E402
from kdt.schemas import kubernetes_versions  # noqa: E402

REPO = "kubernetes/apimachinery"
VALIDATION = "pkg/util/validation/validation_test.go"
CONTENT_DNS = "pkg/api/validate/content/dns_test.go"
CONTENT_KUBE = "pkg/api/validate/content/kube_test.go"
GENERIC = "pkg/api/validation/generic_test.go"
QUANTITY = "pkg/api/resource/quantity_test.go"

# test function -> (kdt function, names of the valid lists, names of the invalid lists)
TABLES = {
    "TestIsDNS1123Label": (F.is_dns1123_label, ("goodValues",), ("badValues",)),
    "TestIsDNS1123Subdomain": (F.is_dns1123_subdomain, ("goodValues",), ("badValues",)),
    "TestIsDNS1035Label": (F.is_dns1035_label, ("goodValues",), ("badValues",)),
    "TestIsValidPortNum": (F.is_valid_port_num, ("goodValues",), ("badValues",)),
    "TestIsValidPortName": (F.is_valid_port_name, ("goodValues",), ("badValues",)),
    "TestIsQualifiedName": (F.is_label_key, ("successCases",), ("errorCases",)),
    "TestIsLabelKey": (F.is_label_key, ("successCases",), ("errorCases",)),
    "TestIsValidLabelValue": (F.is_label_value, ("successCases",), ("errorCases",)),
    "TestIsLabelValue": (F.is_label_value, ("successCases",), ("errorCases",)),
    "TestIsHTTPHeaderName": (F.is_http_header_name, ("goodValues",), ("badValues",)),
    "TestIsConfigMapKey": (F.is_config_map_key, ("successCases",), ("failureCases",)),
    "TestIsRelaxedEnvVarName": (F.is_relaxed_env_var_name, ("goodValues",), ("badValues",)),
}
FILES = (VALIDATION, CONTENT_DNS, CONTENT_KUBE)


# A reader of the Go expressions the tables use -------------------------------------------------

_TOKEN = re.compile(r'''\s+|//[^\n]*|/\*.*?\*/|(?P<str>"(?:[^"\\\n]|\\.)*")|(?P<raw>`[^`]*`)|(?P<num>-?[0-9][0-9_]*)'''
                    r'''|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)|(?P<op>[()+,])''', re.S)


class Unreadable(ValueError):
    """An expression this reader does not evaluate (the case is counted as not read)."""


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise Unreadable(text[pos:pos + 20])
        pos = m.end()
        for kind in ("str", "raw", "num", "name", "op"):
            if m.group(kind) is not None:
                out.append((kind, m.group(kind)))
    return out


def _go_string(lit: str) -> str:
    # Go's interpreted string literals: the escapes these tables use are Python's too (\\, \", \t, \x.., \u....).
    return ast.literal_eval(lit)


def _elements(body: str) -> list:
    """The evaluated elements of a composite literal's body."""
    toks = _tokens(body)
    out, i = [], 0

    def expr(i):
        v, i = term(i)
        while i < len(toks) and toks[i] == ("op", "+"):
            w, i = term(i + 1)
            v = v + w
        return v, i

    def term(i):
        kind, text = toks[i]
        if kind == "str":
            return _go_string(text), i + 1
        if kind == "raw":
            return text[1:-1], i + 1
        if kind == "num":
            return int(text.replace("_", "")), i + 1
        if kind == "name" and i + 1 < len(toks) and toks[i + 1] == ("op", "("):
            args, i = [], i + 2
            while toks[i] != ("op", ")"):
                a, i = expr(i)
                args.append(a)
                if toks[i] == ("op", ","):
                    i += 1
            i += 1
            if text == "strings.Repeat":
                return args[0] * args[1], i
            if text == "rune":
                return args[0], i
            if text == "string":
                return chr(args[0]) if isinstance(args[0], int) else args[0], i
        raise Unreadable(text)

    while i < len(toks):
        v, i = expr(i)
        out.append(v)
        if i < len(toks) and toks[i] == ("op", ","):
            i += 1
    return out


def _block(text: str, start: int) -> tuple[str, int]:
    """The text between the `{` at `start` and its closing brace (strings and comments skipped)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c in "\"`":
            end = text.index(c, i + 1) if c == "`" else re.compile(r'"(?:[^"\\\n]|\\.)*"').match(text, i).end() - 1
            i = end + 1
            continue
        if text.startswith("//", i):
            i = text.index("\n", i)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1:i], i
        i += 1
    raise Unreadable("unbalanced braces")


def functions(source: str) -> dict[str, str]:
    """Body of every top-level test function."""
    out = {}
    for m in re.finditer(r"^func (Test\w+)\(t \*testing\.T\) \{", source, re.M):
        out[m.group(1)] = _block(source, m.end() - 1)[0]
    return out


def slice_literal(body: str, name: str) -> list | None:
    m = re.search(rf"\b{name}\s*:?=\s*\[\](?:string|int)\s*\{{", body)
    if not m:
        return None
    return _elements(_block(body, m.end() - 1)[0])


# Checks ------------------------------------------------------------------------------------------

def check_table(fn, good: list, bad: list) -> tuple[int, int, int, int, list[str]]:
    wrong = []
    ok_good = sum(1 for v in good if not fn(v) or wrong.append(f"valid {v!r} refused: {fn(v)}"))
    ok_bad = sum(1 for v in bad if fn(v) or wrong.append(f"invalid {v!r} accepted"))
    return ok_good, len(good), ok_bad, len(bad), wrong


def _fraction(expr: str) -> Fraction:
    """A Go numeric expression of the quantity table (`5`, `.5*1024*1024`, `8*1024`) as an exact value."""
    node = ast.parse(expr.strip(), mode="eval").body

    def ev(n):
        if isinstance(n, ast.Constant):
            return Fraction(str(n.value))
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            return ev(n.left) * ev(n.right)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        raise Unreadable(expr)
    return ev(node)


_QTY_ENTRY = re.compile(r'\{\s*("(?:[^"\\]|\\.)*")\s*,\s*(?:decQuantity\(([^,]+),\s*(-?\d+),\s*(\w+)\)'
                        r'|Quantity\{d:\s*maxAllowed,\s*Format:\s*(\w+)\})\s*\}')


def quantity_cases(body: str) -> tuple[list, list]:
    """TestQuantityParse: [(input, value, format)] and the invalid inputs."""
    start = body.index("table := []struct")
    table, end = _block(body, body.index("}{", start) + 1)
    valid = []
    for m in _QTY_ENTRY.finditer(table):
        text = _go_string(m.group(1))
        if m.group(5):
            valid.append((text, Fraction(2 ** 63 - 1), m.group(5)))
        else:
            valid.append((text, _fraction(m.group(2)) * Fraction(10) ** int(m.group(3)), m.group(4)))
    invalid = slice_literal(body[end:], "invalid") or []
    return valid, invalid


def check_quantities(valid: list, invalid: list) -> tuple[int, int, int, int, list[str]]:
    wrong, ok = [], 0
    cases = 0
    for text, value, fmt in valid:
        for sign, expect in (("", value), ("-", -value), ("+", value)):
            cases += 1
            try:
                got, got_fmt = Q.parse_quantity(sign + text)
            except Q.QuantityError as exc:
                wrong.append(f"valid {sign + text!r} refused: {exc}")
                continue
            if got == expect and got_fmt == fmt:
                ok += 1
            else:
                wrong.append(f"{sign + text!r}: {got} {got_fmt}, expected {expect} {fmt}")
    bad_ok = 0
    for text in invalid:
        try:
            Q.parse_quantity(text)
            wrong.append(f"invalid {text!r} accepted")
        except Q.QuantityError:
            bad_ok += 1
    return ok, cases, bad_ok, len(invalid), wrong


def tags_for(tags: list[str], minors: list[int]) -> dict[int, str]:
    out = {}
    for minor in minors:
        releases = [t for t in tags if re.fullmatch(rf"v0\.{minor}\.\d+", t)]
        pre = [t for t in tags if re.fullmatch(rf"v0\.{minor}\.0-(alpha|beta|rc)\.\d+", t)]
        key = lambda t: [int(x) if x.isdigit() else x for x in re.split(r"[.-]", t[1:])]  # noqa: E731
        if releases:
            out[minor] = max(releases, key=key)
        elif pre:
            out[minor] = max(pre, key=key)
    return out


def show(tag: str, path: str) -> str | None:
    folder = checkout(REPO, tag)
    f = folder / path if folder else None
    return f.read_text() if f is not None and f.is_file() else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tags", help="comma-separated apimachinery tags (default: one per Kubernetes minor kdt bundles)")
    args = p.parse_args()
    available = repo_tags(REPO)
    if not available:
        print(missing(REPO))
        return 1
    if args.tags:
        tags = {i: t for i, t in enumerate(args.tags.split(","))}
    else:
        minors = [int(v.split(".")[1]) for v in kubernetes_versions()]
        tags = tags_for(available, minors)
    results: dict[str, list] = {}       # test -> [(tag, good_ok, good, bad_ok, bad, wrong)]
    unread = 0
    for tag in tags.values():
        for path in FILES:
            source = show(tag, path)
            if source is None:
                continue
            for name, body in functions(source).items():
                if name not in TABLES:
                    continue
                fn, goods, bads = TABLES[name]
                try:
                    good = [v for n in goods for v in (slice_literal(body, n) or [])]
                    bad = [v for n in bads for v in (slice_literal(body, n) or [])]
                except Unreadable:
                    unread += 1
                    continue
                results.setdefault(f"{name} ({Path(path).name})", []).append((tag, *check_table(fn, good, bad)))
        generic = show(tag, GENERIC)
        if generic and "TestMaskTrailingDash" in generic:
            pairs = re.findall(r'beforeMasking:\s*("(?:[^"\\]|\\.)*"),\s*expectedAfterMasking:\s*("(?:[^"\\]|\\.)*")',
                               generic)
            wrong = [f"{_go_string(a)!r} -> {F._mask_trailing_dash(_go_string(a))!r}, expected {_go_string(b)!r}"
                     for a, b in pairs if F._mask_trailing_dash(_go_string(a)) != _go_string(b)]
            results.setdefault("TestMaskTrailingDash (generic_test.go)", []).append(
                (tag, len(pairs) - len(wrong), len(pairs), 0, 0, wrong))
        qsrc = show(tag, QUANTITY)
        if qsrc:
            body = functions(qsrc).get("TestQuantityParse")
            if body:
                results.setdefault("TestQuantityParse (quantity_test.go)", []).append(
                    (tag, *check_quantities(*quantity_cases(body))))
    print(f"{REPO} at {len(tags)} tags: {', '.join(tags.values())}")
    print(f"{'upstream test':<46} {'tags':>4} {'valid accepted':>16} {'invalid rejected':>17}")
    total = [0, 0, 0, 0]
    failures = []
    for name, rows in results.items():
        sums = [sum(r[i] for r in rows) for i in (1, 2, 3, 4)]
        total = [a + b for a, b in zip(total, sums)]
        print(f"{name:<46} {len(rows):>4} {sums[0]:>7}/{sums[1]:<8} {sums[2]:>8}/{sums[3]:<8}")
        failures += [f"  {name} @ {r[0]}: {w}" for r in rows for w in r[5]]
    print(f"{'all':<46} {'':>4} {total[0]:>7}/{total[1]:<8} {total[2]:>8}/{total[3]:<8}")
    if unread:
        print(f"tables not read (an expression this reader does not evaluate): {unread}")
    print("\n".join(failures) if failures else "disagreements: none")
    print("not read: kubernetes/kubernetes validation_test.go (the repository is too large to fetch here); the pod, "
          "Job and StatefulSet rules built on the functions above are held by tests/validate/test_apivalidation.py")
    met = not failures and not unread and total[1] and total[3]
    print(f"target (every valid case accepted, every invalid case rejected): {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

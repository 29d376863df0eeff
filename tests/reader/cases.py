"""Edge cases of YAML as editors and generators write it, each a small file written here.

Each case is one file (most hold one document). The kinds are built-in ones whose fields have a
known type, so that kubectl's own typed decode judges how a scalar was read: ConfigMap `data`
(strings), Pod `spec.terminationGracePeriodSeconds` (an integer) and `spec.hostNetwork` (a boolean).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    what: str
    # A difference from kubectl kept on purpose: {path: reason}, path "apply" or "kustomize".
    deliberate: dict = field(default_factory=dict)


def cm(body: str, name: str = "c") -> str:
    """A ConfigMap whose `data` holds `body` (lines indented two spaces)."""
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n{body}"


def pod(spec_lines: str, name: str = "p") -> str:
    """A Pod with one container and `spec_lines` (indented two spaces) in its spec."""
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n"
            f"  containers:\n  - name: c\n    image: busybox\n{spec_lines}")


def _b(text: str) -> bytes:
    return _named(text).encode()


CASES: list[Case] = []

# The deliberate differences, and why.
DUPLICATES = ("`kubectl apply -f` keeps the last of two equal keys (go-yaml v2 decodes into a map), but the API "
              "server's strict field validation (kubectl's default --validate=strict, KEP-2885) refuses a duplicate "
              "field, and `kubectl kustomize` refuses it too: an error here")
OFFLINE_TYPES = ("offline, kubectl decodes only an object's metadata into its Go type; the API server refuses a "
                 "boolean where ConfigMap.data takes a string, which kdt's schema check says before it gets there")


# Each case's objects are named after its place in the corpus, so that one kustomization can hold many
# cases (kustomize refuses two objects of one kind and name).
_NAME = re.compile(r'((?:^|\n)  name: |metadata: \{name: |"name": ")([a-e])(?=[\n}"])')


def _named(text: str) -> str:
    """`text` with its objects named after the case about to be added."""
    return _NAME.sub(lambda m: f"{m[1]}k{len(CASES)}{m[2]}", text)


def case(name: str, data, what: str, **deliberate) -> None:
    CASES.append(Case(name, data if isinstance(data, bytes) else _b(data), what, dict(deliberate)))


# --- bytes: control characters, NUL, BOM, line ends, invalid UTF-8 -------------------------------
case("plain", cm("  k: v\n"), "a valid ConfigMap")
case("nul-in-value", cm("  k: \"a\x00b\"\n  bad: [\n"), "a NUL byte, an unclosed [ after it")
case("nul-plain", cm("  k: a\x00b\n"), "a NUL byte in a plain scalar")
case("ctl-soh", cm("  k: a\x01b\n"), "a raw U+0001")
case("ctl-esc", cm("  k: \"\x1b[1m\"\n"), "a raw ESC (a terminal colour code pasted in)")
case("ctl-del", cm("  k: a\x7fb\n"), "a raw DEL (U+007F)")
case("ctl-c1", cm("  k: a\u0086b\n"), "a C1 control (U+0086)")
case("ctl-nel", cm("  k: a\u0085b\n"), "NEL (U+0085), allowed by YAML")
case("ctl-vt-ff", cm("  k: a\x0b\x0cb\n"), "vertical tab and form feed")
case("ctl-escaped", cm("  k: \"a\\x01b\\0\"\n"), "control characters written as escapes in double quotes")
case("ctl-in-comment", cm("  k: v # \x01\n"), "a control character in a comment")
case("ctl-fffe", cm("  k: a\ufffeb\n"), "U+FFFE, a noncharacter")
case("bom-utf8", "\ufeff" + cm("  k: v\n"), "a UTF-8 byte-order mark")
case("bom-mid", _b(cm("  k: v\n")) + b"---\n\xef\xbb\xbf" + _b(cm("  k: v\n", "d")),
     "a UTF-8 byte-order mark at the start of the second document")
case("bom-in-value", _b(cm("  k: a\ufeffb\n")), "U+FEFF inside a value")
case("utf16le", b"\xff\xfe" + _named(cm("  k: v\n")).encode("utf-16-le"), "UTF-16 (little-endian) with its BOM")
case("utf16be", b"\xfe\xff" + _named(cm("  k: v\n")).encode("utf-16-be"), "UTF-16 (big-endian) with its BOM")
case("crlf", _b(_named(cm("  k: v\n  l: |\n    one\n    two\n")).replace("\n", "\r\n")), "CRLF line ends")
case("crlf-multi", _b(_named(cm("  k: v\n") + "---\n" + cm("  k: w\n", "d")).replace("\n", "\r\n")),
     "CRLF line ends and a --- marker")
case("cr-only", _b(_named(cm("  k: v\n")).replace("\n", "\r")), "old Mac line ends (CR only)")
case("utf8-bad-byte", _b(cm("  k: \"a")) + b"\xff" + _b("b\"\n"), "an invalid UTF-8 byte (0xFF)")
case("utf8-truncated", _b(cm("  k: a")) + b"\xe2\x82" + _b("\n"), "a truncated 3-byte sequence")
case("utf8-overlong", _b(cm("  k: a")) + b"\xc0\xaf" + _b("\n"), "an overlong encoding of '/'")
case("utf8-surrogate", _b(cm("  k: a")) + b"\xed\xa0\x80" + _b("\n"), "an encoded surrogate (U+D800)")
case("utf8-latin1", _b(cm("  k: caf")) + b"\xe9" + _b("\n"), "a Latin-1 byte (a file saved as ISO-8859-1)")
case("utf8-emoji", cm("  k: \"\U0001F680 caf\u00e9\"\n"), "valid 4-byte UTF-8")

# --- tabs ----------------------------------------------------------------------------------------
case("tab-indent", cm("\tk: v\n"), "a tab as indentation")
case("tab-after-colon", cm("  k:\tv\n"), "a tab between key and value")
case("tab-in-value", cm("  k: a\tb\n"), "a tab inside a plain value")
case("tab-before-comment", cm("  k: v\t# c\n"), "a tab before a comment")

# --- YAML 1.1 scalars in string, integer and boolean fields ---------------------------------------
# kubectl decodes only the object's metadata offline (ObjectMeta: labels are strings, generation an
# integer, ownerReferences[].controller a boolean): the typed fields these cases use.
def labels(value: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    k: {value}\n"


def annotation(value: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    k: {value}\n"


def generation(value: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  generation: {value}\n"


def controller(value: str) -> str:
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  ownerReferences:\n  - apiVersion: v1\n"
            f"    kind: ConfigMap\n    name: o\n    uid: u\n    controller: {value}\n")


for word in ("yes", "no", "on", "off", "y", "Y", "NO", "On"):
    case(f"bool11-{word}-string", labels(word), f"`{word}` as a label value (a string)")
case("bool11-yes-data", cm("  k: yes\n"), "`yes` in ConfigMap data",
     apply=OFFLINE_TYPES)
case("bool11-yes-quoted", labels('"yes"'), "`\"yes\"` quoted as a label value")
case("bool11-yes-annotation", annotation("yes"), "`yes` as an annotation value")
case("bool11-yes-bool", controller("yes"), "`yes` in a boolean field")
case("bool11-off-bool", controller("off"), "`off` in a boolean field")
case("bool11-true-bool", controller("true"), "`true` in a boolean field")
case("bool11-yes-key", cm("  yes: v\n"), "`yes` as a mapping key")
case("bool11-y-key", cm("  y: v\n"), "`y` as a mapping key")
case("bool11-on-flow", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {k: on}\n",
     "`on` in a flow mapping, as a label value")
case("bool-true-string", labels("true"), "`true` as a label value")
case("octal-string", labels("0777"), "`0777` as a label value")
case("octal-annotation", annotation("0777"), "`0777` as an annotation value")
case("octal-int", generation("0777"), "`0777` in an integer field")
case("octal12-int", generation("0o777"), "`0o777` in an integer field")
case("octal-08-int", generation("08"), "`08` (not octal) in an integer field")
case("hex-int", generation("0x1F"), "`0x1F` in an integer field")
case("binary-int", generation("0b101"), "`0b101` in an integer field")
case("underscore-int", generation("1_000"), "`1_000` in an integer field")
case("underscore-lead", labels("_1"), "`_1` as a label value")
case("plus-int", generation("+30"), "`+30` in an integer field")
case("sexagesimal-int", generation("1:30"), "`1:30` (base 60 in YAML 1.1) in an integer field")
case("sexagesimal-string", labels("1:30"), "`1:30` as a label value")
case("exp-int", generation("1e3"), "`1e3` in an integer field")
case("float-int", generation("1.5"), "`1.5` in an integer field")
case("float-dot-int", generation("30."), "`30.` in an integer field")
case("float-zero-int", generation("30.0"), "`30.0` in an integer field")
case("int-string", labels("8080"), "an unquoted number as a label value")
case("big-int", generation("99999999999999999999"), "an integer past uint64")
case("uint64-int", generation("18446744073709551615"), "the largest uint64 in an int64 field")
case("int64-min", generation("-9223372036854775808"), "the smallest int64")
case("inf-string", labels(".inf"), "`.inf` as a label value")
case("nan-int", generation(".nan"), "`.nan` in an integer field")
case("exp-overflow", labels("1e400"), "`1e400` (past float64) as a label value")
case("null-string", labels("~"), "`~` (null) as a label value")
case("date-string", labels("2001-12-14"), "a date as a label value")
case("date-annotation", annotation("2001-12-14"), "a date as an annotation value")
case("timestamp-string", cm("  k: 2001-12-14T21:59:43.10-05:00\n"), "a timestamp in ConfigMap data")
case("bad-date-string", labels("2001-02-30"), "a date that does not exist as a label value")
case("tag-str", labels("!!str 0777"), "`!!str 0777`")
case("tag-int-string", generation('!!int "30"'), "`!!int \"30\"` in an integer field")
case("tag-bool-yes", controller("!!bool yes"), "`!!bool yes`")
case("tag-custom", labels("!foo bar"), "a custom tag")
case("tag-binary", labels("!!binary aGk="), "`!!binary` as a label value")
case("tag-set", labels("!!set {a, b}"), "a `!!set` where a string goes")
case("tag-bad-int", generation("!!int abc"), "`!!int abc`")
case("escape-slash", labels('"a\\/b"'), "the escape `\\/` in double quotes")
case("escape-unicode", labels('"caf\\u00e9"'), "a \\u escape in double quotes")

# --- anchors, aliases, merge keys ----------------------------------------------------------------
case("anchor-scalar", cm("  a: &v hello\n  b: *v\n"), "an anchored scalar and its alias")
case("anchor-map", ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: &l\n    app: x\n"
                    "  annotations: *l\ndata:\n  k: v\n"), "an anchored mapping reused")
case("anchor-undefined", cm("  a: *nope\n"), "an alias of an anchor never defined")
case("anchor-cycle", ("apiVersion: v1\nkind: ConfigMap\nmetadata: &m\n  name: c\n  labels:\n    x: *m\n"),
     "an alias inside its own anchor (a cycle)")
case("anchor-redefined", cm("  a: &v one\n  b: &v two\n  c: *v\n"), "an anchor defined twice")
case("merge-key", ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    <<: &d\n"
                   "      a: \"1\"\n    b: \"2\"\ndata:\n  <<: *d\n"), "merge keys `<<: *d`")
case("merge-list", ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: &x {a: \"1\"}\n"
                   "  labels: &y {b: \"2\"}\ndata:\n  <<: [*x, *y]\n"), "a merge of a list of mappings")
case("merge-override", ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: &d {a: one}\n"
                        "data:\n  <<: *d\n  a: two\n"), "a key after a merge overrides it")
case("merge-before", ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: &d {a: one}\n"
                      "data:\n  a: two\n  <<: *d\n"), "a key before a merge of the same key")
case("merge-scalar", ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: &d hello\n"
                      "data:\n  <<: *d\n"), "a merge of a scalar")
case("merge-twice", ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: &d {a: one}\n"
                     "  labels: &e {b: two}\ndata:\n  <<: *d\n  <<: *e\n"), "two merge keys in one mapping")
case("merge-quoted", cm("  \"<<\": v\n"), "a quoted `<<` (a plain key)")


def crd(levels: int) -> str:
    """A CustomResourceDefinition whose schema nests `levels` properties (2 levels each), block style."""
    lines = ["apiVersion: apiextensions.k8s.io/v1", "kind: CustomResourceDefinition", "metadata:",
             "  name: things.example.com", "spec:", "  group: example.com",
             "  names: {kind: Thing, plural: things}", "  scope: Namespaced", "  versions:", "  - name: v1",
             "    served: true", "    storage: true", "    schema:", "      openAPIV3Schema:", "        type: object"]
    pad = "        "
    for i in range(levels):
        lines += [f"{pad}properties:", f"{pad}  p{i}:", f"{pad}    type: object"]
        pad += "    "
    return "\n".join(lines) + "\n"


def _laughs(levels: int, width: int) -> str:
    lines = [f"  a0: &a0 [{', '.join(['x'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n"
            + "\n".join("  " + ln for ln in lines) + "\n")


case("alias-bomb", _laughs(5, 9), "aliases that expand to 9^5 nodes (a small billion laughs)")
case("alias-modest", _laughs(3, 5), "aliases that expand to a few hundred nodes")

# --- duplicate keys ------------------------------------------------------------------------------
case("dup-data-key", cm("  k: a\n  k: b\n"), "a key twice in data", apply=DUPLICATES)
case("dup-top-key", cm("  k: v\n").replace("kind: ConfigMap\n", "kind: ConfigMap\nkind: ConfigMap\n"),
     "`kind` twice", apply=DUPLICATES)
case("dup-metadata", ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\nmetadata:\n  name: b\n"),
     "`metadata` twice", apply=DUPLICATES)
case("dup-flow", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {a: p, a: q}\n",
     "a key twice in a flow mapping", apply=DUPLICATES)

# --- document markers, directives, streams --------------------------------------------------------
case("marker-leading", "---\n" + cm("  k: v\n"), "a leading ---")
case("marker-trailing", cm("  k: v\n") + "---\n", "a trailing ---")
case("marker-comment", cm("  k: v\n") + "--- # next\n" + cm("  k: w\n", "d"), "--- followed by a comment")
case("marker-content", cm("  k: v\n") + "--- " + "{apiVersion: v1, kind: ConfigMap, metadata: {name: d}}\n",
     "a document on the --- line")
case("marker-dashes4", cm("  k: v\n") + "----\n" + cm("  k: w\n", "d"), "---- (four dashes)")
case("marker-empty-docs", "---\n---\n" + cm("  k: v\n") + "---\n\n---\n# c\n---\n" + cm("  k: w\n", "d"),
     "empty documents between markers")
case("marker-end", cm("  k: v\n") + "...\n", "a document end marker")
case("marker-end-more", cm("  k: v\n") + "...\n" + cm("  k: w\n", "d"),
     "content after a document end marker without ---")
# apimachinery's YAMLReader keeps a `---` line only where nothing is buffered (decoder.go): the `---` that ends a
# document is dropped, and a `...` then opens the next piece, which go-yaml refuses (#55's mutated copies).
case("marker-comment-end-in-sequence", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  finalizers:\n"
     "  - a\n--- # comment\n...\n  - b\ndata:\n  k: v\n", "`--- # comment` and `...` inserted inside a block sequence")
case("marker-end-after-marker", cm("  k: v\n") + "---\n...\n---\n" + cm("  k: w\n", "d"),
     "`...` right after the --- that ends a document")
case("marker-twice-end", cm("  k: v\n") + "---\n---\n...\n---\n" + cm("  k: w\n", "d"),
     "`...` after two --- lines (the second opens an explicit document)")
case("marker-thrice-end", cm("  k: v\n") + "---\n---\n---\n...\n", "`...` after three --- lines")
case("marker-leading-end", "---\n...\n---\n" + cm("  k: v\n"), "`...` after the stream's first ---")
case("marker-end-first", "...\n" + cm("  k: v\n"), "a stream that opens with `...`")
case("marker-comment-then-end", "# c\n---\n# d\n...\n---\n" + cm("  k: v\n"),
     "a comment, ---, a comment, `...`")
case("marker-indented", cm("  k: |\n    a\n    ---\n    b\n"), "--- inside a block scalar")
case("directive-yaml11", "%YAML 1.1\n---\n" + cm("  k: v\n"), "a %YAML 1.1 directive")
case("directive-yaml12", "%YAML 1.2\n---\n" + cm("  k: v\n"), "a %YAML 1.2 directive")
case("directive-tag", "%TAG !e! tag:example.com,2000:\n---\n" + cm("  k: v\n"), "a %TAG directive")
case("json-doc", '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}\n',
     "a JSON document")
case("json-stream", ('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}\n'
                     '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}\n'), "two JSON objects")
case("json-then-yaml", '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}\n---\n'
     + cm("  k: v\n", "d"), "a JSON document, then a YAML one")
case("empty-file", "", "an empty file")
case("comments-only", "# nothing here\n", "only a comment")
case("null-doc", "null\n---\n" + cm("  k: v\n"), "a `null` document")
case("scalar-doc", "hello\n", "a document that is a string")
case("list-doc", "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n", "a document that is a list")
case("no-kind", "apiVersion: v1\nmetadata:\n  name: c\n", "a mapping without kind")
case("kind-list", ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n"
                   "  metadata: {name: a}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n"),
     "kind: List")

# --- syntax, keys, nesting, size -------------------------------------------------------------------
case("unclosed-flow", cm("  k: [a, b\n"), "an unclosed [")
case("bad-indent", cm("  k: v\n   l: w\n"), "a key indented deeper than its sibling")
case("key-null", cm("  ~: v\n"), "a null key")
case("key-complex", cm("  ? [a, b]\n  : v\n"), "a sequence as a key")
case("key-int", cm("  5: v\n"), "an integer key")
case("key-float", cm("  1.5: v\n"), "a float key")
case("key-template", cm("  {{ .Values.x }}: v\n"), "a template expression as a key")
case("deep-crd-ok", crd(30), "a CRD schema nested 60 levels deep")
case("deep-flow-10000", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nbinaryData: " + "[" * 10000
     + "]" * 10000 + "\n", "10,000 nested flow sequences")
case("deep-flow-20000", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nbinaryData: " + "[" * 20000
     + "]" * 20000 + "\n", "20,000 nested flow sequences")
case("deep-flow-300", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nbinaryData: " + "[" * 300
     + "]" * 300 + "\n", "300 nested flow sequences",
     apply="kdt reads no document nested past 256 levels (no Kubernetes object nests past ~50; the deepest "
           "upstream CRD schema seen nests 47); kubectl reads up to 10,000",
     kustomize="as for apply")
case("deep-block-300", crd(150), "a CRD schema nested 300 levels deep (block style)",
     apply="kdt reads no document nested past 256 levels; kubectl reads up to 10,000", kustomize="as for apply")
case("long-line", cm("  k: \"" + "x" * (1 << 20) + "\"\n"), "a 1 MiB line")
case("long-plain", cm("  k: " + "y" * (1 << 20) + "\n"), "a 1 MiB plain scalar")
case("long-key", cm("  " + "k" * 2000 + ": v\n"), "a 2,000-character implicit key")
case("many-docs", "".join(cm(f"  k: v{i}\n", f"c{i}") + "---\n" for i in range(200)), "200 documents")


def mutate(text: str, rng) -> str:
    """`text` with one slip an editor makes: an indentation off by one, a character inserted, a line doubled
    or two swapped, something appended to a line (the fast tier's test and bench/reader.py use it)."""
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    how = rng.randrange(6)
    if how == 0:
        lines[i] = " " + lines[i]
    elif how == 1:
        lines[i] = lines[i][1:]
    elif how == 2 and lines[i]:
        j = rng.randrange(len(lines[i]))
        lines[i] = lines[i][:j] + rng.choice(":-[]{},#'\"|>?*&!%@` ") + lines[i][j:]
    elif how == 3:
        lines.insert(i, lines[rng.randrange(len(lines))])     # a line twice (a duplicate key, often)
    elif how == 4 and i + 1 < len(lines):
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    else:
        lines[i] = lines[i].rstrip() + rng.choice([" x", ": y", " #", "  - z", ":"])
    return "\n".join(lines)

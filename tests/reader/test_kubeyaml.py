"""The facts of kdt.kubeyaml, each against the source that defines it, and its bounds on hostile input."""
from __future__ import annotations

import time

import pytest

from kdt import kubeyaml as K
from kdt.documents import load_stream, read_stream


@pytest.mark.parametrize("text,v2,v3", [
    # go.yaml.in/yaml/v2 v2.4.4 resolve.go resolveMapList (YAML 1.1 booleans); v3 v3.0.4 keeps only true/false
    ("yes", True, "yes"), ("No", False, "No"), ("ON", True, "ON"), ("off", False, "off"), ("y", True, "y"),
    ("n", False, "n"), ("true", True, True), ("FALSE", False, False), ("~", None, None), ("", None, None),
    # strconv.ParseInt(s, 0, 64) after removing "_": Go's base prefixes; a leading 0 is octal
    ("0777", 511, 511), ("0o17", 15, 15), ("0x1F", 31, 31), ("0b101", 5, 5), ("1_000", 1000, 1000),
    ("+30", 30, 30), ("-0b11", -3, -3),
    # not an integer, but yamlStyleFloat: a float (written by encoding/json as an integer when integral)
    ("08", 8.0, 8.0), ("1e3", 1000.0, 1000.0), ("30.", 30.0, 30.0), (".5", 0.5, 0.5), ("1_0.5", 10.5, 10.5),
    ("99999999999999999999", 1e20, 1e20),
    # strings: base 60 was dropped (resolve.go says so), `_1`, a float out of range (ParseFloat fails)
    ("1:30", "1:30", "1:30"), ("_1", "_1", "_1"), ("1e400", "1e400", "1e400"), ("0x", "0x", "0x"),
    ("500m", "500m", "500m"), ("1.2.3", "1.2.3", "1.2.3"),
    # parseTimestamp (allowedTimestampFormats), written as JSON writes a time.Time: RFC 3339
    ("2001-12-14", "2001-12-14T00:00:00Z", "2001-12-14T00:00:00Z"),
    ("2001-12-14T21:59:43.10-05:00", "2001-12-14T21:59:43.1-05:00", "2001-12-14T21:59:43.1-05:00"),
    ("2001-12-14 21:59:43.10", "2001-12-14T21:59:43.1Z", "2001-12-14T21:59:43.1Z"),
    ("2001-1-2", "2001-01-02T00:00:00Z", "2001-01-02T00:00:00Z"),
    ("2001-02-30", "2001-02-30", "2001-02-30"),             # no such day: time.Parse fails, a string
])
def test_scalars_resolve_as_go_yaml_v2_and_v3(text, v2, v3):
    assert K.resolve(text, None)[1] == v2 and type(K.resolve(text, None)[1]) is type(v2)
    assert K.resolve(text, None, v3=True)[1] == v3 and type(K.resolve(text, None, v3=True)[1]) is type(v3)


def test_tags_resolve_and_refuse_as_go_yaml():
    assert K.resolve("0777", K.STR) == (K.STR, "0777")
    assert K.resolve("30", K.INT) == (K.INT, 30)
    assert K.resolve("1", K.FLOAT) == (K.FLOAT, 1.0)             # an int where a float is tagged: converted
    with pytest.raises(K.GoError, match=r"cannot decode !!str `abc` as a !!int"):
        K.resolve("abc", K.INT)
    with pytest.raises(K.GoError):
        K.resolve("yes", K.BOOL, v3=True)                      # v3 has no YAML 1.1 booleans
    assert K.resolve("bar", "!foo") == ("!foo", "bar")         # a tag of its own: the text


def test_numbers_as_the_api_server_reads_them_back_from_json():
    # encoding/json writes an integral float64 below 1e21 with %f and its shortest digits (then zeros)
    assert K.json_number(1000.0) == 1000 and isinstance(K.json_number(1000.0), int)
    assert K.json_number(-9223372036854775809.0) == -9223372036854776000
    assert K.json_number(1.5) == 1.5 and isinstance(K.json_number(1e21), float)


def test_the_alias_ratio_is_go_yamls():
    # go.yaml.in/yaml/v2 v2.4.4 decode.go allowedAliasRatio and the check in decoder.unmarshal
    assert K.allowed_alias_ratio(400_000) == 0.99 and K.allowed_alias_ratio(4_000_000) == 0.10
    assert K.allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    assert not K.excessive_aliasing(100, 100_000) and not K.excessive_aliasing(5_000, 900)
    assert K.excessive_aliasing(5_540, 5_592) and not K.excessive_aliasing(5_530, 5_592)


def _read(text, paths=K.BOTH):
    r = K.read(text, paths)
    return r, [(p.message, p.line, p.col, p.refused_by) for p in r.problems]


def test_merge_keys_as_each_reader_merges():
    # v2 decodes a merged mapping where the `<<` stands, over the keys before it; kyaml's own keys always win.
    r, problems = _read("d: &d {a: one, b: one}\ne: &e {b: two, c: two}\n"
                        "before:\n  a: own\n  <<: *d\nafter:\n  <<: *d\n  a: own\nlist:\n  <<: [*d, *e]\n")
    assert problems == []
    assert r.data["before"] == {"a": "one", "b": "one"} and r.kustomize["before"] == {"a": "own", "b": "one"}
    assert r.data["after"] == r.kustomize["after"] == {"a": "own", "b": "one"}
    assert r.data["list"] == r.kustomize["list"] == {"a": "one", "b": "one", "c": "two"}   # earlier wins
    r, problems = _read("d: &d {a: 1}\ne: &e {b: 2}\nm:\n  <<: *d\n  <<: *e\n")
    assert r.ok and r.data["m"] == {"a": 1, "b": 2}
    assert problems == [("two merge keys (`<<`) in one mapping: kubectl kustomize refuses it (kyaml: duplicate merge "
                         "key); kubectl apply -f merges both", 4, 2, (K.KUSTOMIZE,))]
    assert _read("d: &d {a: 1}\ne: &e {b: 2}\nm:\n  <<: *d\n  <<: *e\n", (K.APPLY,))[1] == []
    r, problems = _read("s: &s text\nm:\n  <<: *s\n")
    assert not r.ok and "map merge requires map or sequence of maps" in problems[0][0] and problems[0][1:3] == (2, 2)


def test_anchors_cycles_and_undefined_aliases():
    r, _ = _read("a: &a {x: 1}\nb: *a\nc: &a two\nd: *a\n")                 # redefined: the last one counts
    assert r.data == {"a": {"x": 1}, "b": {"x": 1}, "c": "two", "d": "two"}
    assert r.data["a"] is not r.data["b"]                                   # copied, as Go decodes it afresh
    r, problems = _read("metadata: &m\n  name: c\n  labels: {x: *m}\n")
    assert not r.ok and problems[0][0].startswith("anchor 'm' value contains itself") and problems[0][1:3] == (2, 14)
    r, problems = _read("a: *nope\n")
    assert not r.ok and problems[0][:3] == ("unknown anchor 'nope' referenced: kubectl refuses it", 0, 3)


def test_keys_and_duplicates():
    r, problems = _read("5: a\nyes: b\n\"7\": c\n", (K.APPLY,))
    assert r.data == {"5": "a", "true": "b", "7": "c"} and problems == []
    r, problems = _read("5: a\nyes: b\n")
    assert r.kustomize == {"5": "a", "yes": "b"} and [p[3] for p in problems] == [(K.KUSTOMIZE,)]
    r, problems = _read("a: 1\nb: 2\na: 3\n")
    assert r.ok and r.data == {"a": 3, "b": 2} and problems[0][1:] == (2, 0, K.BOTH)
    for text, what in (("~: v\n", "null"), ("2001-12-14: v\n", "a timestamp"), ("18446744073709551615: v\n", "past int64")):
        r, problems = _read(text)
        assert not r.ok and what in problems[0][0], text


def test_annotations_are_text_to_kustomize():
    # kustomize writes annotations back from their text (api resource.go RemoveBuildAnnotations, kyaml getMapFromMeta)
    r, _ = _read("metadata:\n  annotations:\n    a: 0777\n    b: [1]\n    c: ~\n    d: 'x'\n  labels: {e: 0777}\n")
    assert r.data["metadata"] == {"annotations": {"a": 511, "b": [1], "c": None, "d": "x"}, "labels": {"e": 511}}
    assert r.kustomize["metadata"] == {"annotations": {"a": "0777", "b": "", "c": "~", "d": "x"}, "labels": {"e": 511}}


def test_what_json_cannot_carry_and_escapes_go_yaml_lacks():
    for text, msg in (("k: .inf\n", "json: unsupported value: +Inf"), ("k: -.Inf\n", "-Inf"), ("k: .nan\n", "NaN"),
                      ('k: "a\\/b"\n', "unknown escape character"), ("k: !!binary a%b\n", "invalid base64"),
                      ("k: !!int abc\n", "cannot decode")):
        r, problems = _read(text)
        assert not r.ok and msg in problems[0][0] and problems[0][3] == K.BOTH, text
    assert _read("k: !!binary aGk=\n")[0].data == {"k": "hi"}


def test_bytes_as_kubectl_apply_decodes_them():
    assert K.decode(b"\xef\xbb\xbfa: b\n") == ("a: b\n", None)
    assert K.decode(b"\xff\xfe" + "a: \u00e9\n".encode("utf-16-le")) == ("a: \u00e9\n", None)
    assert K.decode(b"\xfe\xff" + "a: b\n".encode("utf-16-be")) == ("a: b\n", None)
    text, bad = K.decode(b"a: b\nc: caf\xe9 au lait\n")
    assert text == "a: b\nc: caf\ufffd au lait\n" and (bad.line, bad.col, bad.byte, bad.offset) == (2, 7, 0xE9, 11)
    p = K.control_problem("a: b\nc: d\x01e\n")
    assert (p.line, p.col) == (1, 4) and "U+0001" in p.message
    assert K.control_problem("a: \t\u0085\ufeff\U0001F680 \ud7ff\n") is None


def _laughs(levels: int, width: int) -> str:
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n" + "".join("  " + x + "\n" for x in lines)


@pytest.mark.parametrize("name,text,message", [
    ("alias bomb (9^12 nodes)", _laughs(12, 9), "excessive aliasing"),
    ("100,000 nested [", "a: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested more than 256 levels"),
    ("100,000 nested - -", "a:\n" + "- " * 100_000 + "x\n", "nested more than 256 levels"),
    ("2,000 indented mappings", "".join(" " * i + "k:\n" for i in range(2_000)), "nested more than 256 levels"),
    ("a 20 MiB document", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  k: " + "x" * (20 << 20) + "\n",
     "kdt reads documents up to 12 MiB"),
])
def test_hostile_yaml_is_a_located_error_in_well_under_a_second(name, text, message):
    ok = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n"
    start = time.perf_counter()
    read = read_stream(text + ok, "h.yaml", named=True)
    elapsed = time.perf_counter() - start
    errors = [f for f in read.findings if f.level == "error"]
    assert len(errors) == 1 and message in errors[0].message and errors[0].line >= 1, read.findings
    assert [d.name for d in read.documents] == ["ok"]           # the next document is still read
    assert elapsed < 1.0, f"{name}: {elapsed:.2f} s"


def test_a_json_stream_is_split_and_kustomize_reads_its_first_object_only():
    text = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}\n' \
           '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}\n'
    docs, findings = load_stream(text, "s.json", named=True)
    assert [(d.name, d.line) for d in docs] == [("a", 1), ("b", 2)]
    (w,) = findings
    assert w.level == "warning" and w.line == 2 and "kubectl kustomize reads only the first JSON object" in w.message
    assert load_stream(text, "s.json", paths=(K.APPLY,), named=True)[1] == []


def test_document_markers_and_directives_as_kubectl_cuts_them():
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n"
    docs, findings = load_stream(cm % "a" + "...\n" + cm % "b", "m.yaml", named=True)
    assert [d.name for d in docs] == ["a"] and findings[0].level == "warning" and findings[0].line == 5
    docs, findings = load_stream(cm % "a" + "---- \n" + cm % "b", "m.yaml", named=True)
    assert findings[0].level == "error" and findings[0].line == 4 and findings[0].doc == 0
    docs, findings = load_stream("%YAML 1.1\n---\n" + cm % "a", "m.yaml", named=True)
    assert findings[0].level == "error" and findings[0].line == 1 and "directive" in findings[0].message

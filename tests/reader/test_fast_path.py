"""The fast tier (yaml-rs) reads only what it reads exactly as kdt.kubeyaml (and so kubectl) does.

kdt.documents sends a document to yaml-rs only when `needs_exact` finds nothing yaml-rs may read
otherwise; these tests read documents both ways and compare, over every YAML file the repository ships,
scalars spelt every way the Go resolver distinguishes, and shipped documents mutated at random (fixed seed).
"""
from __future__ import annotations

import random
from pathlib import Path


from cases import mutate
from kdt import kubeyaml as K
from kdt.documents import _chunks, fast_read, needs_exact

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p for d in ("base", "overlays", "components", "deploy", "charts") for p in (ROOT / d).rglob("*.y*ml")
                 if "templates" not in p.parts)


def _disagreements(texts) -> list[str]:
    """Texts the fast tier would take (needs_exact says no, yaml-rs reads them) but the exact reader reads
    otherwise, or refuses (yaml-rs is more lenient than libyaml and go-yaml in places: the gate sends those
    to the exact reader)."""
    out = []
    for text in texts:
        if not text.endswith("\n"):
            text += "\n"               # as kdt.documents ends every document (kubectl's LineReader does)
        if needs_exact(text):
            continue
        ok, data = fast_read(text)
        if not ok:
            continue                       # yaml-rs refuses: the exact reader reads it
        exact = K.read(text)
        if not exact.ok or exact.problems or exact.data != data or exact.kustomize != data \
                or _types(exact.data) != _types(data):
            out.append(f"{text[:200]!r}: yaml-rs {data!r:.120} / kubectl {exact.data!r:.120} "
                       f"{[p.message for p in exact.problems]}")
    return out


def _types(x):
    if isinstance(x, dict):
        return {k: _types(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_types(v) for v in x]
    return type(x).__name__


def test_shipped_documents_read_alike_by_both_tiers():
    docs = [part for p in SHIPPED for part, _ in _chunks(p.read_text())]
    assert len(docs) > 80
    assert _disagreements(docs) == []


# Every spelling the Go resolver tells apart (go.yaml.in/yaml/v2 resolve.go), and random tokens of the
# characters numbers, dates and booleans are made of.
TOKENS = ["yes", "Yes", "YES", "no", "on", "Off", "y", "N", "true", "False", "null", "~", "0", "-0", "00", "007",
          "0777", "08", "0o17", "0x1F", "0b101", "-0b11", "1_000", "_1", "1_", "+5", "-5", ".5", "-.5", "5.",
          "5.0", "5.10", "0.5", "1e3", "1E+3", "1e400", ".inf", "-.Inf", ".NaN", "1:30", "12:30:45", "2001-12-14",
          "2001-12-14T21:59:43.10Z", "1.2.3", "10.0.0.1", "123456789012345678", "1234567890123456789",
          "18446744073709551616", "500m", "1Gi", "0.5Gi", "3e4f", "v1", "1d", "-", "--", "+", ".", "0x", "<<"]
_rng = random.Random(36)
TOKENS += ["".join(_rng.choice("0123456789+-._eExXoObB:yYnN") for _ in range(_rng.randint(1, 6))) for _ in range(1500)]
TOKENS += ["".join(_rng.choice("0123456789+-._eExXoObB:yYnNtTfFaA ~#,[]{}&*!?<>|%@`'\"\\") for _ in range(_rng.randint(1, 7)))
           for _ in range(1500)]


def test_scalars_of_every_spelling_read_alike_or_go_to_the_exact_reader():
    texts = []
    for t in TOKENS:
        texts += [f"k: {t}\n", f"- {t}\n", f"{t}: v\n", f"k: {{a: {t}}}\n", f"k: [{t}, x]\n", f"k:\n  - {t} # c\n",
                  f"k: {{{t}, a: 1}}\n", f"k: {{ {t} , a: 1}}\n"]
    # A list or a mapping as the key of a flow mapping's entry with no `:` (`{[], a: 1}`) stays yaml-rs's:
    # kubectl refuses it, and validate's key check says so (kdt.validate, normalize_keys).
    found = [x for x in _disagreements(texts) if "mapping key is a list" not in x and "mapping key is a mapping" not in x]
    assert found == [], "\n".join(found)


def test_mutated_documents_read_alike_or_go_to_the_exact_reader():
    rng = random.Random(27)
    docs = [part for p in SHIPPED for part, _ in _chunks(p.read_text()) if part.strip()]
    mutated = []
    for _ in range(1500):
        mutated += [part for part, _ in _chunks(mutate(rng.choice(docs), rng))]    # cut again, as the reader would
    # and characters inserted or deleted anywhere, a few at a time
    chars = ":-[]{},#'\"|>?*&!%@` \t\n\\x0123456789yn_."
    for _ in range(1500):
        text = rng.choice(docs)
        for _ in range(rng.randrange(3) + 1):
            j = rng.randrange(len(text) + 1)
            text = text[:j] + rng.choice(chars) + text[j:] if rng.random() < 0.6 else text[:j] + text[j + 1:]
        mutated += [part for part, _ in _chunks(text)]
    found = _disagreements(mutated)
    assert found == [], "\n".join(found)

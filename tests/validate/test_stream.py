"""Validation as a stream (#13): same findings as the whole-stream path, flat memory, two processes."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from kdt import stream
from kdt.documents import _chunks, load_stream
from kdt.findings import sort_key
from kdt.validate import validate_documents

ROOT = Path(__file__).resolve().parents[2]

TRICKY = [
    "",
    "# only a comment\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n",
    "# head\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n--- # c\nkind: X\n---\nno-newline: 1",
    "a: 1\n---\n# comment only\n---\nb: |\n  --- not a marker (indented)\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_parts_cut_documents_as_load_stream_does(text):
    assert list(stream.parts(iter(io.StringIO(text)))) == list(enumerate(_chunks(text)))


def _mixed(n: int) -> str:
    docs = []
    for i in range(n):
        if i % 7 == 3:
            docs.append(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: bad-{i}}}\ndata: {{k: {i}}}\n")
        elif i % 11 == 5:
            docs.append(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: keys-{i}}}\ndata:\n  {i}: x\n")
        else:
            docs.append(f"apiVersion: v1\nkind: Service\nmetadata: {{name: s-{i}}}\nspec:\n  ports: [{{port: {i % 60000 + 1}}}]\n")
    return "---\n".join(docs)


@pytest.mark.parametrize("parallel", [False, True])
def test_stream_findings_equal_the_whole_stream_path(monkeypatch, parallel):
    text = _mixed(1300)
    monkeypatch.setattr(stream, "WINDOW", 128)
    monkeypatch.setattr(stream, "PARALLEL_FROM", 0 if parallel else 1 << 40)
    monkeypatch.setattr(stream.os, "cpu_count", lambda: 2)
    docs, problems = load_stream(text, "s.yaml", named=True)
    whole = problems + validate_documents(docs)
    got, count, entries, _ = stream.validate_stream(iter(io.StringIO(text)), "s.yaml", "1.35", "2.3", inventory=True)
    assert count == 1300 and len(entries) == 1300 and entries[5].name == "keys-5"
    assert sorted(got, key=sort_key) == sorted(whole, key=sort_key)
    assert sum(f.rule == "schema" for f in got) == 1300 // 7 + 1
    # kustomize refuses an integer key (kubectl apply -f reads it as a string): one error per such document
    assert sum(f.rule == "yaml" for f in got) == sum(1 for i in range(1300) if i % 11 == 5 and i % 7 != 3)


def _peak_kb(path: Path) -> int:
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "kdt", "validate", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())


def test_peak_memory_does_not_grow_with_the_stream(tmp_path):
    small, large = tmp_path / "small.yaml", tmp_path / "large.yaml"
    small.write_text(_mixed(2_000))
    large.write_text(_mixed(40_000))          # 20x the documents, ~3 MB
    grow_mb = (_peak_kb(large) - _peak_kb(small)) / 1024
    # Holding the large stream's documents would take ~100 MB more; findings (one in 7) take a few MB.
    assert grow_mb < 25, f"peak memory grew by {grow_mb:.0f} MB for 20x the documents"

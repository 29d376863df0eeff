"""No function of the tooling (src/) or the training samples (training/) is longer than a reader can hold:
120 lines, counted by ast from `def` to its last line (decorators aside, nested functions inside their own
and counted alone too). A longer one splits into named steps (as migrate/pytorchjob.py `plan` and
training/llm_finetune.py `run` do)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 120


def _lengths(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def test_no_function_is_longer_than_120_lines():
    files = [p for folder in ("src", "training") for p in (ROOT / folder).rglob("*.py")
             if "__pycache__" not in p.parts]
    assert len(files) > 100
    counted, long = 0, []
    for path in files:
        for name, line, n in _lengths(path):
            counted += 1
            if n > LIMIT:
                long.append(f"{path.relative_to(ROOT)}:{line} {name} ({n} lines)")
    assert counted > 1000
    assert not long, f"functions over {LIMIT} lines (split them into named steps): {long}"


def test_the_count_is_of_the_function_itself(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("@decorator\ndef f():\n    x = 1\n\n    def g():\n        return x\n    return g\n")
    assert sorted(_lengths(f)) == [("f", 2, 6), ("g", 5, 2)]

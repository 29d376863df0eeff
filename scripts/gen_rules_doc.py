#!/usr/bin/env python3
"""Generate docs/rules.md from the lint rules' docstrings (`--check`: exit 1 when the file is stale)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kdt import versions  # noqa: E402
from kdt.lint import IGNORE_ANNOTATION_PREFIX, all_rules  # noqa: E402
from kdt.lint.engine import BASES, ERROR_BASES  # noqa: E402
from kdt.generated import write_or_check  # noqa: E402
from kdt.paths import ROOT  # noqa: E402

OUT = ROOT / "docs" / "rules.md"


def render() -> str:
    rs = list(all_rules().values())
    lines = [
        "# Lint rules",
        "",
        "Generated from the rule modules in `src/kdt/lint/rules/` by `scripts/gen_rules_doc.py`;",
        "do not edit by hand. `kdt lint --list` prints the same list.",
        "",
        "Ignore a rule for one resource with the annotation",
        f"`{IGNORE_ANNOTATION_PREFIX}<rule-id>: \"<reason>\"` (the reason is required), or for paths in",
        "`.kdt-lint.yaml` at the repository root (`ignore:` entries with `rules`, `paths` and `reason`;",
        "`rules:` sets a rule's level, options, or `disable`). `--strict` refuses every ignore.",
        "TrainJob rules that depend on the Trainer release use `--trainer-version`, or per target the",
        "release it declares with a `# kdt:trainer-version=X.Y` comment (read exactly as `validate` reads it),",
        f"else {versions.TRAINER_DEFAULT} (`kdt.versions.TRAINER_DEFAULT`, what `kdt lint --help` names).",
        "",
        "## Levels",
        "",
        "An **error** is what is refused or what breaks the run; a **warning** is a risk or a policy choice.",
        "Each rule says which (the Basis column, and the reason in its section):",
        "",
        *[f"- **{basis}** ({'error' if basis in ERROR_BASES else 'warning'}): {text}"
          + (";" if i < len(BASES) - 1 else ".") for i, (basis, text) in enumerate(BASES.items())],
        "",
        "A warning fails nothing by itself (exit 0); `.kdt-lint.yaml` makes any rule an error where a team wants",
        "it to be one (`rules: {secret-literal-env: error}`).",
        "",
        "| Rule | Level | Basis | Summary |",
        "| --- | --- | --- | --- |",
    ]
    for r in rs:
        summary = r.summary.replace("|", "\\|")
        lines.append(f"| [`{r.id}`](#{r.id}) | {r.level} | {r.basis} | {summary} |")
    for r in rs:
        body = r.doc.strip().splitlines()
        level = (f"Level: **{r.level}**" + (" (kustomization sources)" if r.scope == "target" else "")
                 + f", {r.basis}: {r.why}")
        lines += ["", f"## {r.id}", "", level, ""]
        lines += body
        if r.options:
            lines += ["", "Options (`.kdt-lint.yaml` `rules.<id>.options`):", ""]
            lines += [f"- `{k}`: default `{v!r}`" for k, v in r.options.items()]
        if r.aliases:
            lines += ["", "Aliases (an ignore, `disable` or level given to one applies to the findings it names):", ""]
            lines += [f"- `{a}`: {what}" for a, what in r.aliases.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--check", action="store_true", help="exit 1 if docs/rules.md is not current")
    args = p.parse_args()
    return write_or_check(OUT, render(), args.check, "gen_rules_doc.py",
                          "the lint rules' docstrings: run scripts/gen_rules_doc.py", f"{len(all_rules())} rules")


if __name__ == "__main__":
    sys.exit(main())

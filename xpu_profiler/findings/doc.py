"""The findings rule table as markdown, for ``docs/findings.md`` (generated, never written by
hand: ``tests/test_docs.py`` checks the page against ``rules.RULES``).

``python -m xpu_profiler.findings.doc docs/findings.md`` rewrites the table in that page
(between its two marker lines); without a path it prints the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .rules import RULES

BEGIN = "<!-- rules table: generated from xpu_profiler/findings/rules.py by `python -m xpu_profiler.findings.doc` -->"
END = "<!-- end of the generated rules table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table() -> str:
    """One row per rule, in the table's order: what it detects, its trigger with the default
    thresholds, the thresholds' names (the keys of a ``--findings-config`` file), the fix."""
    rows = [
        "| rule | detects | trigger (defaults) | thresholds | fix |",
        "|---|---|---|---|---|",
    ]
    for r in RULES:
        th = ", ".join(f"`{k} = {v:g}`" for k, v in r.thresholds.items()) or "-"  # as a TOML file sets them
        rows.append(
            f"| `{r.id}` | {_cell(r.detects)} | {_cell(r.trigger_text(r.thresholds))} | {th} | {_cell(r.fix)} |"
        )
    return "\n".join(rows)


def block() -> str:
    return f"{BEGIN}\n{table()}\n{END}"


def rewrite(page: Path) -> bool:
    """The page with its generated block replaced; whether it changed."""
    text = page.read_text(encoding="utf-8")
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"{page}: no generated-table markers")
    new = head + block() + tail
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(f"{sys.argv[1]}: {'rewritten' if rewrite(Path(sys.argv[1])) else 'up to date'}")
    else:
        print(table())

"""Exporters: one module per output format, one registry.

Each exporter module (or package: ``html``) exposes ``NAME``, ``SUFFIXES`` (file suffixes it claims,
longest first) and ``write(profile, summary, path) -> Path``. ``summary`` is the
typed ``xpu_profiler.summary.Summary`` of the profile; exporters read it and never
run or import the analysis.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType


def registry() -> dict[str, ModuleType]:
    from . import chrome_trace, csv_table, html, summary_json

    return {m.NAME: m for m in (chrome_trace, summary_json, csv_table, html)}


def by_suffix(path: str | Path) -> ModuleType | None:
    """The exporter whose suffix the file name ends with (`.json.gz` → perfetto)."""
    name = str(path).lower()
    best = None
    for mod in registry().values():
        for suf in mod.SUFFIXES:
            if name.endswith(suf) and (best is None or len(suf) > best[0]):
                best = (len(suf), mod)
    return best[1] if best else None

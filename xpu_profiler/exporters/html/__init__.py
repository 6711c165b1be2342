"""The shareable HTML report: one self-contained file built from the Summary.

The work is split in two, as in memray's reporters:

1. ``build_report(summary)`` (``report``) turns the typed Summary into plain
   JSON-ready data, one builder per section, grouped by concern: ``header``,
   ``headline``, ``breakdown`` (fused ops, phases), ``timeline`` (steps),
   ``counters`` (memory, token rates), ``tables`` (kernels, ranks); ``figures``
   and ``style`` hold the plotly pieces, colours and labels;
2. ``render(report)`` (``page``) lays that data out with the jinja2 templates in
   ``templates/``: the data enters the page as one ``tojson`` blob, plotly.js is
   inlined exactly once (or linked from its CDN on request), and every name that
   came from a trace is escaped by the template engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core import atomic_write
from ...summary import Summary
from .page import render
from .report import PlotlyMode, build_report

NAME = "html"
SUFFIXES = (".html", ".htm")

__all__ = ["NAME", "SUFFIXES", "build_report", "render", "write"]


def write(profile: Any, summary: Summary, path: str | Path, *, plotly: PlotlyMode = "inline") -> Path:
    """Write the report for ``summary`` to ``path`` (the profile is not needed)."""
    return atomic_write.write_text(path, render(build_report(summary, plotly=plotly)))

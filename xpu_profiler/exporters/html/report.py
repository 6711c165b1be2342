"""The whole report as plain JSON-ready data: one builder per section (as memray's
reporters do). A section is ``None`` when the summary has nothing for it; figures
are plain plotly.js specs collected in ``report["figures"]``."""

from __future__ import annotations

from typing import Any, Literal

from ...core.version import __version__
from ...summary import Summary
from .breakdown import build_fused_ops, build_phases
from .counters import build_memory, build_rates
from .device import build_device
from .figures import json_ready
from .findings import build_findings, build_roofline
from .header import build_header
from .headline import build_headline
from .layers import build_layers
from .multirank import build_comm, build_rank_steps
from .page import plotly_version
from .style import PHASE_COLORS, fused_colors
from .tables import build_kernels, build_ranks
from .timeline import build_steps
from .verdicts import build_verdicts

PlotlyMode = Literal["inline", "cdn"]

SECTION_TITLES = {
    "verdicts": "Steps & verdicts",
    "findings": "Findings",
    "headline": "Key figures",
    "fused_ops": "Time by fused op",
    "phases": "Prefill vs decode",
    "layers": "Time by layer",
    "roofline": "MFU & bandwidth",
    "device": "Device time",
    "steps": "Step timeline",
    "rates": "Throughput",
    "memory": "Memory",
    "kernels": "Top kernels",
    "ranks": "Ranks",
    "rank_steps": "Ranks by step",
    "comm": "Communication",
}


def build_report(summary: Summary, *, plotly: PlotlyMode = "inline") -> dict[str, Any]:
    """All data of the report, JSON-ready; sections without data are None."""
    if plotly not in ("inline", "cdn"):
        raise ValueError(f"plotly must be 'inline' or 'cdn', not {plotly!r}")
    colors = fused_colors([f.fused_op for f in summary.fused_ops] + [k.fused_op for k in summary.top_kernels])
    figures: dict[str, Any] = {}
    report: dict[str, Any] = {
        "schema": "xpu_profiler.report",
        "version": 1,
        "generator": f"xpu_profiler {__version__}",
        "header": build_header(summary),
        "verdicts": build_verdicts(summary),
        "findings": build_findings(summary),
        "headline": build_headline(summary),
        "roofline": build_roofline(summary),
    }
    for key, builder in (
        ("fused_ops", lambda: build_fused_ops(summary, colors)),
        ("phases", lambda: build_phases(summary, colors)),
        ("layers", lambda: build_layers(summary, colors)),
        ("device", lambda: build_device(summary)),
        ("steps", lambda: build_steps(summary)),
        ("rates", lambda: build_rates(summary)),
        ("memory", lambda: build_memory(summary)),
    ):
        section, figs = builder()
        report[key] = section
        figures.update(figs)
    report["kernels"] = build_kernels(summary, colors)
    report["ranks"], figs = build_ranks(summary)
    figures.update(figs)
    report["rank_steps"], figs = build_rank_steps(summary)
    figures.update(figs)
    report["comm"] = build_comm(summary)
    report["figures"] = figures
    report["colors"] = {"phases": PHASE_COLORS, "fused_ops": colors}
    report["warnings"] = list(summary.warnings)
    report["nav"] = [{"id": k, "title": t} for k, t in SECTION_TITLES.items() if report.get(k)]
    report["plotly"] = {"mode": plotly, "version": plotly_version()}
    return json_ready(report)

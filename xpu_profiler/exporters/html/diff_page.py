"""The HTML diff report: the DiffReport as plain JSON-ready data, laid out by
``templates/diff.html`` with the report's jinja environment and page style."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ...core import atomic_write
from ...core.version import __version__
from ...knowledge.kernel_names import short_name
from ...summary.diff import DiffReport
from .figures import axis, json_ready, layout
from .page import plotly_version, render
from .report import PlotlyMode

SECTIONS = {
    "change": "Change",
    "metrics": "Step time & throughput",
    "split": "Device & host",
    "fused_ops": "Fused ops per token",
    "layers": "Layers",
    "kernels": "Kernels",
    "findings": "Findings",
}
PHASE_ORDER = ("prefill", "decode", "mixed", "unknown")


def build_diff(report: DiffReport, *, plotly: PlotlyMode = "inline") -> dict[str, Any]:
    doc = msgspec.to_builtins(report)
    moved = [r for r in doc["fused_ops"] if r["status"] != "unchanged"]
    figures: dict[str, Any] = {}
    if moved:
        data = []
        for ph in PHASE_ORDER:
            rows = [r for r in moved if r["phase"] == ph]
            if rows:
                data.append(
                    {
                        "type": "bar",
                        "orientation": "h",
                        "name": ph,
                        "y": [r["key"] for r in rows],
                        "x": [r["delta_per_token_ns"] / 1e3 for r in rows],
                        "hovertemplate": "%{y}: %{x:.3f} µs/token<extra>%{fullData.name}</extra>",
                    }
                )
        figures["fused_delta"] = {
            "data": data,
            "layout": layout(
                barmode="group",
                height=320,
                margin={"l": 110, "r": 20, "t": 36, "b": 40},
                xaxis=axis("change of cost per token (µs)"),
            ),
        }
    for key in ("kernels", "kernels_added", "kernels_removed"):
        for r in doc[key]:
            r["short"] = short_name(r["key"])
    out = {
        "schema": "xpu_profiler.diff_report",
        "version": 1,
        "generator": f"xpu_profiler {__version__}",
        "diff": doc,
        "figures": figures,
        "changed_findings": [f for f in doc["findings"] if f["status"] != "kept"],
        "settings": doc["settings"],
        "metrics": [m for m in doc["metrics"] if m["name"] not in ("steps", "tokens")],
        "fused_moved": moved,
        "kernels_moved": [r for r in doc["kernels"] if r["status"] != "unchanged"][:50],
        "host_moved": [r for r in doc["host"] if r["cause"] != "all" and r["status"] != "unchanged"],
        "plotly": {"mode": plotly, "version": plotly_version()},
    }
    shown = {"split": bool(doc["steps"]), "layers": bool(doc["layers"])}
    out["nav"] = [{"id": k, "title": t} for k, t in SECTIONS.items() if shown.get(k, True)]
    return json_ready(out)


def write_diff(report: DiffReport, path: str | Path, *, plotly: PlotlyMode = "inline") -> Path:
    return atomic_write.write_text(path, render(build_diff(report, plotly=plotly), "diff.html"))

"""Device time: each phase on the device's clock (busy, idle by cause, host- or
device-bound and why), each step's idle as a line, the idle per stream; and how op
time was attributed, with the graph replays."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.fmt import number
from ...summary import Summary
from ...summary.labels import ATTRIBUTION_SOURCES
from .figures import MAX_POINTS, axis, bucket, layout
from .style import PHASE_COLORS

#: the parts of a step's device period, in the order they are stacked
PARTS = (
    ("busy", "busy", "#3b6fb6"),
    ("host_wait", "host wait", "#d1495b"),
    ("kernel_wait", "kernel wait", "#edae49"),
    ("other", "other wait", "#9aa0a6"),
    ("elsewhere", "other steps' work", "#c9d6e3"),
)
SOURCE_COLORS = {
    "op_chain": "#4c9f70",
    "module": "#2e86ab",
    "capture": "#7d5ba6",
    "structure": "#c2a83e",
    "name": "#e8833a",
    "none": "#c4c4c4",
}


def build_device(summary: Summary) -> tuple[dict | None, dict]:
    phases = [(p, p.device) for p in summary.phases if p.device is not None and p.device.period_ns]
    if not phases:
        return None, {}
    rows: list[dict[str, Any]] = []
    for p, d in phases:
        parts = {"busy": d.busy_ns, "host_wait": d.host_wait_ns, "kernel_wait": d.kernel_wait_ns, "other": d.other_ns}
        parts["elsewhere"] = max(d.period_ns - sum(parts.values()), 0)
        rows.append(
            {
                "phase": p.phase,
                "steps": p.steps,
                "period_ns": float(d.period_ns),
                "busy_ns": float(d.busy_ns),
                "idle_ns": float(d.idle_ns + d.starved_ns),
                "host_wait_ns": float(d.host_wait_ns),
                "kernel_wait_ns": float(d.kernel_wait_ns),
                "other_ns": float(d.other_ns),
                "waiting_on_host_ns": float(d.waiting_on_host_ns),
                "queue_delay_ns": number(d.queue_delay_ns),
                "bound": p.bound,
                "evidence": p.bound_evidence,
                "shares": {k: v / d.period_ns for k, v in parts.items()},
                "color": PHASE_COLORS.get(p.phase, PHASE_COLORS["unknown"]),
            }
        )
    names = [r["phase"] for r in rows]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": label,
            "y": names,
            "x": [100 * r["shares"][key] for r in rows],
            "marker": {"color": color},
            "hovertemplate": "%{y} · %{fullData.name}: %{x:.1f}%<extra></extra>",
        }
        for key, label, color in PARTS
        if any(r["shares"][key] for r in rows)
    ]
    figs = {
        "device_phases": {
            "data": data,
            "layout": layout(
                barmode="stack",
                height=130 + 40 * len(rows),
                bargap=0.3,
                xaxis=axis("", range=[0, 100], ticksuffix="%"),
                yaxis={"automargin": True, "autorange": "reversed"},
            ),
        }
    }
    line, binned = _step_lines(summary)
    if line is not None:
        figs["device_steps"] = line
    ds = summary.device_steps
    streams = [
        {
            "rank": i.rank,
            "stream": i.stream,
            "phase": i.phase,
            "busy_ns": float(i.busy_ns),
            "gaps": i.gaps,
            "host_wait_ns": float(i.host_wait_ns),
            "kernel_wait_ns": float(i.kernel_wait_ns),
            "other_ns": float(i.other_ns),
        }
        for i in summary.idle
    ]
    section = {
        "rows": rows,
        "streams": streams,
        "kernel_wait_max_ns": float(ds.kernel_wait_max_ns),
        "host_bound_share": ds.host_bound_share,
        "twins": dict(ds.twins),
        "binned": binned,
        "figures": list(figs),
    }
    return section, figs


def _step_lines(summary: Summary) -> tuple[dict | None, int]:
    """Per step of the first rank: its device busy time and idle by cause, in ms."""
    d = summary.device_steps
    if not d.rank:
        return None, 1
    rank = np.asarray(d.rank)
    start = np.asarray(d.device_start_ns, np.float64)
    keep = np.flatnonzero((rank == rank.min()) & (start >= 0))
    if len(keep) < 2:
        return None, 1
    keep = keep[np.argsort(start[keep], kind="stable")]
    x = start[keep] / 1e9
    cols = {"busy": d.device_busy_ns, "host_wait": d.host_wait_ns, "kernel_wait": d.kernel_wait_ns, "other": d.other_ns}
    ys = [np.asarray(cols[k], np.float64)[keep] / 1e6 for k, _, _ in PARTS[:4]]
    xr, yr, k = bucket(x, ys, MAX_POINTS)
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": label,
            "x": xr,
            "y": y,
            "line": {"color": color, "width": 1.5, "shape": "hv"},
            "hovertemplate": "%{fullData.name}: %{y:.3f} ms<extra></extra>",
        }
        for (_, label, color), y in zip(PARTS[:4], yr)
    ]
    return {
        "data": data,
        "layout": layout(height=300, hovermode="x unified", yaxis=axis("ms per step"), xaxis=axis("device time (s)")),
    }, k


def build_attribution(summary: Summary) -> dict | None:
    """The attribution-source split overall and the graph replays (shown with the fused ops)."""
    a, g = summary.attribution, summary.graphs
    if not a.share_by_source:
        return None
    parts = [
        {"key": k, "label": ATTRIBUTION_SOURCES.get(k, k), "share": v, "color": SOURCE_COLORS.get(k, "#c4c4c4")}
        for k, v in sorted(a.share_by_source.items(), key=lambda kv: -kv[1])
    ]
    graphs: dict[str, Any] | None = None
    if g.replays:
        graphs = {
            "replays": g.replays,
            "launches": g.launches,
            "replayed_events": g.replayed_events,
            "share": g.share,
            "matched_events": g.matched_events,
            "attributed_events": g.attributed_events,
            "matched_share": g.matched_share,
            "captured_graphs": g.captured_graphs,
            "capture_files": list(g.capture_files),
        }
    return {"parts": parts, "name_share": a.name_share, "graphs": graphs, "structure": dict(a.structure)}


def source_split(by_source: dict[str, int], total: float) -> list[dict]:
    """One fused-op row's time by source, as shares for a small stacked bar."""
    return [
        {"key": k, "label": ATTRIBUTION_SOURCES.get(k, k), "share": v / total, "color": SOURCE_COLORS.get(k, "#c4c4c4")}
        for k, v in sorted(by_source.items(), key=lambda kv: -kv[1])
        if total and v
    ]

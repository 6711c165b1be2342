"""Where op time goes: the fused-op table and chart, and prefill vs decode."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.fmt import number
from ...summary import Phase, Summary
from .device import build_attribution, source_split
from .figures import axis, layout
from .style import BASIS_LABELS, OTHER_COLOR, PHASE_COLORS, PHASES, TOKEN_PHASES


def build_fused_ops(summary: Summary, colors: Mapping[str, str]) -> tuple[dict | None, dict]:
    if not summary.fused_ops:
        return None, {}
    rows: list[dict[str, Any]] = []
    for r in summary.fused_ops:
        rows.append(
            {
                "fused_op": r.fused_op,
                "time_ns": float(r.time_ns),
                "count": r.count,
                "share": r.share,
                "by_phase": {p: float(r.time_ns_by_phase.get(p, 0)) for p in PHASES},
                "per_token_ns": {p: number(r.per_token_ns_by_phase.get(p)) for p in TOKEN_PHASES},
                "color": colors.get(r.fused_op, OTHER_COLOR),
                "by_source": source_split(r.time_ns_by_source, float(r.time_ns)),
            }
        )
    rows.sort(key=lambda r: -r["time_ns"])
    phases = [p for p in PHASES if any(r["by_phase"][p] for r in rows)]
    if phases == ["unknown"]:  # no phase split: the per-phase columns would repeat the time
        phases = []
    names = [r["fused_op"] for r in rows]
    data = []
    if phases:  # stacked by phase
        for p in phases:
            data.append(
                {
                    "type": "bar",
                    "orientation": "h",
                    "name": p,
                    "y": names,
                    "x": [r["by_phase"][p] / 1e6 for r in rows],
                    "marker": {"color": PHASE_COLORS[p]},
                    "hovertemplate": "%{y} · %{fullData.name}: %{x:.3f} ms<extra></extra>",
                }
            )
    else:  # no phase information: one bar per op in its own colour
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": "op time",
                "y": names,
                "x": [r["time_ns"] / 1e6 for r in rows],
                "marker": {"color": [r["color"] for r in rows]},
                "hovertemplate": "%{y}: %{x:.3f} ms<extra></extra>",
            }
        )
    fig = {
        "data": data,
        "layout": layout(
            barmode="stack",
            height=90 + 26 * max(len(rows), 3),
            bargap=0.25,
            xaxis=axis("time (ms)"),
            yaxis={"automargin": True, "autorange": "reversed"},
            showlegend=len(data) > 1,
        ),
    }
    section = {
        "basis": BASIS_LABELS.get(summary.basis, "op time"),
        "attribution": build_attribution(summary),
        "total_ns": sum(r["time_ns"] for r in rows),
        "other_share": summary.totals.other_share,
        "phases": phases,
        "per_token_phases": [p for p in TOKEN_PHASES if any(r["per_token_ns"][p] is not None for r in rows)],
        "rows": rows,
        "figures": ["fused_ops"],
    }
    return section, {"fused_ops": fig}


def build_phases(summary: Summary, colors: Mapping[str, str]) -> tuple[dict | None, dict]:
    """Prefill vs decode: each phase's steps, tokens and step times, where its op time goes
    (by fused op), and each fused op's time per token by phase."""
    # a phase row without steps or tokens is only the op time outside every step
    rows_in = [p for p in summary.phases if p.steps or p.phase != "unknown"]
    if not rows_in:
        return None, {}
    rows = _phase_rows(summary, rows_in)
    mix = _phase_mix(summary, rows)
    figs: dict[str, Any] = {}
    if len(mix) > 1:
        figs["phase_mix"] = _phase_mix_figure(summary, mix, colors)
    per_token = _per_token_figure(summary)
    if per_token is not None:
        figs["per_token"] = per_token
    known = any(r["phase"] != "unknown" for r in rows)
    unit = next((p.kernels.unit for p in rows_in if p.kernels), "")  # "": no phase with kernels
    section = {
        "rows": rows,
        "mix": mix,
        "known": known,
        "figures": list(figs),
        "unit": {"kernel": "kernels", "host_op": "host ops"}.get(unit),
    }
    return section, figs


def _phase_rows(summary: Summary, rows_in: list[Phase]) -> list[dict[str, Any]]:
    """One row per phase, in phase order: steps, op time, tokens, step times, units of work."""
    # a source with steps but no op events (a live run without the torch profiler): no op time
    no_ops = summary.totals.op_time_ns == 0
    rows: list[dict[str, Any]] = [
        {
            "phase": p.phase,
            "steps": p.steps,
            "time_ns": None if no_ops else float(p.time_ns),
            "wall_ns": float(p.wall_ns) if p.steps else None,
            "tokens": float(p.tokens),
            "per_token_ns": None if no_ops else number(p.per_token_ns),
            "step_p50_ns": number(p.step_p50_ns),
            "step_p99_ns": number(p.step_p99_ns),
            "color": PHASE_COLORS.get(p.phase, OTHER_COLOR),
            # the phase's units of work: kernels (host ops on the host basis) per step, median length, per launch
            "units_per_step": number(p.kernels.per_step) if p.kernels else None,
            "unit_p50_ns": number(p.kernels.dur_pct_ns[50]) if p.kernels and len(p.kernels.dur_pct_ns) == 101 else None,
            "per_launch": number(p.kernels.per_launch) if p.kernels else None,
        }
        for p in rows_in
    ]
    order = {p: i for i, p in enumerate(PHASES)}
    rows.sort(key=lambda r: order.get(r["phase"], len(PHASES)))
    return rows


def _phase_mix(summary: Summary, rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Where each phase's op time goes: share of that phase's time per fused op."""
    mix: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        per = [(f.fused_op, float(f.time_ns_by_phase.get(r["phase"], 0))) for f in summary.fused_ops]
        total = sum(v for _, v in per)
        if total > 0:
            mix[r["phase"]] = [{"fused_op": n, "time_ns": v, "share": v / total} for n, v in per if v > 0]
    return mix


def _phase_mix_figure(
    summary: Summary, mix: dict[str, list[dict[str, Any]]], colors: Mapping[str, str]
) -> dict[str, Any]:
    """The phase mix as bars of 100%, one per phase, stacked by fused op."""
    phases = list(mix)
    data = []
    for op in (f.fused_op for f in summary.fused_ops):
        x = [next((m["share"] * 100 for m in mix[p] if m["fused_op"] == op), 0.0) for p in phases]
        if any(x):
            data.append(
                {
                    "type": "bar",
                    "orientation": "h",
                    "name": op,
                    "y": phases,
                    "x": x,
                    "marker": {"color": colors.get(op, OTHER_COLOR)},
                    "hovertemplate": "%{fullData.name} · %{y}: %{x:.1f}%<extra></extra>",
                }
            )
    return {
        "data": data,
        "layout": layout(
            barmode="stack",
            height=130 + 40 * len(phases),
            bargap=0.3,
            xaxis=axis("", range=[0, 100], ticksuffix="%"),
            yaxis={"automargin": True, "autorange": "reversed"},
        ),
    }


def _per_token_figure(summary: Summary) -> dict[str, Any] | None:
    """Each fused op's time per token, grouped by phase (None when no op has one)."""
    per_tok = [f for f in summary.fused_ops if any(number(f.per_token_ns_by_phase.get(p)) for p in TOKEN_PHASES)]
    if not per_tok:
        return None
    names = [f.fused_op for f in per_tok]
    data = []
    for p in TOKEN_PHASES:
        y = [number(f.per_token_ns_by_phase.get(p)) for f in per_tok]
        if any(v for v in y if v):
            data.append(
                {
                    "type": "bar",
                    "name": p,
                    "x": names,
                    "y": [None if v is None else v / 1e3 for v in y],
                    "marker": {"color": PHASE_COLORS[p]},
                    "hovertemplate": "%{x} · %{fullData.name}: %{y:.2f} µs/token<extra></extra>",
                }
            )
    return {
        "data": data,
        "layout": layout(barmode="group", height=320, yaxis=axis("µs per token"), xaxis={"automargin": True}),
    }

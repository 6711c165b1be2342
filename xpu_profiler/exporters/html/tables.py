"""The top-kernels table and the ranks side by side."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.fmt import number
from ...knowledge.kernel_names import short_name
from ...summary import Summary
from .figures import axis, layout, ms
from .style import OTHER_COLOR

MAX_KERNEL_ROWS = 500  # rows of the top-kernels table


def build_kernels(summary: Summary, colors: Mapping[str, str]) -> dict | None:
    if not summary.top_kernels:
        return None
    rows: list[dict[str, Any]] = [
        {
            "name": r.name,
            "short": short_name(r.name),
            "fused_op": r.fused_op,
            "kind": r.kind,
            "count": r.count,
            "time_ns": float(r.time_ns),
            "mean_ns": r.mean_ns,
            "share": r.share,
        }
        for r in summary.top_kernels
    ]
    rows.sort(key=lambda r: -r["time_ns"])
    shown = rows[:MAX_KERNEL_ROWS]
    return {
        "rows": shown,
        "total": len(rows),
        "shown": len(shown),
        "fused_ops": sorted({r["fused_op"] for r in shown}, key=lambda n: (n == "other", n)),
        "colors": {n: colors.get(n, OTHER_COLOR) for n in {r["fused_op"] for r in shown}},
    }


def build_ranks(summary: Summary) -> tuple[dict | None, dict]:
    if len(summary.ranks) < 2:
        return None, {}
    rows: list[dict[str, Any]] = sorted(
        (
            {
                "rank": r.rank,
                "op_time_ns": float(r.op_time_ns),
                "device_kernel_ns": float(r.device_kernel_ns),
                "wall_ns": float(r.wall_ns) or None,
                "steps": r.steps,
                "busy_share": number(r.busy_share),
            }
            for r in summary.ranks
        ),
        key=lambda r: r["rank"],
    )
    op = [r["op_time_ns"] for r in rows]
    mean = sum(op) / len(op)
    for r, v in zip(rows, op):
        r["vs_mean"] = (v / mean - 1) if mean else None
    names = [f"rank {r['rank']}" for r in rows]
    data = [
        {
            "type": "bar",
            "name": "op time",
            "x": names,
            "y": [v / 1e6 for v in op],
            "marker": {"color": "#3b6fb6"},
            "hovertemplate": "%{x}: %{y:.3f} ms<extra>op time</extra>",
        }
    ]
    if any(r["wall_ns"] for r in rows):
        data.append(
            {
                "type": "bar",
                "name": "wall",
                "x": names,
                "y": [ms(r["wall_ns"]) for r in rows],
                "marker": {"color": "#c4c4c4"},
                "hovertemplate": "%{x}: %{y:.3f} ms<extra>wall</extra>",
            }
        )
    fig = {"data": data, "layout": layout(barmode="group", height=300, yaxis=axis("time (ms)"))}
    spread = (max(op) - min(op)) / mean if mean else None
    return {"rows": rows, "spread": spread, "figures": ["ranks"]}, {"ranks": fig}

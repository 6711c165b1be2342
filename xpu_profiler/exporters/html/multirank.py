"""The multi-rank sections: a rank × engine-step heat map of step time with the rank ×
fused-op table, and communication (collectives, stragglers, overlap, parallel groups,
pipeline stages). Plain JSON-ready data; the template lays it out."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.fmt import number, place
from ...summary import Summary
from ...summary.labels import CLOCK_ALIGNMENT, COLLECTIVE_MATCH, STEP_ALIGNMENT
from .figures import axis, bucket, json_ready, layout

MAX_STEP_COLUMNS = 600  # heat-map columns; longer runs are averaged in buckets of steps
MAX_FUSED_COLUMNS = 10


def build_rank_steps(summary: Summary) -> tuple[dict | None, dict]:
    """Rank × engine step heat map of each rank's step time, and time by fused op × rank."""
    if len(summary.ranks) < 2:
        return None, {}
    ranks = [r.rank for r in summary.ranks]
    n_steps = len(summary.engine_steps.span_ns)
    figs: dict[str, Any] = {}
    section: dict[str, Any] = {"ranks": len(ranks), "steps": n_steps, "binned": 1, "figures": [], "slowest": []}
    al = summary.alignment
    section["alignment"] = {
        "steps": STEP_ALIGNMENT.get(al.steps, al.steps),
        "clock": CLOCK_ALIGNMENT.get(al.clock, al.clock),
        "shifts": {r: s for r, s in al.step_shift_by_rank.items() if s},
        "offsets_ms": {r: v / 1e6 for r, v in al.clock_offset_ns_by_rank.items() if v},
    }
    st = summary.steps
    if n_steps >= 2 and len(st.engine_step) == len(st.rank) and min(st.engine_step, default=-1) >= 0:
        figs["rank_steps"], section["binned"] = _rank_step_heatmap(summary, ranks)
        section["figures"].append("rank_steps")
        section["slowest"] = _slowest(summary, ranks)
    section["fused"] = _fused_by_rank(summary)
    return json_ready(section), json_ready(figs)


def _rank_step_heatmap(summary: Summary, ranks: list[int]) -> tuple[dict[str, Any], int]:
    """The heat map of each rank's step time (less its collective waits) per engine step,
    and how many steps a column averages."""
    st, es = summary.steps, summary.engine_steps
    n_steps = len(es.span_ns)
    # columns: each engine's own step numbers (data-parallel engines side by side)
    pos = {r: i for i, r in enumerate(ranks)}
    base = min(es.step_id)
    col = [s - base for s in es.step_id]
    if max(col) >= 4 * n_steps:  # sparse ids: one column per engine step instead
        col = list(range(n_steps))
    cols = max(col) + 1
    grid = np.full((len(ranks), cols), np.nan)
    waits = st.wait_ns or [0] * len(st.rank)
    for rk, e, v, w in zip(st.rank, st.engine_step, st.span_ns or st.wall_ns, waits):
        grid[pos[rk], col[e]] = (v - w) / 1e6
    x = np.arange(cols, dtype=np.float64)
    xs, rows, k = bucket(x, [np.nan_to_num(g, nan=0.0) for g in grid], MAX_STEP_COLUMNS)
    z = [list(r) for r in rows] if k > 1 else [[None if not np.isfinite(v) else float(v) for v in g] for g in grid]
    fig = {
        "data": [
            {
                "type": "heatmap",
                "z": z,
                "x": [float(v) for v in xs],
                "y": [f"rank {r}" for r in ranks],
                "colorscale": "YlOrRd",
                "reversescale": True,
                "colorbar": {"title": {"text": "ms"}},
                "hoverongaps": False,
                "hovertemplate": "%{y}, engine step %{x:.0f}: %{z:.3f} ms<extra></extra>",
            }
        ],
        "layout": layout(
            height=max(220, 60 + 26 * len(ranks)),
            xaxis=axis("engine step"),
            yaxis={"autorange": "reversed", "automargin": True},
        ),
    }
    return fig, k


def _slowest(summary: Summary, ranks: list[int]) -> list[dict[str, Any]]:
    """Per rank: of the engine steps it shares with others, how many it was the slowest in."""
    st, es = summary.steps, summary.engine_steps
    shared = {r: 0 for r in ranks}
    for rk, e in zip(st.rank, st.engine_step):
        if es.ranks[e] > 1:
            shared[rk] += 1
    return [
        {
            "rank": r.rank,
            "steps": r.slowest_steps,
            "share": (r.slowest_steps / shared[r.rank]) if shared[r.rank] else None,
        }
        for r in summary.ranks
    ]


def _fused_by_rank(summary: Summary) -> dict[str, Any]:
    """Time by fused op × rank (the largest fused ops), each cell also against that op's
    mean over ranks."""
    ops = [f.fused_op for f in summary.fused_ops[:MAX_FUSED_COLUMNS]]
    rows: list[dict[str, Any]] = []
    for r in summary.ranks:
        cells = [float(r.time_ns_by_fused.get(f, 0)) for f in ops]
        rows.append(
            {
                "rank": r.rank,
                "group": place(r.groups, summary.parallel.sizes),
                "cells": cells,
                "total_ns": float(r.op_time_ns),
                "step_span_ns": float(r.step_span_ns),
                "busy_ns": float(r.device_busy_ns) if r.device_busy_ns else None,
                "busy_share": number(r.busy_share),
            }
        )
    if rows:  # each cell against that fused op's mean over ranks: who is slow at what
        for j in range(len(ops)):
            col = [row["cells"][j] for row in rows]
            mean = sum(col) / len(col)
            for row, v in zip(rows, col):
                row.setdefault("vs_mean", []).append((v / mean - 1) if mean else None)
    return {"ops": ops, "rows": rows}


def build_comm(summary: Summary) -> dict | None:
    """Collectives, each rank's wait and straggling and overlap by phase, groups, stages."""
    c = summary.comm
    if not c.events and not summary.parallel.groups:
        return None
    par, al = summary.parallel, summary.alignment
    return json_ready(
        {
            "basis": "device kernels" if c.basis == "device" else "host ops",
            "events": c.events,
            "matched": c.matched_events,
            "match": COLLECTIVE_MATCH.get(al.collectives, al.collectives),
            "clock": CLOCK_ALIGNMENT.get(al.clock, al.clock),
            "collectives": _collective_rows(summary),
            "ranks": _comm_rank_rows(summary),
            "groups": _group_rows(summary),
            "stages": _stage_rows(summary),
            "layout_source": par.source,
            "sizes": par.sizes,
        }
    )


def _collective_rows(summary: Summary) -> list[dict[str, Any]]:
    """Per collective (kind, group, phase): latency, skew, waits, who arrived last, bandwidth."""
    return [
        {
            "kind": x.kind,
            "name": x.name,
            "group": x.group,
            "phase": x.phase,
            "count": x.count,
            "ranks": x.ranks,
            "latency_ns": float(x.latency_ns),
            "mean_latency_ns": x.mean_latency_ns,
            "start_skew_ns": x.start_skew_mean_ns,
            "start_skew_max_ns": float(x.start_skew_max_ns),
            "end_skew_ns": x.end_skew_mean_ns,
            "wait_ns": float(sum(x.wait_ns_by_rank.values())),
            "last": _top(x.arrived_last_by_rank, x.count),
            "bytes": x.bytes,
            "bus_gb_s": None if x.bus_bytes_s is None else x.bus_bytes_s / 1e9,
        }
        for x in summary.comm.collectives
    ]


def _comm_rank_rows(summary: Summary) -> list[dict[str, Any]]:
    """Per rank and phase: communication time, how much of it is exposed, waits, arrivals."""
    return [
        {
            "rank": r.rank,
            "phase": r.phase,
            "collectives": r.collectives,
            "comm_ns": float(r.comm_ns),
            "overlapped_ns": float(r.overlapped_ns),
            "exposed_ns": float(r.exposed_ns),
            "exposed_share": r.exposed_share,
            "wait_ns": float(r.wait_ns),
            "mean_wait_ns": r.mean_wait_ns,
            "last": r.arrived_last_share,
            "first": r.arrived_first_share,
        }
        for r in summary.comm.ranks
    ]


def _group_rows(summary: Summary) -> list[dict[str, Any]]:
    """Per parallel group: its ranks, exposed communication, waits and straggler."""
    return [
        {
            "dim": g.dim,
            "key": g.key,
            "ranks": ", ".join(map(str, g.ranks)),
            "collectives": g.collectives,
            "exposed_ns": float(g.exposed_ns),
            "exposed_share": g.exposed_share,
            "wait_ns": float(g.wait_ns),
            "straggler": g.straggler,
            "straggler_share": g.straggler_share,
        }
        for g in summary.parallel.groups
    ]


def _stage_rows(summary: Summary) -> list[dict[str, Any]]:
    """Per pipeline stage: its ranks, busy and wall time, and its bubble."""
    return [
        {
            "stage": s.stage,
            "ranks": ", ".join(map(str, s.ranks)),
            "busy_ns": float(s.busy_ns),
            "wall_ns": float(s.wall_ns),
            "bubble_ns": float(s.bubble_ns),
            "bubble_share": s.bubble_share,
        }
        for s in summary.parallel.stages
    ]


def _top(counts: dict[str, int], total: int) -> dict | None:
    if not counts or not total:
        return None
    r, n = max(counts.items(), key=lambda kv: (kv[1], -int(kv[0])))
    return {"rank": int(r), "share": n / total}

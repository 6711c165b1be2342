"""The step timeline: each step's wall time by phase, with tokens, requests and host overhead."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...summary import Summary
from .figures import MAX_POINTS, axis, bucket, json_ready, layout
from .style import PHASE_COLORS, PHASES

ROW_CAPTIONS = {
    "tokens": "prefill and decode tokens per step",
    "requests": "running and waiting requests",
    "host overhead (ms)": "host overhead: the step's wall time with no op running",
    "device idle (ms)": "device idle: time inside the step's device span with no device work",
}

#: the rows under the wall times: ((column, line name, colour) per line, scale, axis label, stacked)
TOKENS_ROW = (
    [
        ("prefill_tokens", "prefill tokens", PHASE_COLORS["prefill"]),
        ("decode_tokens", "decode tokens", PHASE_COLORS["decode"]),
    ],
    1.0,
    "tokens",
    True,
)
REQUESTS_ROW = (
    [("running", "running requests", "#2e86ab"), ("waiting", "waiting requests", "#d1495b")],
    1.0,
    "requests",
    False,
)
HOST_IDLE_ROW = ([("idle_ns", "host overhead (wall − busy)", "#5d737e")], 1e6, "host overhead (ms)", False)
DEVICE_IDLE_ROW = ([("idle_ns", "device idle (in its device span)", "#5d737e")], 1e6, "device idle (ms)", False)


def build_steps(summary: Summary) -> tuple[dict | None, dict]:
    """Step wall time by phase over time (the first rank's steps), with rows below it for
    tokens, requests and host overhead (or device idle)."""
    st = summary.steps
    n_all = len(st.wall_ns)
    if n_all < 2:  # one step is no timeline; the phase table shows it
        return None, {}
    keep, ranks, use_time, x, phase, get = _first_rank_steps(summary)
    wall, binned = _wall_traces(x, phase, get["wall_ns"])
    rows: list[list[dict[str, Any]]] = [wall]  # subplot rows, each a list of traces
    labels = ["step time (ms)"]
    # steps on the device's clock: idle inside each step's device span
    idle = DEVICE_IDLE_ROW if summary.device_steps.rank else HOST_IDLE_ROW
    for names, scale, label, stack in (TOKENS_ROW, REQUESTS_ROW, idle):
        row = _series(x, get, names, scale, stack)
        if row is not None:
            rows.append(row[0])
            labels.append(label)
            binned = max(binned, row[1])
    data, lay = _stacked_rows(rows, labels)
    lay["xaxis"] = axis("time (s)" if use_time else "step", anchor="y" + (str(len(rows)) if len(rows) > 1 else ""))
    caption = "; ".join(["Step wall time coloured by phase"] + [ROW_CAPTIONS[lab] for lab in labels[1:]]) + "."
    section = {
        "steps": int(keep.sum()),
        "total_steps": n_all,
        "ranks": [int(r) for r in ranks],
        "caption": caption,
        "rank_shown": int(ranks[0]),
        "x": "time" if use_time else "step",
        "binned": binned,
        "figures": ["steps"],
    }
    return json_ready(section), json_ready({"steps": {"data": data, "layout": lay}})


def _first_rank_steps(
    summary: Summary,
) -> tuple[np.ndarray, list[float], bool, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The first rank's steps in time order (in step order where a start is unknown):
    (which steps, the ranks, whether x is time, x, each step's phase, its columns)."""
    st = summary.steps

    def col(name: str) -> np.ndarray:
        a = np.asarray(getattr(st, name), dtype=np.float64)
        if name in ("running", "waiting"):
            a[a < 0] = np.nan  # -1: not known
        return a

    rank = col("rank")
    ranks = sorted(set(rank.tolist()))
    keep = rank == ranks[0]
    start = col("start_ns")[keep]
    use_time = bool(np.all(start >= 0))
    order = np.argsort(start, kind="stable") if use_time else np.arange(int(keep.sum()))
    phase = np.asarray(st.phase, dtype=object)[keep][order]
    # seconds on the profile's own clock, as in the memory and throughput charts
    x = (start / 1e9)[order] if use_time else np.arange(len(order), dtype=np.float64)
    get = {
        name: col(name)[keep][order]
        for name in ("wall_ns", "busy_ns", "idle_ns", "prefill_tokens", "decode_tokens", "running", "waiting")
    }
    if not np.nansum(get["busy_ns"]) > 0:  # no op time in any step: "overhead" would just repeat the wall time
        get["idle_ns"] = np.full(len(get["idle_ns"]), np.nan)
    return keep, ranks, use_time, x, phase, get


def _wall_traces(x: np.ndarray, phase: np.ndarray, wall_ns: np.ndarray) -> tuple[list[dict[str, Any]], int]:
    """Each phase's step wall times as markers (ms), and how many steps a point holds at most."""
    binned = 1
    traces = []
    for p in PHASES:
        m = phase == p
        if not m.any():
            continue
        xr, (yr,), k = bucket(x[m], [wall_ns[m] / 1e6], MAX_POINTS)
        binned = max(binned, k)
        size = 7 if len(xr) < 200 else 5 if len(xr) < 1000 else 3
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": p,
                "x": xr,
                "y": yr,
                "marker": {"color": PHASE_COLORS[p], "size": size},
                "legendgroup": "phase",
                "hovertemplate": "%{fullData.name} step: %{y:.3f} ms<extra></extra>",
            }
        )
    return traces, binned


def _series(
    x: np.ndarray, get: dict[str, np.ndarray], names: list[tuple[str, str, str]], scale: float, stack: bool
) -> tuple[list[dict[str, Any]], int] | None:
    """One row of step lines, for the columns of ``names`` (column, name, colour) that hold
    anything, and how many steps a point holds at most; None when none does."""
    present = [(c, nm, color) for c, nm, color in names if np.isfinite(get[c]).any() and np.nanmax(np.abs(get[c])) > 0]
    if not present:
        return None
    xr, ys, k = bucket(x, [np.nan_to_num(get[c]) / scale for c, _, _ in present], MAX_POINTS)
    traces = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": nm,
            "x": xr,
            "y": y,
            "line": {"color": color, "width": 1.5, "shape": "hv"},
            **({"stackgroup": "tok"} if stack else {}),
        }
        for (_, nm, color), y in zip(present, ys)
    ]
    return traces, k


def _stacked_rows(rows: list[list[dict[str, Any]]], labels: list[str]) -> tuple[list[dict[str, Any]], dict]:
    """The rows as subplots one above the other (the first one twice as tall), sharing x:
    (every trace, the layout without its x axis)."""
    gap = 0.06
    heights = [2.0] + [1.0] * (len(rows) - 1)
    unit = (1 - gap * (len(rows) - 1)) / sum(heights)
    lay = layout(height=260 + 150 * (len(rows) - 1), hovermode="closest")
    top = 1.0
    data = []
    for i, (traces, h, lab) in enumerate(zip(rows, heights, labels)):
        ax = "" if i == 0 else str(i + 1)
        bottom = max(0.0, top - h * unit)
        lay["yaxis" + ax] = axis(lab, domain=[bottom, top], anchor="x", rangemode="tozero")
        if i == 0:  # markers: leave room above the highest so none sits on the edge
            ys = np.concatenate([np.asarray(t["y"], dtype=np.float64) for t in traces] or [np.zeros(0)])
            top_ms = float(np.nanmax(ys)) if np.isfinite(ys).any() else 0.0
            if top_ms > 0:
                lay["yaxis"]["range"] = [0, 1.1 * float(top_ms)]
        for t in traces:
            t["yaxis"] = "y" + ax
            data.append(t)
        top = bottom - gap
    return data, lay

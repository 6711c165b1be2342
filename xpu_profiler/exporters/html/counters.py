"""Counter series over time: memory (GiB), KV-cache usage (%) and token rates (per s)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.fmt import number
from ...summary import Series, Summary
from .figures import MAX_POINTS, axis, bucket, json_ready, layout
from .style import MEMORY_LABELS, RATE_LABELS, SERIES_COLORS, SERIES_PALETTE


def _series_kind(name: str) -> str | None:
    """How a counter series is plotted: "bytes", "kv" (a 0..1 fraction), "rate" (per s) or not at all."""
    base = name.split(".", 1)[0]
    if base == "kv_cache_usage":
        return "kv"
    if base.endswith("_bytes"):
        return "bytes"
    if base.endswith("_per_s"):
        return "rate"
    return None


def _series_label(name: str) -> str:
    """``host_rss_bytes.worker`` → ``host RSS (worker)``."""
    base, _, part = name.partition(".")
    label = MEMORY_LABELS.get(base) or RATE_LABELS.get(base) or base.replace("_", " ")
    return f"{label} ({part})" if part else label


def _counter_traces(series: list[Series], how: str) -> tuple[list[dict], int]:
    """One line per series (name × rank): x in s; y in GiB, % or per s."""
    ranks = sorted({s.rank for s in series})
    dashes = ("solid", "dot", "dash", "longdash", "dashdot")
    spare = iter(SERIES_PALETTE * 4)
    colors: dict[str, str] = {}
    data, binned = [], 1
    for s in series:
        name = s.name
        kind = _series_kind(name)
        scale = {"bytes": 1 / 2**30, "kv": 100.0}.get(kind or "", 1.0)
        t = np.asarray(s.t_ns, dtype=np.float64)
        v = np.asarray([np.nan if x is None else x for x in s.value], dtype=np.float64) * scale
        xr, (yr,), k = bucket(t / 1e9, [v], MAX_POINTS, how=how)
        binned = max(binned, k)
        rank = s.rank
        label = _series_label(name) + (f" (rank {rank})" if len(ranks) > 1 else "")
        color = colors.setdefault(name, SERIES_COLORS.get(name) or next(spare))
        unit = {"bytes": " GiB", "kv": " %", "rate": " /s"}.get(kind or "", "")
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": label,
                "x": xr,
                "y": yr,
                "line": {"color": color, "width": 1.5, "shape": "hv", "dash": dashes[ranks.index(rank) % 5]},
                "yaxis": "y2" if kind == "kv" else "y",
                "hovertemplate": "%{fullData.name}: %{y:.3~f}" + unit + "<extra></extra>",
            }
        )
    return data, binned


def _timed(summary: Summary) -> list[Series]:
    return [s for s in summary.memory.series if s.t_ns and s.value]


def build_memory(summary: Summary) -> tuple[dict | None, dict]:
    """Peaks and a chart of device memory, host RSS (GiB) and KV-cache usage (%) over time."""
    series = [s for s in _timed(summary) if _series_kind(s.name) in ("bytes", "kv")]
    peak = summary.memory.peak
    peaks: list[dict[str, Any]] = [
        {"name": k, "label": _series_label(k), "kind": _series_kind(k), "value": number(v)}
        for k, v in peak.items()
        if _series_kind(k) in ("bytes", "kv") and number(v) is not None
    ]
    if not series and not peaks:
        return None, {}
    figs = {}
    binned = 1
    if series:
        data, binned = _counter_traces(series, how="max")
        kinds = {_series_kind(s.name) for s in series}
        lay = layout(height=360, hovermode="x unified", xaxis=axis("time (s)"))
        kv_peak = max((p["value"] for p in peaks if p["kind"] == "kv"), default=0.0) * 100
        kv_axis = axis(
            "KV-cache usage", ticksuffix="%", tickmode="auto", nticks=6, range=[0, min(100.0, max(5.0, 1.15 * kv_peak))]
        )
        if "bytes" in kinds:
            lay["yaxis"] = axis("GiB", rangemode="tozero")
            if "kv" in kinds:
                lay["yaxis2"] = {**kv_axis, "overlaying": "y", "side": "right", "showgrid": False}
                lay["margin"]["r"] = 70
        else:
            lay["yaxis"] = kv_axis
            for d in data:
                d["yaxis"] = "y"
        figs["memory"] = {"data": data, "layout": lay}
    return json_ready({"peaks": peaks, "binned": binned, "figures": list(figs)}), json_ready(figs)


def build_rates(summary: Summary) -> tuple[dict | None, dict]:
    """Token rates over time (the ``*_per_s`` counter series of a live run)."""
    series = [s for s in _timed(summary) if _series_kind(s.name) == "rate"]
    if not series:
        return None, {}
    data, binned = _counter_traces(series, how="mean")
    lay = layout(
        height=320, hovermode="x unified", xaxis=axis("time (s)"), yaxis=axis("tokens / s", rangemode="tozero")
    )
    return json_ready({"binned": binned, "figures": ["rates"]}), json_ready({"rates": {"data": data, "layout": lay}})

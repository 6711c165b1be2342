"""Plain plotly.js figure pieces: layouts, axes, and bucketing of long series.

Names reach plotly only as data (trace names, tick labels), never inside a
hovertemplate, where "%{...}" would be read as a reference.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...core import fmt

MAX_POINTS = 3000  # points per plotted series; longer ones are averaged in buckets


def bucket(x: np.ndarray, ys: list[np.ndarray], max_points: int = MAX_POINTS, how: str = "mean"):
    """Average (or max) consecutive points into at most ``max_points`` buckets.

    Returns (x, ys, k): k is the bucket size (1 when nothing was reduced).
    """
    n = len(x)
    if n <= max_points:
        return x, ys, 1
    k = -(-n // max_points)
    idx = np.arange(0, n, k)
    counts = np.diff(np.append(idx, n))
    xr = np.add.reduceat(x.astype(np.float64), idx) / counts
    if how == "max":
        yr = [np.maximum.reduceat(y.astype(np.float64), idx) for y in ys]
    else:
        yr = [np.add.reduceat(y.astype(np.float64), idx) / counts for y in ys]
    return xr, yr, int(k)


def layout(title: str | None = None, **kw: Any) -> dict[str, Any]:
    lay: dict[str, Any] = {
        "margin": {"l": 60, "r": 20, "t": 36, "b": 40},
        "font": {"family": "-apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif", "size": 12},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "legend": {"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom", "traceorder": "normal"},
        "hoverlabel": {"namelength": -1},
    }
    if title:
        lay["title"] = {"text": title, "x": 0, "xanchor": "left", "font": {"size": 13}}
    lay.update(kw)
    return lay


def axis(title: str, **kw: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "gridcolor": "#e6e8eb", "zerolinecolor": "#d0d4d9", **kw}


def ms(ns: Any) -> float | None:
    v = fmt.number(ns)
    return None if v is None else v / 1e6


def json_ready(obj: Any) -> Any:
    """Plain JSON copy: numpy scalars/arrays to Python, NaN/inf to null (JSON has neither)."""
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_ready(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj

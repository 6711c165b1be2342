"""Counter series (memory, KV-cache usage, token rates) per rank, downsampled, with peaks."""

from __future__ import annotations

import numpy as np

from ..core.profile import Profile
from ..summary import Memory, Series

MAX_SERIES_POINTS = 2000


def downsample(t: np.ndarray, v: np.ndarray, limit: int = MAX_SERIES_POINTS) -> tuple[list, list]:
    """At most ``limit`` evenly spaced points, the maximum always among them."""
    if len(t) <= limit:
        return t.tolist(), v.tolist()
    idx = np.unique(np.concatenate([np.linspace(0, len(t) - 1, limit - 1).astype(np.int64), [int(np.argmax(v))]]))
    return t[idx].tolist(), v[idx].tolist()


def memory(profile: Profile) -> Memory:
    c, strings = profile.counters, profile.strings
    series: list[Series] = []
    peak: dict[str, float] = {}
    for r, nid in sorted(set(zip(c["rank"].tolist(), c["name"].tolist()))):
        m = (c["rank"] == r) & (c["name"] == nid)
        t, v = c["t"][m], c["value"][m]
        o = np.argsort(t, kind="stable")
        tt, vv = downsample(t[o], v[o])
        name = strings[nid]
        series.append(Series(rank=int(r), name=name, t_ns=tt, value=vv))
        peak[name] = max(peak.get(name, float("-inf")), float(v.max()))
    return Memory(series=series, peak=peak)

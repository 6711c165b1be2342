"""A step's ``gpu_user_annotation`` twin against the span its correlation ids give.

Kineto writes a device-side twin of each user annotation: the span of the device work
launched from the annotation's thread while it was the innermost range there, and one
twin per stream the work ran on (an SGLang decode step has one on the stream of its
eager preamble and one on the graph's stream). The twins of one annotation are joined
first (same rank and name, overlapping in time), then compared with the same work found
through correlation ids; the two must agree (``TWIN_TOLERANCE_NS``).
"""

from __future__ import annotations

import numpy as np

from ...core.intervals import group_ids, innermost
from ...core.launches import thread_ids
from ...core.ordering import lexsort
from ...core.profile import K_ANNOTATION, Profile
from ...knowledge.taxonomy import MODULE_RANGE_PREFIXES

#: a twin agrees with the span found through correlation ids when both ends are within
#: this (Kineto writes µs with three decimals; rounding is < 1 ns)
TWIN_TOLERANCE_NS = 1_000


def _joined(profile: Profile, tw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The twins of one annotation across streams as one span: (rank, name, start, end)."""
    ev = profile.events
    rank, name = ev["rank"][tw].astype(np.int64), ev["name"][tw].astype(np.int64)
    s, e, track = ev["start"][tw], ev["start"][tw] + ev["dur"][tw], ev["track"][tw]
    o = lexsort((s, name, rank))
    rank, name, s, e, track = rank[o], name[o], s[o], e[o], track[o]
    new = np.ones(len(s), bool)
    reach, tracks = -1, set()
    for i in range(len(s)):  # twins are few (one per step and stream)
        same = i > 0 and rank[i] == rank[i - 1] and name[i] == name[i - 1]
        # one annotation's twins overlap in time, each on a stream of its own
        new[i] = not same or s[i] >= reach or track[i] in tracks
        if new[i]:
            reach, tracks = int(e[i]), {int(track[i])}
        else:
            reach = max(reach, int(e[i]))
            tracks.add(int(track[i]))
    gid = np.cumsum(new) - 1
    k = int(gid[-1]) + 1 if len(gid) else 0
    g_s = np.full(k, np.iinfo(np.int64).max, np.int64)
    g_e = np.full(k, -1, np.int64)
    np.minimum.at(g_s, gid, s)
    np.maximum.at(g_e, gid, e)
    first = np.flatnonzero(new)
    return rank[first], name[first], g_s, g_e


def twin_diff(profile: Profile, own: np.ndarray, launch: np.ndarray) -> np.ndarray:
    """Per step row, how far its twin is from what the correlation ids say (the larger
    difference of the two ends; against the work launched while the step's range was the
    innermost one, or all of its work, whichever is nearer), -1 without a twin."""
    ev, steps = profile.events, profile.steps
    n = len(steps)
    out = np.full(n, -1, np.int64)
    kind, start = ev["kind"], ev["start"]
    tw = np.flatnonzero((kind == K_ANNOTATION) & (ev["device"] >= 0) & (start >= 0))
    tw = tw[np.isin(ev["name"][tw], steps["name"])] if n and len(tw) and len(own) else tw[:0]
    if not len(tw):
        return out
    host = np.flatnonzero((kind == K_ANNOTATION) & (ev["device"] < 0) & (start >= 0))
    names = profile.strings.strings
    host = host[[not names[i].startswith(MODULE_RANGE_PREFIXES) for i in ev["name"][host].tolist()]]
    # the host annotation row of each step (same rank, name and start)
    row_of = {
        (r, nm, t): i
        for i, r, nm, t in zip(
            host.tolist(), ev["rank"][host].tolist(), ev["name"][host].tolist(), start[host].tolist()
        )
    }
    step_ann = np.array(
        [row_of.get(k, -1) for k in zip(steps["rank"].tolist(), steps["name"].tolist(), steps["start"].tolist())],
        np.int64,
    )
    la = launch[own]
    own, la = own[la >= 0], la[la >= 0]
    thread = thread_ids(profile)
    inner = innermost(thread[host], start[host], start[host] + ev["dur"][host], thread[la], start[la])
    st = ev["step"][own].astype(np.int64)
    direct = (inner >= 0) & (host[np.maximum(inner, 0)] == step_ann[st])
    end = start + ev["dur"]
    spans = []
    for sel in (direct, np.ones(len(own), bool)):
        d_s = np.full(n, np.iinfo(np.int64).max, np.int64)
        d_e = np.full(n, -1, np.int64)
        np.minimum.at(d_s, st[sel], start[own[sel]])
        np.maximum.at(d_e, st[sel], end[own[sel]])
        spans.append((d_s, d_e))
    t_rank, t_name, t_s, t_e = _joined(profile, tw)
    for d_s, d_e in spans:
        has = np.flatnonzero(d_e >= 0)
        # the twin of the step's name and rank whose start is nearest the work's start
        g = group_ids(
            np.concatenate([steps["rank"][has].astype(np.int64), t_rank]),
            np.concatenate([steps["name"][has].astype(np.int64), t_name]),
        )
        big = int(max(int(end.max()), int(t_e.max()))) + 2
        tkey = g[len(has) :] * big + t_s
        order = np.argsort(tkey)
        tkey, ts_, te_ = tkey[order], t_s[order], t_e[order]
        skey = g[: len(has)] * big + d_s[has]
        pos = np.searchsorted(tkey, skey)
        best = np.full(len(has), -1, np.int64)
        best_d = np.full(len(has), np.iinfo(np.int64).max, np.int64)
        for p in (pos - 1, pos):
            ok = (p >= 0) & (p < len(tkey))
            pc = np.clip(p, 0, len(tkey) - 1)
            ok &= tkey[pc] // big == skey // big
            dist = np.abs(tkey[pc] - skey)
            better = ok & (dist < best_d)
            best[better], best_d[better] = pc[better], dist[better]
        m = best >= 0
        h = has[m]
        diff = np.maximum(np.abs(ts_[best[m]] - d_s[h]), np.abs(te_[best[m]] - d_e[h]))
        cur = out[h]
        out[h] = np.where(cur < 0, diff, np.minimum(cur, diff))
    return out

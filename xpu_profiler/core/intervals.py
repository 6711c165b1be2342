"""Interval sweeps over columnar data: the one home of nesting, containment and union.

Every function takes plain integer numpy columns (a group id per interval, start, end)
and is vectorised: a sort, a running maximum, a binary search; no Python loop per
interval except ``lanes``, which only loops where slices of one track partly overlap.
Groups are kept apart by an offset larger than any time (``key = gid * big + t``), so
one sort serves every group at once.
"""

from __future__ import annotations

import numpy as np

from . import compiled
from .ordering import lexsort, lexsort_taking, packed_keys

_MIN = np.iinfo(np.int64).min
#: queries looked up at a time (``containing``): its temporaries stay a few MiB on any trace
QUERY_CHUNK = 1 << 18


def distinct_rows(*cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of equal-length integer columns, sorted, and each row's index
    into them (a dense group id: equal rows, equal ids; ids follow the rows' order)."""
    n = len(cols[0])
    packed = packed_keys(cols[::-1])
    if packed is not None:
        # rows mostly come in runs (a thread's events together): the distinct rows of the
        # runs' first rows, then each run's id repeated, without sorting every row
        heads = np.flatnonzero(np.concatenate(([True], packed[1:] != packed[:-1])))
        if 4 * len(heads) <= n:
            _, first, inv = np.unique(packed[heads], return_index=True, return_inverse=True)
            del packed
            first = heads[first]
            inv = np.repeat(inv.astype(np.int64), np.diff(np.append(heads, n)))
            return np.stack([c[first] for c in cols], axis=1), inv
        order = np.argsort(packed, kind="stable")
        ps = packed[order]
        new = np.concatenate(([True], ps[1:] != ps[:-1]))
        del packed, ps
    else:
        order = lexsort(cols[::-1])
        new = np.zeros(n, bool)
        if n:
            new[0] = True
            for c in cols:
                cs = c[order]
                new[1:] |= cs[1:] != cs[:-1]
    inv = np.empty(n, np.int64)
    inv[order] = np.cumsum(new) - 1
    first = order[new]
    return np.stack([c[first] for c in cols], axis=1), inv


def group_ids(*cols: np.ndarray) -> np.ndarray:
    """A dense group id per row of several integer columns (equal rows, equal ids)."""
    return distinct_rows(*cols)[1]


def _span(*arrays: np.ndarray) -> int:
    hi = 1
    for a in arrays:
        if len(a):
            hi = max(hi, int(a.max()) + 1)
    return hi


def _prev_end(e: np.ndarray) -> np.ndarray:
    """For each interval of a sorted run, the largest end of those before it."""
    return np.maximum.accumulate(np.concatenate(([_MIN], e[:-1])))


def top_level(gid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Mask of intervals not contained in an earlier one of the same group."""
    n = len(start)
    if n == 0:
        return np.zeros(0, bool)
    big = _span(start, end) + 1
    order = lexsort((-end, start, gid))  # parents (longer) before children at equal start
    s = gid[order] * big + start[order]
    e = gid[order] * big + end[order]
    mask = np.empty(n, bool)
    mask[order] = s >= _prev_end(e)
    return mask


def containing(
    cand_gid: np.ndarray,
    cand_start: np.ndarray,
    cand_end: np.ndarray,
    q_gid: np.ndarray,
    q_start: np.ndarray,
    q_end: np.ndarray,
) -> np.ndarray:
    """For each query interval, the index of the candidate of its group that holds it, else -1.

    Candidates are taken as non-overlapping within a group (the latest one starting at or
    before the query wins); pass top-level or innermost sets accordingly.
    """
    out = np.full(len(q_start), -1, np.int64)
    if len(cand_start) == 0 or len(q_start) == 0:
        return out
    big = _span(cand_start, cand_end, q_start, q_end) + 1
    order = lexsort((cand_start, cand_gid))
    ckey = cand_gid[order].astype(np.int64)  # keys built in place: few full-length temporaries
    ckey *= big
    ckey += cand_start[order]
    for a in range(0, len(q_start), QUERY_CHUNK):  # the queries' temporaries bounded
        b = a + QUERY_CHUNK
        qkey = q_gid[a:b].astype(np.int64)
        qkey *= big
        qkey += q_start[a:b]
        pos = np.searchsorted(ckey, qkey, side="right")
        del qkey
        pos -= 1
        ok = pos >= 0
        np.maximum(pos, 0, out=pos)
        idx = order[pos]
        del pos
        ok &= cand_gid[idx] == q_gid[a:b]
        ok &= cand_end[idx] >= q_end[a:b]
        out[a:b][ok] = idx[ok]
    return out


def union_length(gid: np.ndarray, start: np.ndarray, end: np.ndarray, n_groups: int) -> np.ndarray:
    """Length of the union of intervals per group (busy time without double counting)."""
    out = np.zeros(n_groups, np.int64)
    if len(start) == 0:
        return out
    big = _span(start, end) + 1
    order = lexsort((start, gid))
    g = gid[order]
    s = g * big + start[order]
    e = g * big + end[order]
    np.add.at(out, g, np.maximum(0, e - np.maximum(s, _prev_end(e))))
    return out


def merged_intervals(gid: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group, the union of intervals as sorted disjoint (gid, start, end) runs."""
    if len(start) == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    order = lexsort((start, gid))
    g, s, e = gid[order].astype(np.int64), start[order], end[order]
    new_group = np.concatenate(([True], g[1:] != g[:-1]))
    big = _span(s, e) + 1
    opens = new_group | (g * big + s > _prev_end(g * big + e))
    run_id = np.cumsum(opens) - 1
    run_end = np.full(int(run_id[-1]) + 1, _MIN, np.int64)
    np.maximum.at(run_end, run_id, e)
    return g[opens], s[opens], run_end


def covered_in_windows(
    gid: np.ndarray, start: np.ndarray, end: np.ndarray, w_gid: np.ndarray, w_start: np.ndarray, w_end: np.ndarray
) -> np.ndarray:
    """Length of the union of the intervals of its group inside each window."""
    g, s, e = merged_intervals(gid, start, end)
    out = np.zeros(len(w_start), np.int64)
    if len(s) == 0 or len(w_start) == 0:
        return out
    big = _span(s, e, w_start, w_end) + 1
    key_s = g * big + s
    prefix = np.concatenate(([0], np.cumsum(e - s)))

    def covered(wg: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Covered time of group wg from the start of time up to x."""
        wg = wg.astype(np.int64)
        i = np.searchsorted(key_s, wg * big + x, side="right") - 1
        first = np.searchsorted(g, wg, side="left")  # first run of that group
        i_ok = (i >= first) & (i >= 0)
        ic = np.maximum(i, 0)
        part = np.where(i_ok, np.clip(x - s[ic], 0, (e - s)[ic]), 0)
        return np.where(i_ok, prefix[ic] - prefix[first] + part, 0)

    span: np.ndarray = np.maximum(covered(w_gid, w_end) - covered(w_gid, w_start), 0)
    return span


def within_union(gid: np.ndarray, start: np.ndarray, end: np.ndarray, q_gid: np.ndarray, q_t: np.ndarray) -> np.ndarray:
    """Mask of query points that lie inside (ends included) the union of their group's
    intervals; False for a group without any interval."""
    g, s, e = merged_intervals(gid, start, end)
    if len(s) == 0 or len(q_t) == 0:
        return np.zeros(len(q_t), bool)
    big = _span(s, e, q_t) + 1
    i = np.searchsorted(g * big + s, q_gid.astype(np.int64) * big + q_t, side="right") - 1
    ic = np.maximum(i, 0)
    inside: np.ndarray = (i >= 0) & (g[ic] == q_gid) & (q_t <= e[ic])
    return inside


def _nested(start: np.ndarray, end: np.ndarray, max_depth: int) -> bool:
    """Whether every interval nests in the innermost one open at its start, at most
    ``max_depth`` deep (one lane), checked without a loop: the starts and ends, in time
    order (an end before a start at the same time, unless it closes a zero-length
    interval; of ends at one time the later-opened first), must pair up as brackets do.
    Compiled (``core/_nest.c``): one walk in that order with a stack, the same answer."""
    n = len(start)
    if (end < start).any():
        return False
    order = lexsort((-end, start))
    walked = compiled.nested(start, end, order, max_depth)
    if walked is not None:
        return walked
    ids = np.int32 if 2 * n < 2**31 else np.int64  # halves the largest temporaries
    opened = np.empty(n, ids)
    opened[order] = np.arange(n, dtype=ids)
    del order
    t = np.concatenate([start, end])
    kind = np.concatenate([np.ones(n, np.int8), np.where(end > start, 0, 2).astype(np.int8)])
    keys = [np.concatenate([opened, -opened]), kind, t]  # (tie, kind, t)
    del opened, kind, t
    o = lexsort_taking(keys)
    is_open = o < n
    level = np.cumsum(is_open.astype(ids) * 2 - 1, dtype=ids)  # the depth after each
    if level.max() > max_depth:
        return False
    level[~is_open] += 1  # an open's level after it, a close's before
    by_level = np.argsort(level, kind="stable")  # per level: open, close, open, close, ...
    del level
    who = o[by_level]
    del o
    who %= n
    return bool(is_open[by_level][0::2].all() and (who[0::2] == who[1::2]).all())


def is_nested(gid: np.ndarray, start: np.ndarray, end: np.ndarray) -> bool:
    """Whether the intervals of each group nest (no two of one group overlap without one
    holding the other); ends before starts do not."""
    if len(start) < 2:
        return bool((end >= start).all())
    big = _span(start, end) + 1
    g = gid.astype(np.int64) * big
    return _nested(g + start, g + end, len(start))


def _disjoint(start: np.ndarray, end: np.ndarray) -> bool:
    """Whether no interval of one track overlaps another (``top_level`` all true, leaner)."""
    order = lexsort((-end, start))
    s, e = start[order], end[order]
    del order
    return bool((s[1:] >= np.maximum.accumulate(e[:-1])).all())


def lanes(start: np.ndarray, end: np.ndarray, max_depth: int) -> np.ndarray:
    """A lane per interval of one track so that every lane holds only properly nested
    intervals, at most ``max_depth`` deep.

    A track of disjoint intervals (a device stream, usually) is one lane. Otherwise each
    interval goes to the first lane whose innermost open interval holds it (or that has
    none open).
    """
    n = len(start)
    out_lanes = np.zeros(n, np.int64)
    if n < 2 or _disjoint(start, end) or _nested(start, end, max_depth):
        return out_lanes
    order = lexsort((-end, start))
    stacks: list[list[int]] = []
    out = np.zeros(n, np.int64)
    for k, (a, b) in enumerate(zip(start[order].tolist(), end[order].tolist())):
        for li, st in enumerate(stacks):
            while st and st[-1] <= a:
                st.pop()
            if (not st or b <= st[-1]) and len(st) < max_depth:
                st.append(b)
                out[k] = li
                break
        else:
            stacks.append([b])
            out[k] = len(stacks) - 1
    out_lanes[order] = out
    return out_lanes


def innermost(gid: np.ndarray, start: np.ndarray, end: np.ndarray, q_gid: np.ndarray, q_t: np.ndarray) -> np.ndarray:
    """For each query point, the index of the innermost interval of its group that holds
    it (start <= t <= end), else -1. Intervals of a group are taken as properly nested
    (ranges of one thread); the loop runs once per nesting level, not per interval."""
    out = np.full(len(q_t), -1, np.int64)
    if len(start) == 0 or len(q_t) == 0:
        return out
    big = _span(start, end, q_t) + 1
    order = lexsort((-end, start, gid))
    g, s, e = gid[order].astype(np.int64), start[order], end[order]
    # parent of each interval: the nearest earlier one of its group that holds it
    parent = np.full(len(s), -1, np.int64)
    gl, el = g.tolist(), e.tolist()
    stack: list[int] = []
    for i, (gi, si, ei) in enumerate(zip(gl, s.tolist(), el)):
        while stack and (gl[stack[-1]] != gi or el[stack[-1]] < si):
            stack.pop()
        if stack and el[stack[-1]] >= ei:
            parent[i] = stack[-1]
        stack.append(i)
    pos = np.searchsorted(g * big + s, q_gid.astype(np.int64) * big + q_t, side="right") - 1
    pos = np.where((pos >= 0) & (g[np.maximum(pos, 0)] == q_gid), pos, -1)
    todo = pos >= 0
    while todo.any():  # climb out of intervals that end before the point
        p = pos[todo]
        inside = e[p] >= q_t[todo]
        idx = np.flatnonzero(todo)
        pos[idx[~inside]] = parent[p[~inside]]
        todo[idx[inside]] = False
        todo &= pos >= 0
    ok = pos >= 0
    out[ok] = order[pos[ok]]
    return out

"""The last layer of step evidence: bursts of device work separated by idle, inferred.

A trace with device work and no other step evidence still shows its steps as bursts:
an engine step keeps the device busy (gaps of a few µs between kernels, a graph
replay back to back) and the device idles between steps while the host prepares the
next. Per rank, the device-level busy intervals are cut where the idle gap is at least
``SEGMENT_GAP_NS`` and at least ``SEGMENT_GAP_RATIO`` times the median gap; a burst with
fewer than ``MIN_SEGMENT_EVENTS`` device events is noise, not a step, and fewer than
``MIN_SEGMENTS`` bursts on a rank are not a step loop. Each step's host range is the launch
range of its work (first to last launch call; its own start for work launched outside the
trace), so the launches attribute to it as any step's do. The steps are
labelled inferred (evidence ``device_segment``).
"""

from __future__ import annotations

import numpy as np

from ...core.launches import device_mask, launch_start
from ...core.ordering import lexsort, number_per_rank
from ...core.profile import E_SEGMENT, F_NONE, P_UNKNOWN, STEP_SCHEMA, Profile, Table

#: an idle gap at least this long (and ``SEGMENT_GAP_RATIO`` x the median gap) ends a burst
SEGMENT_GAP_NS = 200_000
SEGMENT_GAP_RATIO = 20.0
#: a burst with fewer device events is no step; fewer bursts are no step loop
MIN_SEGMENT_EVENTS = 8
MIN_SEGMENTS = 2


def steps_from_segments(profile: Profile) -> Table:
    ev = profile.events
    rows = np.flatnonzero(device_mask(ev["kind"]) & (ev["start"] >= 0))
    if len(rows) < MIN_SEGMENT_EVENTS * MIN_SEGMENTS:
        return Table(STEP_SCHEMA)
    launch_t = launch_start(profile)
    rank = ev["rank"][rows].astype(np.int64)
    order = lexsort((ev["start"][rows], rank))
    rows, rank = rows[order], rank[order]
    start, end = ev["start"][rows], ev["start"][rows] + ev["dur"][rows]
    out: dict[str, list] = {"rank": [], "start": [], "dur": [], "name": []}
    name = profile.strings.intern("device burst (inferred step)")
    for r in np.unique(rank).tolist():
        m = np.flatnonzero(rank == r)
        found: list[tuple[int, int]] = []
        s, e, rr = start[m], end[m], rows[m]
        prev_end = np.maximum.accumulate(e)
        gap = np.concatenate(([0], np.maximum(s[1:] - prev_end[:-1], 0)))
        positive = gap[gap > 0]
        if not len(positive):
            continue
        cut = max(SEGMENT_GAP_NS, SEGMENT_GAP_RATIO * float(np.median(positive)))
        seg = np.cumsum(gap >= cut)
        for k in np.unique(seg).tolist():
            sel = np.flatnonzero(seg == k)
            if len(sel) < MIN_SEGMENT_EVENTS:
                continue
            la = launch_t[rr[sel]]
            first = np.where(la >= 0, la, s[sel])
            found.append((int(first.min()), int(first.max())))
        if len(found) < MIN_SEGMENTS:  # one burst on a rank is no step loop
            continue
        for lo, hi in found:
            out["rank"].append(r)
            out["start"].append(lo)
            out["dur"].append(hi - lo)
            out["name"].append(name)
    n = len(out["rank"])
    if not n:
        return Table(STEP_SCHEMA)
    ranks = np.asarray(out["rank"], np.int64)
    starts = np.asarray(out["start"], np.int64)
    durs = np.asarray(out["dur"], np.int64)
    # host ranges of one rank must not overlap: clip each at the next one's start
    o = lexsort((starts, ranks))
    ranks, starts, durs = ranks[o], starts[o], durs[o]
    same = np.concatenate((ranks[1:] == ranks[:-1], [False]))
    nxt = np.concatenate((starts[1:], [np.iinfo(np.int64).max]))
    durs = np.where(same, np.minimum(durs, nxt - starts), durs)
    return Table(
        STEP_SCHEMA,
        {
            "rank": ranks,
            "step_id": number_per_rank(ranks),
            "name": np.full(n, name, np.int32),
            "start": starts,
            "dur": np.maximum(durs, 1),
            "phase": np.full(n, P_UNKNOWN, np.int8),
            "evidence": np.full(n, E_SEGMENT, np.int8),
            "phase_from": np.full(n, F_NONE, np.int8),
        },
    )

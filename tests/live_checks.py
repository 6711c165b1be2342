"""Checks shared by the live tests: attribution against the workers' own step ranges."""

from __future__ import annotations

import numpy as np

from xpu_profiler.core.profile import K_ANNOTATION, K_CPU_OP, K_KERNEL, P_UNKNOWN, Profile
from xpu_profiler.core.records import STEP_RANGE


def _worker_step_ranges(prof: Profile):
    """The workers' own ``xpu_step#N`` ranges in the trace: (rank, start, end, N), by rank and start."""
    ev = prof.events
    ann = np.flatnonzero(ev["kind"] == K_ANNOTATION)
    rows = []
    for i in ann.tolist():
        m = STEP_RANGE.match(prof.strings[int(ev["name"][i])])
        if m:
            rows.append((int(ev["rank"][i]), int(ev["start"][i]), int(ev["start"][i] + ev["dur"][i]), int(m.group(1))))
    rows.sort()
    return [np.array(c, np.int64) for c in zip(*rows)]


def ops_inside_worker_steps(prof: Profile, min_ranges: int):
    """Checks, on an attributed profile that was not trimmed to its steps, that every op
    inside a worker's own ``xpu_step#N`` range (the trace's clock) is attributed to engine
    step N (from the scheduler hooks, the wall clock) with a known phase. Returns the op
    rows and which of them lie inside a range."""
    ev = prof.events
    ops = np.flatnonzero(np.isin(ev["kind"], [K_CPU_OP, K_KERNEL]))
    r_rank, r_start, r_end, r_step = _worker_step_ranges(prof)
    assert len(r_step) >= min_ranges
    # the range of each op's rank that starts last at or before it
    t, rank = ev["start"][ops], ev["rank"][ops].astype(np.int64)
    key = r_rank * (1 << 50) + r_start
    pos = np.searchsorted(key, rank * (1 << 50) + t, side="right") - 1
    ok = pos >= 0
    pos = np.maximum(pos, 0)
    inside = ok & (r_rank[pos] == rank) & (t + ev["dur"][ops] <= r_end[pos])
    assert inside.any()
    step = ev["step"][ops]
    got = np.where(step >= 0, prof.steps["step_id"][np.maximum(step, 0)], -1)
    assert np.array_equal(got[inside], r_step[pos][inside])
    assert int((ev["phase"][ops][inside] == P_UNKNOWN).sum()) == 0
    return ops, inside

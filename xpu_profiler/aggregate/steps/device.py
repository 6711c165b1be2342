"""Each engine step on the device's clock: its device range, what kept the device idle in
it, and the step's time on the critical path.

A step has two clocks. Its host range (the step annotation, frame or hook) is where the
host schedules and launches; on an asynchronous device (GPU, XPU) the work it launched
runs later, mostly after the host range has ended. A step's device work is what it
launched: the device events whose runtime call (correlation id) lies inside its host
range, graph replays included (``attribution`` fills ``events.step`` that way). Per
step row:

- ``start``/``end``: first start and last end of that work;
- ``eff_start``: the start of its *effective* device range. When the step's first work
  ran and the rest then waited (a dependency gap of at least ``TRIM_WAIT_NS``, before
  ``TRIM_BEFORE_BUSY`` of the step's busy time had run: a stream blocked on an event of
  earlier work that is not in the trace, while the host sat in a synchronous copy), the
  range starts after that wait: the wait belongs to the earlier work, not to this step.
  Likewise where the step's work runs while earlier steps' work still runs (several
  streams), its range starts where theirs ends: the device's time is tiled in step order,
  the time two steps share counted once, for the earlier one;
- ``busy``: the union over streams of that work (its own work, wherever it ran); on a rank
  whose steps' work ran at once (tiled ranges), the device's busy time in the step's range;
- ``idle``: time inside ``[eff_start, end)`` when no device work of the rank runs at all;
- ``starved``: the gap between the previous step's last device activity (on that rank)
  and this step's first, 0 when they overlap or for the first step;
- the device-level idle gaps ended by this step's work after ``eff_start``, split by
  cause (``idle``): host wait, kernel wait (launch latency), other (dependency), and
  ``waiting_on_host``;
- ``comm`` / ``exposed_comm``: its collective work, and the part of it no other device
  work of the rank overlapped (on the critical path);
- ``step_time``: the step's time on the critical path: the longer of its host range and
  its effective device range (under graph replay the host range ends long before the
  device does; in a host-bound step the host range is the longer one); the host range
  without device work (CPU runs, steps that launched nothing).

The verdicts built on these are in ``verdicts``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core.intervals import covered_in_windows, merged_intervals, union_length
from ...core.launches import device_mask, launch_end, launch_start
from ...core.profile import K_COMM, Profile
from ...knowledge.fused_ops import FUSED_OPS
from .idle import Gaps, device_rows, find_gaps
from .twins import twin_diff

#: a dependency wait this long, before ``TRIM_BEFORE_BUSY`` of the step's busy time has
#: run, starts the step's effective device range after it
TRIM_WAIT_NS = 1_000_000
TRIM_BEFORE_BUSY = 0.05
COMMUNICATION = FUSED_OPS.index("communication")


def has_device_work(profile: Profile) -> bool:
    return bool(device_mask(profile.events["kind"]).any())


def step_busy(profile: Profile, basis: np.ndarray) -> np.ndarray:
    """Busy ns per step row. With device work: the union over streams of the step's own
    device work. Without (CPU runs): the union of the top-level host ops (``basis``)
    inside the step's host window."""
    ev, steps = profile.events, profile.steps
    start, end = ev["start"], ev["start"] + ev["dur"]
    if has_device_work(profile):
        m = device_mask(ev["kind"]) & (start >= 0) & (ev["step"] >= 0)
        return union_length(ev["step"][m].astype(np.int64), start[m], end[m], len(steps))
    m = basis & (start >= 0)
    return covered_in_windows(
        ev["rank"][m].astype(np.int64),
        start[m],
        end[m],
        steps["rank"].astype(np.int64),
        steps["start"],
        steps["start"] + steps["dur"],
    )


class DeviceTimeline(NamedTuple):
    """Per step row (same order as ``profile.steps``); ``start`` -1: no device work."""

    start: np.ndarray
    end: np.ndarray
    eff_start: np.ndarray
    busy: np.ndarray
    idle: np.ndarray
    starved: np.ndarray
    host_wait: np.ndarray
    kernel_wait: np.ndarray
    other: np.ndarray
    waiting_on_host: np.ndarray
    comm: np.ndarray
    exposed_comm: np.ndarray
    step_time: np.ndarray  # ns on the critical path (the longer of host and effective device range)
    first_launch: np.ndarray  # start of the runtime call that launched its first work, -1
    twin_diff: np.ndarray  # ns, -1 without a twin or without correlated work
    queue_delay: np.ndarray  # mean start − launch of the step's device work, -1 unknown
    delay: np.ndarray  # start − launch of each launched piece of the steps' work
    delay_step: np.ndarray  # ... and its step row
    device_gaps: Gaps  # device-level gaps (no stream busy), each ended by a row of work
    gap_step: np.ndarray  # per device gap: the step row it counts for, -1 (trimmed or none)
    stream_gaps: Gaps  # per-stream gaps of every device event (HTA's breakdown)
    device_rows: np.ndarray  # the rows those gaps are over

    @property
    def has(self) -> np.ndarray:
        return self.start >= 0

    @property
    def period(self) -> np.ndarray:
        return np.where(self.start >= 0, self.starved + self.end - self.eff_start, 0)


def device_timeline(profile: Profile, launch: np.ndarray) -> DeviceTimeline | None:
    """The device-side step timeline of an attributed profile; None without device work.
    ``launch``: per event row, the row of the runtime call that launched it (-1)."""
    if not has_device_work(profile):
        return None
    launch_t = launch_start(profile, launch)
    ev, steps = profile.events, profile.steps
    n = len(steps)
    rows = device_rows(profile)
    start, end = ev["start"], ev["start"] + ev["dur"]
    own = rows[ev["step"][rows] >= 0]
    st = ev["step"][own].astype(np.int64)
    d_start = np.full(n, np.iinfo(np.int64).max, np.int64)
    d_end = np.full(n, -1, np.int64)
    np.minimum.at(d_start, st, start[own])
    np.maximum.at(d_end, st, end[own])
    has = d_end >= 0
    busy = union_length(st, start[own], end[own], n)
    d_start = np.where(has, d_start, -1)
    issued = launch_end(profile, launch)  # the host's time runs until the launch call returns
    dgaps = find_gaps(profile, rows, issued, per_stream=False)
    g_step = ev["step"][dgaps.row].astype(np.int64)
    eff = _effective_start(profile, own, st, d_start, busy, dgaps, g_step)
    s_rank = steps["rank"].astype(np.int64)
    after = _after_previous(s_rank, eff, d_end, has)
    tiled = np.isin(s_rank, np.unique(s_rank[after > eff]))  # ranks whose steps' work ran at once
    eff = after
    # the waits trimmed off a step's front are not its own
    if n:
        gs = np.maximum(g_step, 0)
        trimmed = (g_step >= 0) & (eff[gs] > d_start[gs]) & (dgaps.end <= eff[gs])
        g_step = np.where(trimmed, -1, g_step)
    rank = ev["rank"][rows].astype(np.int64)
    lo, hi = np.maximum(eff, 0), np.maximum(d_end, 0)
    covered = covered_in_windows(rank, start[rows], end[rows], s_rank, lo, hi)
    busy = np.where(tiled & has, covered, busy)  # (tiled: the device's busy time in the step's range)
    idle = np.where(has, (hi - lo) - covered, 0)
    starved = _starved(s_rank, eff, d_end, has)
    sums = {}
    ok = g_step >= 0
    for name in ("host_wait", "kernel_wait", "other", "waiting_on_host"):
        sums[name] = np.bincount(g_step[ok], weights=getattr(dgaps, name)[ok], minlength=n).astype(np.int64)[:n]
    comm, exposed = _exposed_comm(profile, rows, own, st, n)
    delay, delay_step, queue = _queue_delays(profile, own, st, launch_t, n)
    first_launch = np.full(n, np.iinfo(np.int64).max, np.int64)
    la = launch_t[own]
    np.minimum.at(first_launch, st[la >= 0], la[la >= 0])
    first_launch = np.where(first_launch == np.iinfo(np.int64).max, -1, first_launch)
    return DeviceTimeline(
        start=d_start,
        end=d_end,
        eff_start=eff,
        busy=np.where(has, busy, 0),
        idle=idle,
        starved=starved,
        host_wait=sums["host_wait"],
        kernel_wait=sums["kernel_wait"],
        other=sums["other"],
        waiting_on_host=sums["waiting_on_host"],
        comm=comm,
        exposed_comm=exposed,
        step_time=_step_time(steps, has, d_start, eff, d_end),
        first_launch=first_launch,
        twin_diff=twin_diff(profile, own, launch),
        queue_delay=queue,
        delay=delay,
        delay_step=delay_step,
        device_gaps=dgaps,
        gap_step=g_step,
        stream_gaps=find_gaps(profile, rows, issued, per_stream=True),
        device_rows=rows,
    )


def _step_time(steps, has: np.ndarray, d_start: np.ndarray, eff: np.ndarray, d_end: np.ndarray) -> np.ndarray:
    """Each step's time on the critical path: the longer of its host range and its effective
    device range. A host range that began while the step's work waited on earlier work (a
    trimmed front: the host sat in a copy blocked behind it) counts from the effective start."""
    h_start, h_end = steps["start"], steps["start"] + steps["dur"]
    trimmed = has & (eff > d_start)
    host = np.where(trimmed, np.maximum(h_end - np.maximum(h_start, eff), 0), steps["dur"])
    return np.where(has, np.maximum(d_end - eff, host), steps["dur"])


def _effective_start(
    profile: Profile,
    own: np.ndarray,
    st: np.ndarray,
    d_start: np.ndarray,
    busy: np.ndarray,
    gaps: Gaps,
    g_step: np.ndarray,
) -> np.ndarray:
    """Per step, the start of its effective device range: after the last dependency wait
    of at least ``TRIM_WAIT_NS`` that its work ran into before ``TRIM_BEFORE_BUSY`` of its
    busy time had run; its first work's start otherwise (-1 without device work)."""
    eff = d_start.copy()
    cand = np.flatnonzero((g_step >= 0) & (gaps.other >= TRIM_WAIT_NS))
    if not len(cand):
        return eff
    ev = profile.events
    # each step's own work as disjoint runs, and the busy time before each run
    g, rs, re_ = merged_intervals(st, ev["start"][own], ev["start"][own] + ev["dur"][own])
    run_len = re_ - rs
    before_run = np.cumsum(run_len) - run_len
    first_of = np.searchsorted(g, g, side="left")
    before_run -= before_run[first_of]  # per step, from its first run
    big = int(max(int(re_.max()), int(gaps.end.max()))) + 1
    key = g * big + rs
    c_step = g_step[cand]
    p = gaps.start[cand]
    k = np.searchsorted(key, c_step * big + p, side="right") - 1  # the last run starting by p
    ok = (k >= 0) & (g[np.maximum(k, 0)] == c_step)
    kk = np.maximum(k, 0)
    ran = np.where(ok, before_run[kk] + np.clip(p - rs[kk], 0, run_len[kk]), 0)
    trim = ran < TRIM_BEFORE_BUSY * busy[c_step]
    np.maximum.at(eff, c_step[trim], gaps.end[cand[trim]])
    return eff


def _exposed_comm(
    profile: Profile, rows: np.ndarray, own: np.ndarray, st: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per step: its collective work (union), and the part of it that no other device
    work of its rank overlapped."""
    ev = profile.events
    is_comm = (ev["kind"] == K_COMM) | (ev["fused"] == COMMUNICATION)
    c = own[is_comm[own]]
    if not len(c):
        z = np.zeros(n, np.int64)
        return z, z.copy()
    cst = ev["step"][c].astype(np.int64)
    g, s, e = merged_intervals(cst, ev["start"][c], ev["start"][c] + ev["dur"][c])
    comm = np.bincount(g, weights=e - s, minlength=n).astype(np.int64)[:n]
    other = rows[~is_comm[rows]]
    w_rank = profile.steps["rank"].astype(np.int64)[g]
    covered = covered_in_windows(
        ev["rank"][other].astype(np.int64),
        ev["start"][other],
        ev["start"][other] + ev["dur"][other],
        w_rank,
        s,
        e,
    )
    exposed = np.bincount(g, weights=(e - s) - covered, minlength=n).astype(np.int64)[:n]
    return comm, exposed


def _after_previous(s_rank: np.ndarray, eff: np.ndarray, d_end: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Per step, its effective start moved to the latest end of the earlier steps' work on its
    rank (in the order of their effective starts) where that comes later, at most its own end.
    Steps whose work runs at once on several streams (a step's first kernels start while the
    previous step's still run) would otherwise both count the time they share: periods and
    step times summing beyond the device's time. The device's time is tiled in step order
    instead: the time they share is the earlier step's, as a wait on earlier work is."""
    out = eff.copy()
    for r in np.unique(s_rank[has]).tolist():  # ranks are few
        idx = np.flatnonzero(has & (s_rank == r))
        idx = idx[np.argsort(eff[idx], kind="stable")]
        prev = np.maximum.accumulate(np.concatenate(([-1], d_end[idx][:-1])))
        out[idx] = np.minimum(np.maximum(eff[idx], prev), d_end[idx])
    return out


def _starved(s_rank: np.ndarray, d_start: np.ndarray, d_end: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Per step: its device start minus the latest device end of the earlier steps of its
    rank (in step order), 0 when not positive or without an earlier step."""
    starved = np.zeros(len(s_rank), np.int64)
    for r in np.unique(s_rank[has]).tolist():  # ranks are few
        idx = np.flatnonzero(has & (s_rank == r))
        prev = np.maximum.accumulate(np.concatenate(([-1], d_end[idx][:-1])))
        starved[idx] = np.where(prev >= 0, np.maximum(d_start[idx] - prev, 0), 0)
    return starved


def _queue_delays(
    profile: Profile, own: np.ndarray, st: np.ndarray, launch_t: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How long the steps' device work waited between its launch and its start: per event
    (with its step), and per step the mean (-1 without launches)."""
    la = launch_t[own]
    k = la >= 0
    delay = np.maximum(profile.events["start"][own][k] - la[k], 0)
    s = st[k]
    cnt = np.bincount(s, minlength=n)[:n]
    tot = np.bincount(s, weights=delay, minlength=n)[:n]
    mean = np.where(cnt > 0, tot / np.maximum(cnt, 1), -1).astype(np.int64)
    return delay, s, mean

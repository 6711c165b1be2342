"""Each engine step on the device's clock, and whether the host or the device set its pace.

A step has two clocks. Its host range (the step annotation) is where the host schedules
and launches; on an asynchronous device (GPU, XPU) the work it launched runs later,
mostly after the host range has ended. A step's device work is what it launched: the
device events whose runtime call (correlation id) lies inside its host range, graph
replays included (``attribution`` fills ``events.step`` that way). Per step row:

- ``device_start``/``device_end``: first start and last end of that work;
- ``busy``: the union over streams of that work (its own work, wherever it ran);
- ``idle``: time inside ``[device_start, device_end)`` when no device work of the rank
  runs at all (another step's work running inside the span is neither);
- ``starved``: the gap between the previous step's last device activity (on that rank)
  and this step's first, 0 when they overlap or for the first step;
- the device-level idle gaps ended by this step's work, split by cause (``idle``):
  host wait, kernel wait, other, and ``waiting_on_host``.

Kineto writes a device-side twin of each user annotation (``gpu_user_annotation``):
the span of the device work launched from the annotation's thread while it was the
innermost range there. Where a step has one, it is compared with the span of that same
work found through correlation ids (``twin_diff``): the two must agree. The step's own
span also holds work launched from other threads or under nested ranges.

**The verdict.** A step's device period is ``starved + (device_end - device_start)``.
The step is *host-bound* when the device spent at least ``HOST_BOUND_SHARE`` of that
period waiting on the host (``waiting_on_host``: launches that arrived after the
device had drained, and the launch latency of work that started as soon as it was
launched), else *device-bound*: the host was ahead, the work was queued before the
device could run it, and the step's device time is its own work plus waits the host
did not cause (``other``: events, other streams, synchronous copies). A phase is
judged the same way on the sums over its steps. Without device work (CPU runs, where
ops execute synchronously on the host) there is no verdict.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.fmt import ns
from ..core.intervals import covered_in_windows, group_ids, innermost, union_length
from ..core.launches import device_mask, launch_start, thread_ids
from ..core.profile import K_ANNOTATION, PHASES, Profile
from ..knowledge.taxonomy import MODULE_RANGE_PREFIXES
from ..summary import DeviceSteps, DeviceTime
from .idle import KERNEL_WAIT_NS, Gaps, device_rows, find_gaps

#: a step (or phase) is host-bound when the device waited on the host for at least this
#: share of its device period
HOST_BOUND_SHARE = 0.2
#: a gpu_user_annotation twin agrees with the span found through correlation ids when
#: both ends are within this (Kineto writes µs with three decimals; rounding is < 1 ns)
TWIN_TOLERANCE_NS = 1_000
BOUND = ("host", "device")


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
    busy: np.ndarray
    idle: np.ndarray
    starved: np.ndarray
    host_wait: np.ndarray
    kernel_wait: np.ndarray
    other: np.ndarray
    waiting_on_host: np.ndarray
    bound: np.ndarray  # 0 host, 1 device, -1 no device work
    twin_diff: np.ndarray  # ns, -1 without a twin or without correlated work
    queue_delay: np.ndarray  # mean start − launch of the step's device work, -1 unknown
    delay: np.ndarray  # start − launch of each launched piece of the steps' work
    delay_step: np.ndarray  # ... and its step row
    stream_gaps: Gaps  # per-stream gaps of every device event (HTA's breakdown)
    device_rows: np.ndarray  # the rows those gaps are over

    @property
    def period(self) -> np.ndarray:
        return np.where(self.start >= 0, self.starved + self.end - self.start, 0)


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
    twin_diff = _twin_diff(profile, own, launch)
    d_start = np.where(has, d_start, -1)
    s_rank = steps["rank"].astype(np.int64)
    rank = ev["rank"][rows].astype(np.int64)
    covered = covered_in_windows(rank, start[rows], end[rows], s_rank, np.maximum(d_start, 0), np.maximum(d_end, 0))
    idle = np.where(has, (d_end - d_start) - covered, 0)
    starved = _starved(s_rank, d_start, d_end, has)
    dgaps = find_gaps(profile, rows, launch_t, per_stream=False)
    sums = {}
    g_step = ev["step"][dgaps.row].astype(np.int64)
    ok = g_step >= 0
    for name in ("host_wait", "kernel_wait", "other", "waiting_on_host"):
        sums[name] = np.bincount(g_step[ok], weights=getattr(dgaps, name)[ok], minlength=n).astype(np.int64)[:n]
    period = np.where(has, starved + d_end - d_start, 0)
    bound = np.where(~has | (period <= 0), -1, np.where(sums["waiting_on_host"] >= HOST_BOUND_SHARE * period, 0, 1))
    delay, delay_step, queue = _queue_delays(profile, own, st, launch_t, n)
    return DeviceTimeline(
        start=d_start,
        end=d_end,
        busy=np.where(has, busy, 0),
        idle=idle,
        starved=starved,
        host_wait=sums["host_wait"],
        kernel_wait=sums["kernel_wait"],
        other=sums["other"],
        waiting_on_host=sums["waiting_on_host"],
        bound=bound.astype(np.int8),
        twin_diff=twin_diff,
        queue_delay=queue,
        delay=delay,
        delay_step=delay_step,
        stream_gaps=find_gaps(profile, rows, launch_t, per_stream=True),
        device_rows=rows,
    )


def _starved(s_rank: np.ndarray, d_start: np.ndarray, d_end: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Per step: its device start minus the latest device end of the earlier steps of its
    rank (in step order), 0 when not positive or without an earlier step."""
    starved = np.zeros(len(s_rank), np.int64)
    for r in np.unique(s_rank[has]).tolist():  # ranks are few
        idx = np.flatnonzero(has & (s_rank == r))
        prev = np.maximum.accumulate(np.concatenate(([-1], d_end[idx][:-1])))
        starved[idx] = np.where(prev >= 0, np.maximum(d_start[idx] - prev, 0), 0)
    return starved


def _twin_diff(profile: Profile, own: np.ndarray, launch: np.ndarray) -> np.ndarray:
    """Per step row, how far its gpu_user_annotation twin is from what the correlation ids
    say (the larger difference of the two ends), -1 without a twin. Kineto's twin spans
    the device work launched from the annotation's own thread while it was the innermost
    range there (work under a nested range gets that range's twin), so that is the work
    it is compared with."""
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
    d_s = np.full(n, np.iinfo(np.int64).max, np.int64)
    d_e = np.full(n, -1, np.int64)
    np.minimum.at(d_s, st[direct], start[own[direct]])
    np.maximum.at(d_e, st[direct], (start + ev["dur"])[own[direct]])
    has = np.flatnonzero(d_e >= 0)
    # the twin of the step's name and rank whose start is nearest the direct work's start
    g = group_ids(
        np.concatenate([steps["rank"][has], ev["rank"][tw]]).astype(np.int64),
        np.concatenate([steps["name"][has], ev["name"][tw]]).astype(np.int64),
    )
    big = int((start + ev["dur"]).max()) + 2
    tkey = g[len(has) :] * big + start[tw]
    order = np.argsort(tkey)
    tkey, tw = tkey[order], tw[order]
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
    t = tw[best[m]]
    h = has[m]
    out[h] = np.maximum(np.abs(start[t] - d_s[h]), np.abs(start[t] + ev["dur"][t] - d_e[h]))
    return out


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


# -- phases -------------------------------------------------------------------------------


def phase_bound(tl: DeviceTimeline, phase: np.ndarray, p: int) -> dict | None:
    """The device time of one phase's steps summed, its verdict and the evidence; None
    when its steps ran no device work."""
    m = (phase == p) & (tl.start >= 0)
    if not m.any():
        return None
    period = int(tl.period[m].sum())
    if period <= 0:
        return None
    sums = {
        k: int(getattr(tl, k)[m].sum())
        for k in ("busy", "idle", "starved", "host_wait", "kernel_wait", "other", "waiting_on_host")
    }
    host = sums["waiting_on_host"] >= HOST_BOUND_SHARE * period
    q = tl.delay[phase[tl.delay_step] == p]
    delay = float(np.median(q)) if len(q) else None  # O(n) selection, no sort
    return {
        "bound": "host" if host else "device",
        "period": period,
        "queue_delay": delay,
        **sums,
        "evidence": evidence(PHASES[p], host, period, sums, delay),
    }


def evidence(label: str, host: bool, period: int, s: dict, delay: float | None) -> str:
    """One sentence that says why: the shares of the device period and where they went."""

    def pct(x: int) -> str:
        return f"{100 * x / period:.1f}%" if period else "0%"

    idle = s["idle"] + s["starved"]
    head = (
        f"{label} is {'host' if host else 'device'}-bound: device busy {pct(s['busy'])} of its step time, "
        f"idle {pct(idle)} (host wait {pct(s['host_wait'])}, kernel wait {pct(s['kernel_wait'])}, "
        f"other {pct(s['other'])}); {pct(s['waiting_on_host'])} waiting on the host"
    )
    if host:
        return f"{head}: launches arrived after the device had drained"
    lead = f", its work queued a median {ns(delay)} before it ran" if delay is not None else ""
    why = (
        "idle with its work already queued (dependencies, not the host)"
        if s["other"] > s["busy"]
        else "the host kept ahead of the device"
    )
    return f"{head}{lead}: {why}"


# -- the Summary's sections ------------------------------------------------------------------


def device_steps_section(profile: Profile, tl: DeviceTimeline | None):
    """The ``DeviceSteps`` section (empty without device work)."""
    if tl is None or not len(profile.steps):
        return DeviceSteps()
    steps = profile.steps
    has = tl.start >= 0
    twin = tl.twin_diff >= 0
    diff = tl.twin_diff[twin]
    return DeviceSteps(
        rank=steps["rank"].tolist(),
        step_id=steps["step_id"].tolist(),
        phase=[PHASES[p] for p in steps["phase"].tolist()],
        device_start_ns=tl.start.tolist(),
        device_end_ns=tl.end.tolist(),
        device_busy_ns=tl.busy.tolist(),
        device_idle_ns=tl.idle.tolist(),
        starved_ns=tl.starved.tolist(),
        host_wait_ns=tl.host_wait.tolist(),
        kernel_wait_ns=tl.kernel_wait.tolist(),
        other_ns=tl.other.tolist(),
        waiting_on_host_ns=tl.waiting_on_host.tolist(),
        queue_delay_ns=tl.queue_delay.tolist(),
        bound=[BOUND[b] if b >= 0 and h else None for b, h in zip(tl.bound.tolist(), has.tolist())],
        twin_diff_ns=[int(d) if d >= 0 else None for d in tl.twin_diff.tolist()],
        host_bound_share=HOST_BOUND_SHARE,
        kernel_wait_max_ns=KERNEL_WAIT_NS,
        twins={
            "steps": int(twin.sum()),
            "agree": int((diff <= TWIN_TOLERANCE_NS).sum()),
            "max_diff_ns": int(diff.max()) if len(diff) else 0,
            "tolerance_ns": TWIN_TOLERANCE_NS,
        },
    )


def add_phase_bounds(phases: list, profile: Profile, tl: DeviceTimeline | None) -> None:
    """Fill each Phase's verdict, evidence and device time (in place)."""
    if tl is None:
        return
    for ph in phases:
        b = phase_bound(tl, profile.steps["phase"], PHASES.index(ph.phase))
        if b is None:
            continue
        ph.bound, ph.bound_evidence = b["bound"], b["evidence"]
        ph.device = DeviceTime(
            period_ns=b["period"],
            busy_ns=b["busy"],
            idle_ns=b["idle"],
            starved_ns=b["starved"],
            host_wait_ns=b["host_wait"],
            kernel_wait_ns=b["kernel_wait"],
            other_ns=b["other"],
            waiting_on_host_ns=b["waiting_on_host"],
            queue_delay_ns=b["queue_delay"],
        )

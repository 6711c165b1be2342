"""The causal and device-side parts of the Perfetto trace: launch → device work flow
arrows, each step's device span as its own track, and the idle breakdown as counters.

Flows are v1 flow events as torch.profiler writes them (``ac2g``): an ``s`` at the
runtime call's start on its host track (Perfetto binds it to the innermost slice open
there: the call itself), an ``f`` with ``"bp": "e"`` at the device work's start on its
stream track, one id per (launch, device event) pair, unique in the trace. A graph
launch starts one flow per replayed kernel. Pairs that cannot bind (a zero-length
slice, a kernel that starts before its launch on a skewed clock) are left out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.intervals import lanes
from ..core.launches import launch_rows
from ..core.profile import DEVICE_KINDS, Profile
from ..summary import DeviceSteps, Summary

DEVICE_STEP_TID = 2  # tids 2.. (one per lane) of each rank: the steps' device spans
MAX_STEP_LANES = 90  # below HOST_TID0


def flow_pairs(profile: Profile, idx: np.ndarray, tid: np.ndarray, pid: np.ndarray) -> tuple[np.ndarray, ...]:
    """Flow pairs from each launch to its device work, as columns: (launch ts, pid, tid,
    device ts, pid, tid); ``idx``/``tid``/``pid``: the exported events and where they were
    put (``idx`` ascending). Pair i is written as flow id i + 1: an ``s`` at the launch, an
    ``f`` at the device."""
    ev = profile.events
    rows = launch_rows(profile)
    at = np.flatnonzero(np.isin(ev["kind"][idx], DEVICE_KINDS) & (rows[idx] >= 0))  # positions in idx
    dev = idx[at]
    src = rows[dev]
    src_at = np.minimum(np.searchsorted(idx, src), max(len(idx) - 1, 0))  # idx is ascending
    ok = (idx[src_at] == src) & (ev["dur"][src] > 0) & (ev["dur"][dev] > 0) & (ev["start"][src] <= ev["start"][dev])
    at, src_at, dev, src = at[ok], src_at[ok], dev[ok], src[ok]
    return (
        ev["start"][src].astype(np.int64),
        pid[src_at],
        tid[src_at],
        ev["start"][dev].astype(np.int64),
        pid[at],
        tid[at],
    )


def device_step_tracks(
    summary: Summary | None, pid_of: dict[int, int], encode
) -> tuple[list[dict], list[str], np.ndarray, np.ndarray]:
    """Per rank: a track of the steps' device spans (lanes where they overlap) and a
    counter of each step's device idle by cause. (metadata, texts, ts, dur)."""
    meta: list[dict[str, Any]] = []
    texts: list[str] = []
    ts_l: list[int] = []
    dur_l: list[int] = []
    d = summary.device_steps if summary is not None else None
    if d is None or not d.rank:
        return meta, texts, np.zeros(0, np.int64), np.zeros(0, np.int64)
    start, end = np.array(d.device_start_ns, np.int64), np.array(d.device_end_ns, np.int64)
    rank = np.array(d.rank, np.int64)
    for r in sorted(set(d.rank)):
        if r not in pid_of:
            continue
        pid = pid_of[r]
        m = np.flatnonzero((rank == r) & (start >= 0))
        if not len(m):
            continue
        m = m[np.argsort(start[m], kind="stable")]
        lane = lanes(start[m], end[m], 500)
        for k, i in enumerate(m.tolist()):
            if lane[k] >= MAX_STEP_LANES:
                continue
            s0, s1 = int(start[i]), int(end[i])
            texts.append(encode(_step_slice(d, i, pid, DEVICE_STEP_TID + int(lane[k]), s0, s1)).decode())
            ts_l.append(s0)
            dur_l.append(s1 - s0)
            idle = (d.host_wait_ns[i] / 1000.0, d.kernel_wait_ns[i] / 1000.0, d.other_ns[i] / 1000.0)
            texts.append(encode(_idle_counter(pid, s0, *idle)).decode())
            ts_l.append(s0)
            dur_l.append(0)
        last = int(end[m].max())
        texts.append(encode(_idle_counter(pid, last, 0, 0, 0)).decode())  # back to zero after the last step
        ts_l.append(last)
        dur_l.append(0)
        meta += _lane_meta(pid, min(int(lane.max()) + 1, MAX_STEP_LANES))
    return meta, texts, np.array(ts_l, np.int64), np.array(dur_l, np.int64)


def _step_slice(d: DeviceSteps, i: int, pid: int, tid: int, s0: int, s1: int) -> dict[str, Any]:
    """Step ``i``'s device span as a slice, its busy time and idle by cause (µs) in args."""

    def us(key: str) -> float:
        return getattr(d, key)[i] / 1000.0

    args = {
        "step_id": d.step_id[i],
        "phase": d.phase[i],
        "bound": d.bound[i] or "",
        "busy_us": us("device_busy_ns"),
        "idle_us": us("device_idle_ns"),
        "starved_us": us("starved_ns"),
        "host_wait_us": us("host_wait_ns"),
        "kernel_wait_us": us("kernel_wait_ns"),
        "other_us": us("other_ns"),
    }
    name = f"{d.phase[i]} step {d.step_id[i]} on device" + (f" ({d.bound[i]}-bound)" if d.bound[i] else "")
    return {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": s0 / 1000.0, "dur": (s1 - s0) / 1000.0, "args": args}


def _idle_counter(pid: int, ts_ns: int, host_wait: float, kernel_wait: float, other: float) -> dict[str, Any]:
    """A sample of the "step device idle (us)" counter: a step's idle by cause, from ``ts_ns`` on."""
    return {
        "ph": "C",
        "name": "step device idle (us)",
        "pid": pid,
        "tid": pid,
        "ts": ts_ns / 1000.0,
        "args": {"host_wait": host_wait, "kernel_wait": kernel_wait, "other": other},
    }


def _lane_meta(pid: int, n_lanes: int) -> list[dict[str, Any]]:
    """The names and sort indexes of a rank's device-step tracks, one per lane."""
    meta: list[dict[str, Any]] = []
    for lane_no in range(n_lanes):
        t = DEVICE_STEP_TID + lane_no
        label = "engine steps on device" + (f" (lane {lane_no + 1})" if lane_no else "")
        meta.append({"ph": "M", "pid": pid, "tid": t, "name": "thread_name", "args": {"name": label}})
        meta.append({"ph": "M", "pid": pid, "tid": t, "name": "thread_sort_index", "args": {"sort_index": t}})
    return meta

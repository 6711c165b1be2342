"""Host time explained: what the host was doing while the device waited on it, per step.

Host work costs step time only where the device sits idle waiting for it (host preparation
that overlaps the previous work is free). So the measure is each step's exposed host time: the
host-wait part of its device's idle gaps (``idle``: from the moment the device drained to the
end of the runtime call that launched the work ending the gap), on the thread that launched that
work. Each exposed stretch is split at every boundary of that thread's recorded host items —
Python frames, host ops, runtime calls, ranges (NVTX, annotations) — and each piece goes to the
innermost item that holds it: that item's self time is the evidence, named by its frame
(``file.py(N): function``), op or call. A piece no item holds is untraced host time. The
evidence is matched against ``knowledge.host_causes`` (compile guards, input preparation,
sampler, scheduler, a synchronizing copy, graph launches...), which gives the cause and its fix.

Everything is vectorised: the pieces come from one searchsorted over each thread's sorted
boundaries, their items from ``intervals.innermost`` at each piece's midpoint.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core.intervals import distinct_rows, innermost
from ...core.launches import launch_rows
from ...core.profile import K_ANNOTATION, K_CPU_OP, K_RUNTIME, Profile
from .device import DeviceTimeline

#: evidence kinds, as ``knowledge.host_causes.KINDS`` names them
FRAME, OP, RUNTIME, RANGE, UNTRACED = range(5)
KIND_NAMES = ("frame", "op", "runtime", "range", "untraced")


class HostPieces(NamedTuple):
    """Exposed host time cut into pieces, each with the item that holds it."""

    step: np.ndarray  # step row of each piece
    start: np.ndarray
    end: np.ndarray
    kind: np.ndarray  # FRAME ... UNTRACED
    name: np.ndarray  # string id of the item's name (events' names and frames' share one table), -1
    rank: np.ndarray
    thread: np.ndarray  # the launching thread (track), -1 unknown

    def __len__(self) -> int:
        return len(self.start)


def _items(profile: Profile) -> tuple[np.ndarray, ...]:
    """Every recorded host item: (rank, track, start, end, kind, name id)."""
    ev, fr = profile.events, profile.frames
    host = (ev["device"] < 0) & (ev["start"] >= 0) & np.isin(ev["kind"], (K_CPU_OP, K_RUNTIME, K_ANNOTATION))
    rows = np.flatnonzero(host)
    kind = np.full(len(rows), RANGE, np.int8)
    kind[ev["kind"][rows] == K_CPU_OP] = OP
    kind[ev["kind"][rows] == K_RUNTIME] = RUNTIME
    ann = rows[ev["kind"][rows] == K_ANNOTATION]
    if len(ann):  # the Python frames the reader kept among the events (step and module frames)
        uniq = np.unique(ev["name"][ann])
        is_py = np.array([".py(" in profile.strings[int(u)] for u in uniq.tolist()], bool)
        py_names = uniq[is_py]
        kind[np.isin(ev["name"][rows], py_names) & (ev["kind"][rows] == K_ANNOTATION)] = FRAME
    f_ok = fr["start"] >= 0
    return (
        np.concatenate([ev["rank"][rows], fr["rank"][f_ok]]).astype(np.int64),
        np.concatenate([ev["track"][rows], fr["track"][f_ok]]).astype(np.int64),
        np.concatenate([ev["start"][rows], fr["start"][f_ok]]),
        np.concatenate([ev["start"][rows] + ev["dur"][rows], fr["start"][f_ok] + fr["dur"][f_ok]]),
        np.concatenate([kind, np.full(int(f_ok.sum()), FRAME, np.int8)]),
        np.concatenate([ev["name"][rows], fr["name"][f_ok]]).astype(np.int64),
    )


def exposed(profile: Profile, tl: DeviceTimeline) -> tuple[np.ndarray, ...]:
    """The exposed host stretches: (step row, start, end, rank, launching thread) of the host
    wait of each device gap that counts for a step."""
    g, g_step = tl.device_gaps, tl.gap_step
    keep = (g_step >= 0) & (g.host_wait > 0)
    row = g.row[keep]
    call = launch_rows(profile)[row]
    ev = profile.events
    thread = np.where(call >= 0, ev["track"][np.maximum(call, 0)], -1).astype(np.int64)
    start = g.start[keep]
    return g_step[keep].astype(np.int64), start, start + g.host_wait[keep], ev["rank"][row].astype(np.int64), thread


def host_pieces(profile: Profile, tl: DeviceTimeline | None) -> HostPieces | None:
    """The exposed host time of every step, in pieces, each with its evidence (None without a
    device timeline)."""
    if tl is None:
        return None
    step, a, b, rank, thread = exposed(profile, tl)
    i_rank, i_track, i_start, i_end, i_kind, i_name = _items(profile)
    # one thread id space for the items and the stretches
    keys, gid = distinct_rows(np.concatenate([i_rank, rank]), np.concatenate([i_track, thread]))
    i_gid, q_gid = gid[: len(i_rank)], gid[len(i_rank) :]
    # only the items that overlap a stretch of their thread can hold a piece of it
    near = _overlapping(i_gid, i_start, i_end, q_gid, a, b)
    i_gid, i_start, i_end, i_kind, i_name = i_gid[near], i_start[near], i_end[near], i_kind[near], i_name[near]
    seg_step, seg_a, seg_b, seg_gid, seg_src = _cut(q_gid, a, b, step, i_gid, i_start, i_end)
    mid = (seg_a + seg_b) // 2
    hit = innermost(i_gid, i_start, i_end, seg_gid, mid) if len(i_gid) else np.full(len(mid), -1, np.int64)
    got = hit >= 0
    return HostPieces(
        step=seg_step,
        start=seg_a,
        end=seg_b,
        kind=np.where(got, i_kind[np.maximum(hit, 0)], UNTRACED).astype(np.int8) if len(hit) else np.zeros(0, np.int8),
        name=np.where(got, i_name[np.maximum(hit, 0)], -1) if len(hit) else np.zeros(0, np.int64),
        rank=rank[seg_src],
        thread=thread[seg_src],
    )


def _overlapping(
    i_gid: np.ndarray, i_start: np.ndarray, i_end: np.ndarray, q_gid: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """Which items overlap one of the stretches [a, b) of their thread (a thread's stretches
    are disjoint: the device's gaps, in time order)."""
    if not len(a) or not len(i_gid):
        return np.zeros(len(i_gid), bool)
    big = int(max(a.max(), b.max(), i_end.max(), i_start.max())) + 2
    order = np.argsort(q_gid * big + a, kind="stable")
    qa, qb = (q_gid * big + a)[order], (q_gid * big + b)[order]
    k = np.searchsorted(qb, i_gid * big + i_start, side="right")  # the first stretch ending after its start
    kk = np.minimum(k, len(qb) - 1)
    return (k < len(qb)) & (qa[kk] < i_gid * big + i_end) & (qb[kk] // big == i_gid)


def _cut(
    q_gid: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    step: np.ndarray,
    i_gid: np.ndarray,
    i_start: np.ndarray,
    i_end: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Each stretch [a, b) cut at the item boundaries of its thread inside it: the pieces'
    (step, start, end, thread id, index of their stretch)."""
    if not len(a):
        z = np.zeros(0, np.int64)
        return z, z, z, z, z
    if not len(i_gid):  # nothing recorded on the host: each stretch is one piece
        return step, a, b, q_gid, np.arange(len(a))
    big = int(max(a.max(), b.max(), i_end.max() if len(i_end) else 0)) + 2
    bounds = np.sort(np.concatenate([i_gid * big + i_start, i_gid * big + i_end]))
    lo = np.searchsorted(bounds, q_gid * big + a, side="right")
    hi = np.searchsorted(bounds, q_gid * big + b, side="left")
    inner = np.maximum(hi - lo, 0)
    counts = inner + 1  # pieces per stretch
    src = np.repeat(np.arange(len(a)), counts)
    first = np.cumsum(counts) - counts  # each stretch's first piece
    k = np.arange(len(src)) - first[src]  # the piece's place in its stretch
    # piece k of stretch s: from boundary k-1 (or a) to boundary k (or b)
    inside = bounds[np.minimum(lo[src] + k, len(bounds) - 1)] - q_gid[src] * big
    before = bounds[np.minimum(np.maximum(lo[src] + k - 1, 0), len(bounds) - 1)] - q_gid[src] * big
    seg_a = np.where(k == 0, a[src], before)
    seg_b = np.where(k == inner[src], b[src], inside)
    keep = seg_b > seg_a
    return step[src][keep], seg_a[keep], seg_b[keep], q_gid[src][keep], src[keep]

"""Why the device sat idle: each gap before a piece of device work, split by cause.

For one piece of device work that starts at ``S`` after a gap (the previous work of its
stream, or of its whole device, ended at ``P < S``), launched by a runtime call that
returned at ``L``:

- **host wait** ``clip(L - P, 0, S - P)``: the device had drained and the host had not
  yet issued the launch (the call itself is host time: a graph launch that takes a
  millisecond keeps the device waiting for that millisecond);
- the rest of the gap, ``S - max(P, L)``, the work was issued but not running:
  **kernel wait** when it is at most ``KERNEL_WAIT_NS`` (the latency of a launch
  reaching the device, and the short gap between back-to-back kernels), **other**
  when longer (the work waited on something the host did not cause: an event or
  stream dependency, a synchronisation, another engine).

Work without a runtime call in the trace (launched before the window, or from a
source without correlation ids) has no host wait: its gap is kernel wait or other.

This is HTA's idle-time breakdown with the gap split at the launch instead of
classified whole: a gap that starts before a launch and ends long after it (a stream
blocked on an event while the host waits in a synchronous copy) is host wait only up
to the launch. ``waiting_on_host`` counts what the device spent waiting on the
launch path: host wait, plus the kernel wait of work that started within
``KERNEL_WAIT_NS`` of its launch (it could not have started earlier); it is the
measure the host-/device-bound verdicts use (``device_steps``).

Gaps are found per stream (HTA's view, ``per_stream``) and per device (idle = no
stream busy, ``per_device``), in integer ns, vectorised over all events at once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core.intervals import distinct_rows
from ...core.launches import device_mask
from ...core.ordering import lexsort
from ...core.profile import PHASES, Profile
from ...summary import Idle

#: the longest wait between a launch (or the previous kernel) and the kernel's start
#: still counted as launch latency; measured launch-to-start latency on an idle device
#: is a few µs on CUDA and 10-30 µs on ROCm (the shared MI300 traces)
KERNEL_WAIT_NS = 30_000


class Gaps(NamedTuple):
    """One row per idle gap, named by the event row of the work that ended it."""

    row: np.ndarray  # event row of the work after the gap
    group: np.ndarray  # row of ``keys``: (rank, device) or (rank, device, stream)
    start: np.ndarray  # the previous work's end
    end: np.ndarray  # this work's start
    host_wait: np.ndarray
    kernel_wait: np.ndarray
    other: np.ndarray
    waiting_on_host: np.ndarray
    keys: np.ndarray  # distinct group keys, one row per group
    event_group: np.ndarray  # per input row, its group

    def __len__(self) -> int:
        return len(self.row)


def device_rows(profile: Profile) -> np.ndarray:
    """Rows of timed device work (kernels, copies, fills, collectives)."""
    ev = profile.events
    return np.flatnonzero(device_mask(ev["kind"]) & (ev["start"] >= 0))


def find_gaps(
    profile: Profile, rows: np.ndarray, launch_t: np.ndarray, per_stream: bool, threshold: int = KERNEL_WAIT_NS
) -> Gaps:
    """The idle gaps between the work of ``rows`` (device events), per stream or per
    device; ``launch_t``: per event row, when its runtime call returned (-1 unknown)."""
    ev = profile.events
    cols = [ev["rank"][rows].astype(np.int64), ev["device"][rows].astype(np.int64)]
    if per_stream:
        cols.append(ev["track"][rows].astype(np.int64))
    keys, keys_gid = distinct_rows(*cols) if len(rows) else (np.zeros((0, len(cols)), np.int64), np.zeros(0, np.int64))
    start = ev["start"][rows]
    end = start + ev["dur"][rows]
    launch = launch_t[rows]
    order = lexsort((np.where(launch >= 0, launch, start), start, keys_gid))
    g, s, e, la, r = keys_gid[order], start[order], end[order], launch[order], rows[order]
    n = len(r)
    if n == 0:
        z = np.zeros(0, np.int64)
        return Gaps(z, z, z, z, z, z, z, z, keys, z)
    # the latest end of the group so far, by one running maximum over (group, end) packed in one
    # integer: the ends by their rank among the distinct ends, so that the packing never
    # overflows (times of inputs on far apart clocks made it wrap: negative idle times)
    ends, end_rank = np.unique(e, return_inverse=True)
    big = len(ends) + 1
    ke = g * big + end_rank.reshape(-1)
    prev = np.maximum.accumulate(np.concatenate(([np.iinfo(np.int64).min], ke[:-1])))
    same = prev >= g * big  # an earlier event of the same group exists
    p = np.where(same, ends[np.clip(prev - g * big, 0, big - 2)], s)
    gap = np.where(same, np.maximum(s - p, 0), 0)
    m = gap > 0
    g, s, p, la, r, gap = g[m], s[m], p[m], la[m], r[m], gap[m]
    known = la >= 0
    host = np.where(known, np.clip(la - p, 0, gap), 0)
    after = gap - host
    short = after <= threshold
    kernel = np.where(short, after, 0)
    other = np.where(short, 0, after)
    late = known & (s - la <= threshold)
    return Gaps(
        row=r,
        group=g,
        start=p,
        end=s,
        host_wait=host,
        kernel_wait=kernel,
        other=other,
        waiting_on_host=host + np.where(late, kernel, 0),
        keys=keys,
        event_group=keys_gid,
    )


def per_stream_rows(profile: Profile, gaps: Gaps, rows: np.ndarray) -> list[Idle]:
    """The per-stream breakdown, one row per (rank, device, stream, phase of the work after
    each gap), with the stream's busy time (sum of its work) in that phase."""
    ev = profile.events
    if not len(gaps.keys):
        return []
    phase_of = ev["phase"].astype(np.int64)
    n_ph = len(PHASES)
    keys = gaps.keys.tolist()
    ev_group = gaps.event_group
    shape = (len(keys), n_ph)

    def table(group: np.ndarray, phase: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        flat = np.bincount(group * n_ph + phase, weights=weights, minlength=shape[0] * n_ph)
        return flat.astype(np.int64).reshape(shape)

    busy = table(ev_group, phase_of[rows], ev["dur"][rows])
    g_phase = phase_of[gaps.row]
    sums = {name: table(gaps.group, g_phase, getattr(gaps, name)) for name in ("host_wait", "kernel_wait", "other")}
    count = table(gaps.group, g_phase)
    out = []
    for k, (rank, device, stream) in enumerate(keys):
        for p in range(n_ph):
            if busy[k, p] or count[k, p]:
                out.append(
                    Idle(
                        rank=int(rank),
                        device=int(device),
                        stream=int(stream),
                        phase=PHASES[p],
                        busy_ns=int(busy[k, p]),
                        gaps=int(count[k, p]),
                        host_wait_ns=int(sums["host_wait"][k, p]),
                        kernel_wait_ns=int(sums["kernel_wait"][k, p]),
                        other_ns=int(sums["other"][k, p]),
                    )
                )
    return out

"""Which runtime call launched each piece of device work (stateless, columnar).

A device event (kernel, copy, fill, collective) and the runtime call that enqueued it
share a correlation id on their rank (``cudaLaunchKernel``, ``hipMemcpyAsync``, a
graph launch for every kernel of a replay). Attribution (step, phase, launching op),
the device-side step timeline, the idle breakdown and the Perfetto flows all start
from this link.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar, cast

import numpy as np

from .intervals import group_ids
from .profile import DEVICE_KINDS, K_RUNTIME, KINDS, Profile

_DEVICE_KIND = np.zeros(len(KINDS), bool)
_DEVICE_KIND[list(DEVICE_KINDS)] = True


def device_mask(kind: np.ndarray) -> np.ndarray:
    """Which events occupy a device stream (kernels, copies, fills, collectives): a table
    lookup, several times cheaper than ``np.isin`` over millions of events."""
    mask: np.ndarray = _DEVICE_KIND[kind]
    return mask


_LOCK = threading.RLock()  # the attribution and the export's work ahead of it may ask at once
T = TypeVar("T")


def cached(profile: Profile, key: str, columns: tuple[str, ...], make: Callable[[Profile], T]) -> T:
    """``make(profile)``, kept on the profile for as long as the event columns it was
    computed from are the same arrays (attribution, the summary and the export all ask)."""
    cols = tuple(profile.events[c] for c in columns)
    with _LOCK:
        hit = profile.__dict__.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], cols)):
            return cast(T, hit[1])
        out = make(profile)
        profile.__dict__[key] = (cols, out)
        return out


def launch_rows(profile: Profile) -> np.ndarray:
    """Per event row, the row of the runtime call that launched it (same rank and
    correlation id), -1 for host events and device work without one in the trace."""
    return cached(profile, "_launch_rows", ("rank", "corr", "start", "kind"), _launch_rows)


def thread_ids(profile: Profile) -> np.ndarray:
    """Per event row, a dense id of the host thread or device stream it is on, ranks kept
    apart: equal (rank, track), equal ids. The one grouping every sweep by thread uses."""
    return cached(
        profile,
        "_thread_ids",
        ("rank", "track"),
        lambda p: group_ids(p.events["rank"].astype(np.int64), p.events["track"]),
    )


def _launch_rows(profile: Profile) -> np.ndarray:
    ev = profile.events
    rank, corr, start = ev["rank"].astype(np.int64), ev["corr"], ev["start"]
    out = np.full(len(ev), -1, np.int64)
    timed = start >= 0
    dev_idx = np.flatnonzero(device_mask(ev["kind"]) & (corr >= 0) & timed)
    rt_idx = np.flatnonzero((ev["kind"] == K_RUNTIME) & (corr >= 0) & timed)
    if not len(dev_idx) or not len(rt_idx):
        return out
    big = int(max(corr[rt_idx].max(), corr[dev_idx].max())) + 1
    rkey = rank[rt_idx] * big + corr[rt_idx]
    order = np.argsort(rkey, kind="stable")
    rkey_s = rkey[order]
    dkey = rank[dev_idx] * big + corr[dev_idx]
    pos = np.searchsorted(rkey_s, dkey)
    ok = pos < len(rkey_s)
    ok[ok] &= rkey_s[pos[ok]] == dkey[ok]
    out[dev_idx[ok]] = rt_idx[order[pos[ok]]]
    return out


def launch_start(profile: Profile, rows: np.ndarray | None = None) -> np.ndarray:
    """Per event row, the start of the runtime call that launched it, -1 without one."""
    rows = launch_rows(profile) if rows is None else rows
    return np.where(rows >= 0, profile.events["start"][np.maximum(rows, 0)], -1)


def launch_end(profile: Profile, rows: np.ndarray | None = None) -> np.ndarray:
    """Per event row, the end of the runtime call that launched it (when the host was done
    issuing it: a long graph launch is host time until then), -1 without one."""
    rows = launch_rows(profile) if rows is None else rows
    ev = profile.events
    r = np.maximum(rows, 0)
    return np.where(rows >= 0, ev["start"][r] + ev["dur"][r], -1)

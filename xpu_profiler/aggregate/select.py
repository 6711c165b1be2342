"""Keeping only part of a large profile: a range of engine steps, at most N events.

Applied to the read Profile before attribution, so everything after it (steps,
phases, aggregates, outputs) sees only what was kept; the reader never holds a
trace's raw text, so a trace whose text does not fit in memory can be analysed
in parts. What was skipped is reported: one warning line and ``Summary.selection``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import XpuProfilerError
from ..core.launches import launch_rows, launch_start
from ..core.profile import Profile
from .steps.find import find_steps


@dataclass
class Selection:
    steps: tuple[int | None, int | None] | None = None  # step ids A..B-1, either end open
    max_events: int | None = None

    def __bool__(self) -> bool:
        return self.steps is not None or self.max_events is not None


def parse_steps(text: str) -> tuple[int | None, int | None]:
    """``A:B`` (steps A to B-1), ``A:`` or ``:B``; step ids as the report numbers them."""
    a, sep, b = text.partition(":")
    try:
        lo = int(a) if a.strip() else None
        hi = int(b) if b.strip() else None
    except ValueError:
        lo = hi = -1
    if (
        not sep
        or (lo is not None and lo < 0)
        or (hi is not None and hi < 0)
        or (lo is not None and hi is not None and hi <= lo)
    ):
        raise XpuProfilerError(f"--steps {text!r}: expected A:B with 0 <= A < B (A: or :B leave one end open)")
    return lo, hi


def _keep_events(profile: Profile, keep: np.ndarray) -> None:
    """Drop the events not kept (no event column holds another event's row)."""
    profile.events = profile.events.take(np.flatnonzero(keep))


def _step_window(profile: Profile, lo: int | None, hi: int | None) -> np.ndarray:
    """Events of steps lo..hi-1: host events that start inside the steps' span (per rank),
    device work launched from a kept event (or, without a launch, starting inside)."""
    steps = profile.steps if len(profile.steps) else find_steps(profile)
    sid = steps["step_id"]
    chosen = np.ones(len(steps), bool)
    if lo is not None:
        chosen &= sid >= lo
    if hi is not None:
        chosen &= sid < hi
    if not chosen.any():
        have = f"steps {int(sid.min())} to {int(sid.max())}" if len(sid) else "no engine steps"
        raise XpuProfilerError(
            f"--steps {'' if lo is None else lo}:{'' if hi is None else hi}: "
            f"no engine step in that range (the trace has {have})"
        )
    ev = profile.events
    inside = np.zeros(len(ev), bool)
    for r in np.unique(steps["rank"][chosen]).tolist():
        m = chosen & (steps["rank"] == r)
        t0 = int(steps["start"][m].min())
        t1 = int((steps["start"][m] + steps["dur"][m]).max())
        inside |= (ev["rank"] == r) & (ev["start"] >= t0) & (ev["start"] < t1)
    rows = launch_rows(profile)
    launched = rows >= 0
    keep = np.where(launched, inside[np.maximum(rows, 0)], inside)
    profile.steps = steps.take(np.flatnonzero(chosen))  # keeps the step ids as read
    return keep


def _whole_steps(profile: Profile, keep: np.ndarray) -> int:
    """Keep only the steps the cut to ``keep`` leaves whole: none of their events left out (an
    event is the step's whose range holds its launch, else its start, as the attribution
    decides). A step cut in two would count its whole time for part of its work. Returns how
    many steps were cut (those wholly after the cut are not counted)."""
    steps = profile.steps if len(profile.steps) else find_steps(profile)
    if not len(steps):
        return 0
    ev = profile.events
    la = launch_start(profile)
    left = np.flatnonzero(~keep & (ev["start"] >= 0))
    t = np.where(la[left] >= 0, la[left], ev["start"][left])
    rank = ev["rank"][left]
    last = int(ev["start"][keep].max()) if keep.any() else -1
    whole = steps["start"] <= last
    started = whole.copy()
    for r in np.unique(steps["rank"]).tolist():
        m = np.flatnonzero(steps["rank"] == r)
        tr = np.sort(t[rank == r])
        lo = np.searchsorted(tr, steps["start"][m], side="left")
        hi = np.searchsorted(tr, steps["start"][m] + steps["dur"][m], side="right")
        whole[m] &= hi == lo
    profile.steps = steps.take(np.flatnonzero(whole))  # (keeps the step ids as read)
    return int((started & ~whole).sum())


def apply(profile: Profile, sel: Selection) -> dict | None:
    """Keep the selected part of ``profile`` (in place); what was kept and skipped."""
    if not sel:
        return None
    ev = profile.events
    total = len(ev)
    keep = np.ones(total, bool)
    if sel.steps is not None:
        keep &= _step_window(profile, *sel.steps)
    split = 0
    if sel.max_events is not None and int(keep.sum()) > sel.max_events:
        rows = np.flatnonzero(keep)
        first = rows[np.argsort(ev["start"][rows], kind="stable")[: sel.max_events]]
        keep = np.zeros(total, bool)
        keep[first] = True
        split = _whole_steps(profile, keep)
    kept_t = ev["start"][keep]
    t0, t1 = (int(kept_t.min()), int(kept_t.max())) if len(kept_t) else (0, 0)
    c = profile.counters
    if len(c):
        profile.counters = c.take(np.flatnonzero((c["t"] >= t0) & (c["t"] <= t1)))
    fr = profile.frames
    if len(fr):  # the Python frames that overlap what was kept
        profile.frames = fr.take(np.flatnonzero((fr["start"] <= t1) & (fr["start"] + fr["dur"] >= t0)))
    _keep_events(profile, keep)
    kept = int(keep.sum())
    skipped = round((total - kept) / total, 6) if total else 0.0
    info = {
        "steps": None
        if sel.steps is None
        else f"{'' if sel.steps[0] is None else sel.steps[0]}:{'' if sel.steps[1] is None else sel.steps[1]}",
        "max_events": sel.max_events,
        "events_total": total,
        "events_kept": kept,
        "skipped_share": skipped,
    }
    what = " and ".join(
        x
        for x in (
            f"steps {info['steps']}" if sel.steps is not None else "",
            f"at most {sel.max_events:,} events" if sel.max_events is not None else "",
        )
        if x
    )
    cut = (
        f"; {split} step{'s' if split > 1 else ''} the cut splits left out of the steps (their events kept "
        "are in no step)"
        if split
        else ""
    )
    profile.derived.warn(f"kept {kept:,} of {total:,} events ({what}): {100 * skipped:.1f} % skipped{cut}")
    profile.derived.selection = info
    return info

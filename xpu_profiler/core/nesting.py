"""Events of one thread that overlap without nesting, and the nesting used in their place.

On one host thread, ranges nest: a profiler opens and closes them on a stack, so an op
that starts inside another ends inside it too. A trace where one does not — a stretched
event that ends after its parent, from clock jitter or a hand edit — breaks every sweep
that asks "which range holds this point": the op after a stretched one starts inside
it, so it looks nested, and its time and launches go to its predecessor.

``nested_ends`` gives every interval an end under which its group nests, deciding each
crossing pair (B starts inside A and ends after it) by where most of B lies:

- mostly inside A: B is A's child that ran past it, and ends where A ends;
- mostly after A: A ran into its successor, and ends where B starts (then B is checked
  against A's own parent the same way).

Only the structure uses these ends (depth, which op or module holds a launch); each
event keeps its own duration, so the time it reports stays its own and no time moves
to a neighbour. ``crossing_warning`` counts the repairs larger than the profilers' own
jitter (Kineto's CUDA traces write thousands of overlaps under 0.3 us). A group that
nests already costs one vectorised check; only a group with crossings is walked
interval by interval.

What no rule can see: an event stretched over the whole of a later, shorter one holds
it as a child would; it is taken as its parent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import fmt
from .intervals import is_nested
from .launches import cached, device_mask, thread_ids
from .ordering import lexsort
from .profile import Profile

#: how an interval's end was changed
KEPT, CLIPPED, CUT = 0, 1, 2
#: overlaps up to this are the profilers' own timestamp jitter (Kineto's CUDA traces hold
#: thousands, all under 0.3 us): repaired like the others, but not warned about
JITTER_NS = 1_000


@dataclass(frozen=True)
class Nesting:
    """``end``: per interval, the end under which its group nests; ``how``: KEPT,
    CLIPPED (a child cut at its parent's end) or CUT (an interval cut where its
    successor starts); ``example``: (interval, the one it crossed, their overlap in ns:
    what had to be cut) of the largest crossing, or None when every group nests."""

    end: np.ndarray
    how: np.ndarray
    example: tuple[int, int, int] | None = None

    @property
    def changed(self) -> int:
        return int(np.count_nonzero(self.how))


def nested_ends(gid: np.ndarray, start: np.ndarray, end: np.ndarray) -> Nesting:
    """Ends under which the intervals of each group nest (see the module's text)."""
    n = len(start)
    end = np.maximum(end, start)
    how = np.zeros(n, np.int8)
    if n < 2 or is_nested(gid, start, end):
        return Nesting(end, how)
    out = end.copy()
    order = lexsort((-end, start, gid))
    g = gid[order]
    bounds = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1], [True])))
    worst = (-1, -1, -1)  # (overrun, interval, the one it crossed)
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        rows = order[a:b]
        if b - a < 2 or is_nested(np.zeros(b - a, np.int64), start[rows], end[rows]):
            continue
        worst = max(worst, _walk(rows, start, out, how))
    return Nesting(out, how, (worst[1], worst[2], worst[0]) if worst[1] >= 0 else None)


def _walk(rows: np.ndarray, start: np.ndarray, out: np.ndarray, how: np.ndarray) -> tuple[int, int, int]:
    """One group's intervals in start order (longer first at equal starts): a stack of the
    open ones, each crossing decided as the module's text says; ``out`` and ``how``
    filled in place. Returns the largest crossing as (overrun, interval, crossed)."""
    worst = (-1, -1, -1)
    stack: list[int] = []
    ends = out  # read and written through the rows' indices
    for i, s in zip(rows.tolist(), start[rows].tolist()):
        e = int(ends[i])
        while stack and ends[stack[-1]] <= s:
            stack.pop()
        while stack and e > ends[stack[-1]]:
            top = stack[-1]
            top_end = int(ends[top])
            worst = max(worst, (min(e - top_end, top_end - s), i, top))
            if top_end - s >= e - top_end:  # mostly inside: a child that ran past its parent
                e = top_end
                how[i] = CLIPPED
                break
            ends[top] = s  # mostly after: the open one ran into this one
            how[top] = CUT
            stack.pop()
        ends[i] = e
        stack.append(i)
    return worst


def host_nesting(profile: Profile) -> Nesting:
    """``nested_ends`` over the timed events of each host thread (device streams are
    left as they are: their work may overlap), kept on the profile while its columns stay."""
    return cached(profile, "_host_nesting", ("rank", "track", "start", "dur", "kind"), _host_nesting)


def _host_nesting(profile: Profile) -> Nesting:
    ev = profile.events
    start, end = ev["start"], ev["start"] + ev["dur"]
    rows = np.flatnonzero((start >= 0) & ~device_mask(ev["kind"]))
    sub = nested_ends(thread_ids(profile)[rows], start[rows], end[rows])
    full_end = end.copy()
    full_end[rows] = sub.end
    how = np.zeros(len(ev), np.int8)
    how[rows] = sub.how
    example = (int(rows[sub.example[0]]), int(rows[sub.example[1]]), sub.example[2]) if sub.example else None
    return Nesting(full_end, how, example)


def crossing_warning(profile: Profile, nesting: Nesting) -> str | None:
    """One line counting the events whose end the nesting moved by more than the
    profilers' own jitter, with the largest case; None when there are none."""
    if nesting.example is None or nesting.example[2] <= JITTER_NS:
        return None
    ev = profile.events
    moved = (ev["start"] + ev["dur"] - nesting.end) > JITTER_NS
    clipped = int(np.count_nonzero(moved & (nesting.how == CLIPPED)))
    cut = int(np.count_nonzero(moved & (nesting.how == CUT)))
    i, j, over = nesting.example
    name = profile.strings.lookup(ev["name"][[i, j]])
    return (
        f"{clipped + cut:,} host event(s) overlap another on their thread without nesting "
        f"(clock jitter or an edited trace), e.g. {fmt.clip(name[0], 80)!r} starts inside "
        f"{fmt.clip(name[1], 80)!r} and overlaps its end by {over / 1e3:,.3f} us (rank {int(ev['rank'][i])}, "
        f"thread {int(ev['track'][i])}); for which op holds which, {clipped:,} were taken as ending with "
        f"their parent and {cut:,} as ending where the next one starts; each keeps its own duration"
    )

"""Begin/End events of Chrome traces joined into slices: the one pairing every Chrome reader uses.

The Chrome Trace Event format (docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU,
"Duration Events") pairs an ``E`` with the innermost open ``B`` of its thread. Real traces are not
always properly nested: on IBM AIU hardware queues, slices of one track overlap partially and
each ``B`` is written right before its ``E`` (IBM/aiu-trace-analyzer's test data). So an ``E``
closes the most recent open ``B`` *of the same name* on its (pid, tid), in the order the file
lists them, and the most recent of any name when it carries none. Async slices (``b``/``e``)
pair the same way within their (pid, cat, id); a file not in time order is paired in time order
(``pair``). Python here runs over the B/E events only
(rare in the traces this project reads: none in Kineto's own).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, NamedTuple


class Mark(NamedTuple):
    """One Begin or End event: where it is, its name and time, whether it begins, and what the
    caller keeps of it (for a Begin: what becomes the slice)."""

    key: Hashable  # (pid, tid) for B/E; (pid, cat, id) for async b/e
    name: str
    ts: float
    begin: bool
    payload: Any = None


class Paired(NamedTuple):
    payload: Any  # the Begin's
    start: float
    dur: float


def pair(marks: Iterable[Mark]) -> tuple[list[Paired], int]:
    """(slices, unmatched): the Begin/End marks joined into slices; an End without an open
    Begin, or a Begin never closed, counts as unmatched. An End earlier than its Begin still
    pairs (a negative duration: the caller skips it and says why).

    In file order first. A file whose events are not in time order (the format does not ask
    for it, and Perfetto sorts them) shows it by Ends before their Begins or unmatched marks:
    then the marks are paired again in time order (file order among equal times), and that
    pairing is kept where it leaves fewer of both."""
    marks = list(marks)
    out, unmatched = _pair(marks)
    problems = unmatched + sum(p.dur < 0 for p in out)
    if problems:
        ordered = sorted(marks, key=lambda m: m.ts)  # (stable)
        if any(a is not b for a, b in zip(ordered, marks)):
            again, unmatched_again = _pair(ordered)
            if unmatched_again + sum(p.dur < 0 for p in again) < problems:
                return again, unmatched_again
    return out, unmatched


def _pair(marks: list[Mark]) -> tuple[list[Paired], int]:
    """The pairing in the order of ``marks``."""
    open_: dict[Hashable, list[Mark]] = {}
    out: list[Paired] = []
    unmatched = 0
    for m in marks:
        if m.begin:
            open_.setdefault(m.key, []).append(m)
            continue
        stack = open_.get(m.key) or []
        j = len(stack) - 1
        if m.name:
            while j >= 0 and stack[j].name != m.name:
                j -= 1
        if j < 0:
            unmatched += 1
            continue
        b = stack.pop(j)
        out.append(Paired(b.payload, b.ts, m.ts - b.ts))
    unmatched += sum(len(s) for s in open_.values())
    return out, unmatched

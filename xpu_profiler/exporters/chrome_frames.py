"""The trace's Python stack frames (``Profile.frames``): one track per host thread that has
them, beside that thread's own track, with lanes where frames do not nest (a frame whose
times were rounded past its caller's end).

They are what shows a host gap's cause (a worker spinning in a shared-memory broadcast's
poll loop, a tokenizer, the Python GIL); the analysis reads them for host time by cause
(``aggregate.steps.host``).
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from ..core.intervals import distinct_rows, lanes
from ..core.profile import Profile
from .chrome_rows import S_FRAME, Rows

#: the frames' tracks, apart from host threads (100, 101, ...) and device streams (10,000, ...)
FRAME_TID0 = 1_000_000


def frame_tracks(
    profile: Profile, pid_of: dict[int, int], label_of: dict[tuple[int, int], tuple[str, int]], max_depth: int
) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray, np.ndarray]:
    """(metadata, rows of ``profile.frames`` exported, their tids, their pids).

    ``label_of``: (rank, thread) → (the thread's track name, its sort index), for threads
    that have a track of events; a frames track sorts right after its thread's."""
    fr = profile.frames
    rows = np.flatnonzero(np.isin(fr["rank"], list(pid_of))) if len(fr) else np.zeros(0, np.int64)
    tid = np.zeros(len(rows), np.int64)
    meta: list[dict[str, Any]] = []
    if not len(rows):
        return meta, rows, tid, tid.astype(np.int32)
    uniq, inv = distinct_rows(fr["rank"][rows], fr["track"][rows])
    by_track = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[by_track], np.arange(len(uniq) + 1))
    next_tid: dict[int, int] = {}
    for u, (r, tr) in enumerate(uniq.tolist()):
        m = by_track[bounds[u] : bounds[u + 1]]
        start = fr["start"][rows[m]]
        lane_of = lanes(start, start + fr["dur"][rows[m]], max_depth)
        n_lanes = int(lane_of.max()) + 1 if len(lane_of) else 1
        base = FRAME_TID0 + next_tid.get(r, 0)
        next_tid[r] = next_tid.get(r, 0) + n_lanes
        tid[m] = base + lane_of
        label, sort_index = label_of.get((r, tr), (f"thread {tr}", FRAME_TID0))
        for lane in range(n_lanes):
            t = base + lane
            name = f"{label} python frames" + (f" (lane {lane + 1})" if lane else "")
            meta.append({"ph": "M", "pid": pid_of[r], "tid": t, "name": "thread_name", "args": {"name": name}})
            meta.append(
                {"ph": "M", "pid": pid_of[r], "tid": t, "name": "thread_sort_index", "args": {"sort_index": sort_index}}
            )
    pids = np.array([pid_of[r] for r in sorted(pid_of)], np.int32)
    pid = pids[np.searchsorted(np.array(sorted(pid_of)), fr["rank"][rows])]
    return meta, rows, tid, pid


def add_frames(
    profile: Profile,
    pid_of: dict[int, int],
    label_of: dict[tuple[int, int], tuple[str, int]],
    rows: Rows,
    max_depth: int,
    meta: list[dict[str, Any]],
    blocks: tuple[list, list, list],
) -> None:
    """The frames set on ``rows``, their tracks' metadata added to ``meta`` and their block of
    rows (kinds, ts, dur) to ``blocks``; nothing when there are none."""
    f_meta, f_rows, tid, pid = frame_tracks(profile, pid_of, label_of, max_depth)
    if not len(f_rows):
        return
    fr, strings, enc = profile.frames, profile.strings, msgspec.json.Encoder().encode
    name = fr["name"][f_rows]
    start, dur = fr["start"][f_rows], fr["dur"][f_rows]
    rows.set_frames({int(i): enc(strings[int(i)] or "[no name]") for i in np.unique(name)}, name, pid, tid, start, dur)
    meta += f_meta
    for block, part in zip(blocks, (np.full(len(f_rows), S_FRAME, np.int8), start, dur)):
        block.append(part)

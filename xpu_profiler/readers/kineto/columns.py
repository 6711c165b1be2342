"""Columns out of decoded Kineto events: C-level attrgetter maps, no per-event Python loop.

``columns(path, events)`` turns one chunk of msgspec-decoded events into a ``Cols`` (``cols``)
of numpy arrays in chunk-local string ids: what the event kinds are, times in integer ns, ids,
the ``[memory]`` instants as counter samples, and the track names. This is the pure-Python
reader, the reference of the native one (``native``).
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter, eq
from pathlib import Path

import numpy as np

from ...core.errors import TraceError
from ...core.profile import K_MEMCPY, K_MEMSET, K_RUNTIME, StringTable
from .args import _bytes, _copy_directions, _floats, _flops, _ids, _ints, comm_columns
from .cols import (
    MAX_DUR_US,
    MAX_US,
    Cols,
    core_columns,
    engine_counts,
    frame_columns,
    frame_kind,
    kinds_of,
    memory_columns,
    other_instants,
    unused_phases,
)
from .schema import PH_CODE, PH_IDS, Event


def _local_ids(values: list) -> tuple[list, np.ndarray]:
    table = StringTable()
    ids = table.intern_many(values)
    return table.strings, ids


def columns(path: Path, events: list[Event]) -> Cols:
    """Pull the model's columns out of decoded events with C-level maps, no per-event loop."""
    ph = _phases(path, events)
    marks = _marks(events, ph)
    unused = unused_phases(ph, lambda i: getattr(events[i], "name", ""))
    slices = _slices(path, events, ph)
    memory = _memory(path, events, ph, unused)
    thread_names, process_names = _track_names(events, ph)
    return Cols(
        **slices,
        **memory,
        thread_names=thread_names,
        process_names=process_names,
        n_events=len(events),
        marks=marks,
        unused=unused,
    )


def _phases(path: Path, events: list[Event]) -> np.ndarray:
    """Every event's phase code (``schema.PH_CODE``; 9: a phase no reader knows)."""
    n_all = len(events)
    if n_all and type(events[0]) is not Event:  # the tagged schema: the type is the phase
        return np.fromiter(map(PH_CODE.get, map(type, events), repeat(9)), dtype=np.int8, count=n_all)
    phs = list(map(attrgetter("ph"), events))
    if None in phs:
        raise TraceError(path, f"event #{phs.index(None)} has no 'ph' field")
    return np.fromiter(map(PH_IDS.get, phs, repeat(9)), dtype=np.int8, count=n_all)


def _slices(path: Path, events: list[Event], ph: np.ndarray) -> dict:
    """The columns (``Cols`` fields) of the complete (X) events the model uses, and of the
    Python frames kept apart from them; how many X events are no events of the model."""
    x_idx = np.flatnonzero(ph == 0)
    xs = [events[i] for i in x_idx.tolist()] if len(x_idx) != len(events) else events
    # category → kind; drop what the model does not use before pulling more columns
    cats, cat_ids = _local_ids(list(map(attrgetter("cat"), xs)))
    kind, keep = kinds_of(cats, cat_ids)
    frame_cols, py_engines = _python_frames(path, xs, x_idx, cats, cat_ids, keep)
    dropped = int(np.count_nonzero(~keep))
    if dropped:
        keep_idx = np.flatnonzero(keep)
        xs = [xs[i] for i in keep_idx.tolist()]
        x_idx, kind, cat_ids = x_idx[keep_idx], kind[keep_idx], cat_ids[keep_idx]
    names = list(map(attrgetter("name"), xs))
    ts_us = _floats(path, xs, "ts", x_idx, names)
    dur_us = _floats(path, xs, "dur", x_idx, names)
    pid, tid = _ints(xs, "pid"), _ints(xs, "tid")
    argss = list(map(attrgetter("args"), xs))
    del xs
    _check_times(path, events, x_idx, names, ts_us, dur_us)
    uniq_names, name_ids = _local_ids(names)
    del names
    return {
        **core_columns(uniq_names, name_ids, cats, cat_ids, kind, ts_us, dur_us, pid, tid),
        **_arg_columns(argss, kind, uniq_names, name_ids),
        **frame_cols,
        "dropped": dropped,
        "py_engines": py_engines,
    }


def _python_frames(
    path: Path, xs: list[Event], x_idx: np.ndarray, cats: list, cat_ids: np.ndarray, keep: np.ndarray
) -> tuple[dict, dict[str, int]]:
    """The Python frames' columns (``Cols.frame_*``) and their count per engine source tree;
    the frames that are no events of the model are taken out of ``keep``."""
    if "python_function" not in cats:
        return _frames(path, [], x_idx[:0]), {}
    py_rows = np.flatnonzero(cat_ids == cats.index("python_function"))
    py_names = [xs[i].name for i in py_rows.tolist()]
    kinds = {n: frame_kind(n) for n in set(py_names)}
    kind_of = np.fromiter(map(kinds.__getitem__, py_names), dtype=np.int8, count=len(py_rows))
    keep[py_rows[kind_of == 0]] = False  # module ranges (2) and step calls (1) are events
    py_engines = engine_counts(py_names)
    frame_rows = py_rows[kind_of < 2]  # every frame but the module ranges is on the timeline
    frames = [xs[i] for i in frame_rows.tolist()]
    return _frames(path, frames, x_idx[frame_rows]), py_engines


def _check_times(
    path: Path, events: list[Event], x_idx: np.ndarray, names: list, ts_us: np.ndarray, dur_us: np.ndarray
) -> None:
    """Raise for the first event whose time is missing, not finite, out of range or negative."""
    finite = np.isfinite(ts_us) & np.isfinite(dur_us)
    if not finite.all():  # fromiter reads a missing value (None) as NaN
        bad = int(np.flatnonzero(~finite)[0])
        e = events[int(x_idx[bad])]
        what = (
            "has no 'ts' field" if e.ts is None else "has no 'dur' field" if e.dur is None else "has a non-finite time"
        )
        raise TraceError(path, f"complete event #{int(x_idx[bad])} ({names[bad][:60]!r}) {what}")
    out_of_range = (np.abs(ts_us) > MAX_US) | (dur_us > MAX_DUR_US)
    if out_of_range.any():
        bad = int(np.flatnonzero(out_of_range)[0])
        raise TraceError(
            path,
            f"event #{int(x_idx[bad])} ({names[bad][:60]!r}) has a time out of range "
            f"(ts {ts_us[bad]:g} us, dur {dur_us[bad]:g} us)",
        )
    if (dur_us < 0).any():
        bad = int(np.flatnonzero(dur_us < 0)[0])
        raise TraceError(
            path, f"event #{int(x_idx[bad])} ({names[bad][:60]!r}) has a negative duration ({dur_us[bad]} us)"
        )


def _arg_columns(argss: list, kind: np.ndarray, uniq_names: list, name_ids: np.ndarray) -> dict:
    """The columns read from the events' args: ids, the kernels launches name, collectives'
    metadata, FLOPs (for copies and fills: their bytes)."""
    ext = _ids(argss, "external_id")
    corr = _ids(argss, "correlation")
    rt_rows = np.flatnonzero(kind == K_RUNTIME)
    launched = [argss[i].kernel for i in rt_rows.tolist()]
    has = np.fromiter((k is not None for k in launched), dtype=bool, count=len(launched))
    launch_names, launch_ids = _local_ids([k for k in launched if k is not None])
    comm = {f"comm_{k}": v for k, v in comm_columns(argss).items()}
    flops = _flops(argss, uniq_names, name_ids)
    copies = np.flatnonzero((kind == K_MEMCPY) | (kind == K_MEMSET))
    if len(copies):  # copies and fills: the bytes they move, in the same column
        flops[copies] = _bytes([argss[i] for i in copies.tolist()])
    return {
        "ext": ext,
        "corr": corr,
        "flops": flops,
        "copy": _copy_directions(argss, rt_rows),
        "launch_names": launch_names,
        "launch_rows": rt_rows[has],
        "launch_ids": launch_ids,
        **comm,
    }


def _memory(path: Path, events: list[Event], ph: np.ndarray, unused: dict) -> dict:
    """The ``[memory]`` instants as counter samples (``Cols.mem_*``), and how many had no usable
    time (``odd``, ``skipped``); the other instants are counted in ``unused``."""
    inst_idx = np.flatnonzero(ph == 1)
    inst = [events[i] for i in inst_idx.tolist()]
    is_mem = np.fromiter(map(eq, map(attrgetter("name"), inst), repeat("[memory]")), dtype=bool, count=len(inst))
    if is_mem.all():  # the usual case: every instant is a [memory] one
        mem_idx, mem = inst_idx.tolist(), inst
    else:
        mem_idx = inst_idx[is_mem].tolist()
        mem = [events[i] for i in mem_idx]
        other_instants(unused, inst_idx[~is_mem].tolist(), lambda i: events[i].name)
    del inst
    m_args = list(map(attrgetter("args"), mem))
    return memory_columns(
        path,
        mem_idx,
        np.fromiter(map(attrgetter("ts"), mem), dtype=np.float64, count=len(mem)),
        np.fromiter(map(attrgetter("total_allocated"), m_args), dtype=np.float64, count=len(mem)),
        np.fromiter(map(attrgetter("total_reserved"), m_args), dtype=np.float64, count=len(mem)),
        np.fromiter(map(attrgetter("device_type"), m_args), dtype=np.int64, count=len(mem)),
    )


def _track_names(events: list[Event], ph: np.ndarray) -> tuple[dict[str, str], dict[str, str]]:
    """The names the metadata events give: threads ("pid:tid" → name) and processes (pid → name)."""
    thread_names: dict[str, str] = {}
    process_names: dict[str, str] = {}
    for i in np.flatnonzero(ph == 2).tolist():
        e = events[i]
        if e.args.name is None:
            continue
        if e.name == "thread_name":
            thread_names[f"{e.pid}:{e.tid}"] = e.args.name
        elif e.name == "process_name":
            process_names[str(e.pid)] = e.args.name
    return thread_names, process_names


def _frames(path: Path, frames: list[Event], x_idx: np.ndarray) -> dict:
    """The Python frames' columns (``Cols.frame_*``) of decoded frame events."""
    names = list(map(attrgetter("name"), frames))
    return frame_columns(
        _floats(path, frames, "ts", x_idx, names),
        _floats(path, frames, "dur", x_idx, names),
        _ints(frames, "pid"),
        _ints(frames, "tid"),
        lambda rows: _local_ids(names if rows is None else [names[i] for i in rows.tolist()]),
    )


def _marks(events: list, ph: np.ndarray) -> list:
    """The B/E and async b/e events of a chunk, as ``Cols.marks`` rows (Python over these only)."""
    out = []
    for i in np.flatnonzero((ph >= 3) & (ph <= 6)).tolist():
        e = events[i]
        code = int(ph[i])
        try:
            ts = float(e.ts) if e.ts is not None else float("nan")
        except (TypeError, ValueError):
            ts = float("nan")
        key = (e.pid, e.tid) if code <= 4 else (e.pid, e.cat, getattr(e, "id", None))
        out.append((i, code, key, e.name if isinstance(e.name, str) else "", ts, e if code in (3, 5) else None))
    return out


def where(e: Exception) -> str:
    """msgspec says `... - at `$.traceEvents[12].dur``; keep it, it names the event."""
    return str(e).replace("$.", "")

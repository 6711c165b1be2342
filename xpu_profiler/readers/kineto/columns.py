"""Columns out of decoded Kineto events: C-level attrgetter maps, no per-event Python loop.

``columns(path, events)`` turns one chunk of decoded events into a ``Cols`` of numpy
arrays in chunk-local string ids: what the event kinds are, times in integer ns, ids,
the ``[memory]`` instants as counter samples, and the track names.
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter, eq
from pathlib import Path

import msgspec
import numpy as np

from ...core.errors import TraceError
from ...core.profile import K_ANNOTATION, K_CPU_OP, K_KERNEL, K_MEMCPY, K_MEMSET, K_RUNTIME, K_UNKNOWN, StringTable
from ...knowledge.step_grammar import STEP_FRAME, frame_engine
from .args import _bytes, _copy_directions, _floats, _flops, _ids, _ints, comm_columns
from .schema import PH_CODE, PH_IDS, PH_LETTERS, UNUSED_PHASES, Event

# category → event kind; anything else keeps its category name and kind "unknown".
CATEGORY_KINDS = {
    "kernel": K_KERNEL,
    "gpu_memcpy": K_MEMCPY,
    "gpu_memset": K_MEMSET,
    "Memcpy": K_MEMCPY,
    "Memset": K_MEMSET,
    "cpu_op": K_CPU_OP,
    "operator": K_CPU_OP,
    "Operator": K_CPU_OP,
    "cuda_runtime": K_RUNTIME,
    "cuda_driver": K_RUNTIME,
    "Runtime": K_RUNTIME,
    "runtime": K_RUNTIME,
    "driver": K_RUNTIME,
    "privateuse1_runtime": K_RUNTIME,
    "privateuse1_driver": K_RUNTIME,
    "mtia_runtime": K_RUNTIME,
    "xpu_runtime": K_RUNTIME,  # Kineto's "xpu" is Intel's XPUPTI, still a host runtime call
    "xpu_driver": K_RUNTIME,
    "user_annotation": K_ANNOTATION,
    "gpu_user_annotation": K_ANNOTATION,
    "python_function": K_ANNOTATION,
}
# X events of these categories carry nothing the analysis uses; they are counted, not kept.
SKIPPED_CATEGORIES = {"Trace", "overhead"}
# Of python_function frames only module ranges (fused-op attribution) and the engine's
# per-step calls (step evidence, ``step_grammar.STEP_FRAME``) are events; the other frames are
# kept apart, for the timeline (``Profile.frames``), and counted per engine whose source tree
# they are in (``py_engines``: which engine ran).
MODULE_PREFIX = "nn.Module: "

MAX_US = 4e15  # ~127 years: anything larger cannot be a trace time (and overflows int64 ns)
MAX_DUR_US = 1e12  # ~11.6 days: a longer event is absurd, and a few of them would overflow int64 sums
MEMORY_SERIES = ("host_allocated_bytes", "device_allocated_bytes", "device_reserved_bytes")
#: the instants Kineto writes around its own window (pytorch/kineto libkineto/src/output_json.cpp)
PROFILER_INSTANTS = frozenset(("Iteration Start: PyTorch Profiler", "Record Window End"))
#: unused events that only repeat what the analysis reads elsewhere: flows link a launch to its
#: kernel (the analysis joins them by args.correlation) and ops to their backward (External id);
#: the profiler's own instants mark its window. Counted in the run record, never warned.
REDUNDANT_UNUSED = ("flow", "profiler instant")


class Cols(msgspec.Struct):
    """Columns of one chunk of events, in chunk-local string ids (picklable, compact)."""

    names: list
    name_ids: np.ndarray
    cats: list
    cat_ids: np.ndarray
    kind: np.ndarray
    ts_ns: np.ndarray
    dur_ns: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    ext: np.ndarray
    corr: np.ndarray
    flops: np.ndarray  # -1: none recorded
    copy: np.ndarray  # runtime copy calls: the direction their ``kind`` argument gives (copy_kinds), 0
    launch_names: list  # kernel names runtime launches carry (chunk-local table)
    launch_rows: np.ndarray  # rows (of this chunk's kept events) that carry one
    launch_ids: np.ndarray
    # collective metadata of the (few) events that carry it: their rows, chunk-local strings
    comm_rows: np.ndarray
    comm_strings: list
    comm_coll: np.ndarray  # ids into comm_strings, -1
    comm_pg: np.ndarray
    comm_pg_ranks: np.ndarray
    comm_dtype: np.ndarray
    comm_seq: np.ndarray  # -1 unknown
    comm_in_nelems: np.ndarray
    comm_out_nelems: np.ndarray
    comm_group_size: np.ndarray
    mem_t: np.ndarray  # ns, not yet shifted
    mem_series: np.ndarray  # index into MEMORY_SERIES
    mem_v: np.ndarray
    thread_names: dict[str, str]  # "pid:tid" → name
    process_names: dict[str, str]  # pid → name
    # the Python frames apart from the events: names (chunk-local table), times in ns, pid, tid
    frame_names: list
    frame_name_ids: np.ndarray
    frame_ts_ns: np.ndarray
    frame_dur_ns: np.ndarray
    frame_pid: np.ndarray
    frame_tid: np.ndarray
    n_events: int
    dropped: int
    odd: int
    skipped: dict = {}  # odd events skipped by kind: kind → [count, first index, first name] (``tolerant``)
    # Begin/End (B/E) and async (b/e) events, for pairing across chunks (``begin_end``):
    # (index in the chunk, phase code, pairing key, name, ts in µs, the Begin event or None)
    marks: list = []
    unused: dict = {}  # events of phases the analysis does not use: label → [count, first index, first name]
    py_engines: dict[str, int] = {}  # python frames per engine source tree (vllm, sglang, ...)


def _local_ids(values: list) -> tuple[list, np.ndarray]:
    table = StringTable()
    ids = table.intern_many(values)
    return table.strings, ids


def columns(path: Path, events: list[Event]) -> Cols:
    """Pull the model's columns out of decoded events with C-level maps, no per-event loop."""
    ph = _phases(path, events)
    marks = _marks(events, ph)
    unused = _unused(events, ph)
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
    cat_kind = np.array([CATEGORY_KINDS.get(c, K_UNKNOWN) for c in cats], dtype=np.int8)
    cat_skip = np.array([c in SKIPPED_CATEGORIES for c in cats], dtype=bool)
    kind = cat_kind[cat_ids] if len(cat_ids) else np.zeros(0, np.int8)
    keep = ~cat_skip[cat_ids] if len(cat_ids) else np.zeros(0, bool)
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
        "names": uniq_names,
        "name_ids": name_ids,
        "cats": cats,
        "cat_ids": cat_ids,
        "kind": kind,
        "ts_ns": np.rint(ts_us * 1000.0).astype(np.int64),
        "dur_ns": np.rint(dur_us * 1000.0).astype(np.int64),
        "pid": pid,
        "tid": tid,
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
    kinds = {n: 2 if n.startswith(MODULE_PREFIX) else int(STEP_FRAME.search(n) is not None) for n in set(py_names)}
    kind_of = np.fromiter(map(kinds.__getitem__, py_names), dtype=np.int8, count=len(py_rows))
    keep[py_rows[kind_of == 0]] = False  # module ranges (2) and step calls (1) are events
    py_engines = _engine_counts(py_names)
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
        other = inst_idx[~is_mem].tolist()
        for label, rows in (
            ("profiler instant", [i for i in other if events[i].name in PROFILER_INSTANTS]),
            ("instant", [i for i in other if events[i].name not in PROFILER_INSTANTS]),
        ):
            if rows:
                unused[label] = [len(rows), rows[0], _text(events[rows[0]].name)]
    del inst
    m_ts = np.fromiter(map(attrgetter("ts"), mem), dtype=np.float64, count=len(mem))
    m_args = list(map(attrgetter("args"), mem))
    alloc = np.fromiter(map(attrgetter("total_allocated"), m_args), dtype=np.float64, count=len(mem))
    reserved = np.fromiter(map(attrgetter("total_reserved"), m_args), dtype=np.float64, count=len(mem))
    host = np.fromiter(map(attrgetter("device_type"), m_args), dtype=np.int64, count=len(mem)) == 0
    if ((alloc < 0) | (alloc > 2.0**62) | (reserved < 0) | (reserved > 2.0**62)).any():  # NaN: absent
        raise TraceError(path, "a [memory] event has a negative or absurd size")  # → the tolerant decode
    ok = np.isfinite(m_ts) & (np.abs(m_ts) <= MAX_US)
    odd = int(np.count_nonzero(~ok))
    skipped = {"with odd [memory] args (no usable time)": [odd, mem_idx[int(np.argmin(ok))], "[memory]"]} if odd else {}
    t_ns = np.rint(np.where(ok, m_ts, 0) * 1000.0).astype(np.int64)
    has_a, has_r = ok & np.isfinite(alloc), ok & np.isfinite(reserved) & ~host
    return {
        "mem_t": np.concatenate([t_ns[has_a], t_ns[has_r]]),
        "mem_series": np.concatenate([np.where(host[has_a], 0, 1), np.full(int(has_r.sum()), 2)]).astype(np.int8),
        "mem_v": np.concatenate([alloc[has_a], reserved[has_r]]),
        "odd": odd,
        "skipped": skipped,
    }


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
    """The Python frames' columns (``Cols.frame_*``); a frame with no usable time is left
    out (they are no events of the analysis: counted with the dropped ones)."""
    names = list(map(attrgetter("name"), frames))
    ts_us = _floats(path, frames, "ts", x_idx, names)
    dur_us = _floats(path, frames, "dur", x_idx, names)
    ok = np.isfinite(ts_us) & np.isfinite(dur_us) & (np.abs(ts_us) <= MAX_US) & (dur_us >= 0) & (dur_us <= MAX_DUR_US)
    pid, tid = _ints(frames, "pid"), _ints(frames, "tid")
    if not ok.all():
        keep = np.flatnonzero(ok)
        names = [names[i] for i in keep.tolist()]
        ts_us, dur_us, pid, tid = ts_us[keep], dur_us[keep], pid[keep], tid[keep]
    uniq, ids = _local_ids(names)
    return {
        "frame_names": uniq,
        "frame_name_ids": ids,
        "frame_ts_ns": np.rint(ts_us * 1000.0).astype(np.int64),
        "frame_dur_ns": np.rint(dur_us * 1000.0).astype(np.int64),
        "frame_pid": pid,
        "frame_tid": tid,
    }


def _text(v) -> str:
    return v[:80] if isinstance(v, str) else ""


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


def _unused(events: list, ph: np.ndarray) -> dict:
    """Events of phases the analysis does not use, by what they are: [count, first index, first name]."""
    out: dict[str, list] = {}
    rows = np.flatnonzero((ph == 9) | (ph >= 10))
    if not len(rows):
        return out
    codes, first, counts = np.unique(ph[rows], return_index=True, return_counts=True)
    for c, f, k in zip(codes.tolist(), first.tolist(), counts.tolist()):
        letter = PH_LETTERS.get(c, "?")
        label = UNUSED_PHASES.get(letter, "unknown phase")
        i = int(rows[f])
        got = out.setdefault(label, [0, i, _text(getattr(events[i], "name", ""))])
        got[0] += k
        if i < got[1]:
            got[1:] = [i, _text(getattr(events[i], "name", ""))]
    return out


def _engine_counts(names: list[str]) -> dict[str, int]:
    """How many python frames lie in each engine's source tree (distinct names looked up once)."""
    out: dict[str, int] = {}
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    for n, k in counts.items():
        e = frame_engine(n)
        if e:
            out[e] = out.get(e, 0) + k
    return out


def where(e: Exception) -> str:
    """msgspec says `... - at `$.traceEvents[12].dur``; keep it, it names the event."""
    return str(e).replace("$.", "")

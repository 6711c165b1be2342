"""The native reader: a chunk's columns from the compiled scanner (``_scan.c``), no per-event
Python object.

The scanner takes the common, well-formed case and hands back flat arrays and one table of
names; everything it does not take exactly as the typed decoder would (see ``_scan.c``)
makes ``native_cols`` return None, and the chunk is decoded by the pure-Python reader, the
reference. What follows the scan here is the same column building as ``columns`` (the
shared helpers), on arrays: the two give equal ``Cols``, which the tests check on every
shared trace and on random and hostile input.

The extension is built by ``pip install .`` where a C compiler exists; without it, or with
``XPU_PROFILER_PURE_PYTHON=1``, the pure-Python reader reads everything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ...core import compiled
from ...core.errors import TraceError
from ...core.profile import K_MEMCPY, K_MEMSET, K_RUNTIME
from .args import _num, bytes_column, comm_columns, copy_column, flops_column, odd_ints
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
from .schema import PH_IDS, SliceArgs

try:
    from ._scan import scan as _scan
except ImportError:  # not built (no C compiler at install): the pure-Python reader
    _scan = None

PURE_ENV = compiled.PURE_ENV
#: ph letter → the scanner's phase code (``schema.PH_IDS``); 255: a phase it leaves to the reference
_PHASE_CODES = bytes(PH_IDS.get(chr(c), 255) for c in range(256))
_COMM = ("collective_name", "pg_name", "pg_ranks", "seq", "in_nelems", "out_nelems", "group_size", "dtype")
_PATH = Path("-")


def built() -> bool:
    """Whether the compiled scanner is installed."""
    return _scan is not None


def in_use() -> bool:
    """Whether chunks are read by the compiled scanner: built, and not turned off."""
    return _scan is not None and compiled.enabled()


def native_cols(data: bytes | bytearray | memoryview) -> Cols | None:
    """The columns of one chunk (``[`` events ``]``), None where the pure-Python reader must
    decode it (not built, turned off, or content the scanner does not take)."""
    if not in_use():
        return None
    scanned = _scan(data, _PHASE_CODES)
    if scanned is None:
        return None
    try:
        return _build(data, scanned)
    except TraceError:  # what the reference refuses or reads tolerantly (times, [memory] sizes)
        return None


def _arr(buf: bytearray, dtype) -> np.ndarray:
    return np.frombuffer(buf, dtype=dtype)


def first_seen(ids: np.ndarray, table: list[str]) -> tuple[list[str], np.ndarray]:
    """The distinct strings of ``ids`` (into ``table``) in first-seen order, and each row's id
    among them: what ``StringTable.intern_many`` gives for the strings themselves."""
    if not len(ids):
        return [], np.zeros(0, np.int32)
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), np.int32)
    rank[order] = np.arange(len(uniq), dtype=np.int32)
    return [table[i] for i in uniq[order].tolist()], rank[inverse.ravel()]


def _build(data, scanned: tuple) -> Cols:
    n_events, names, ev_ph, ev_name, *x, comm, i_idx, i_name, i_ts, i_alloc, i_reserved, i_devtype, meta = scanned
    ph = _arr(ev_ph, np.int8)
    name_of_event = _arr(ev_name, np.int32)
    unused = unused_phases(ph, lambda i: names[int(name_of_event[i])])
    xs = {k: _arr(b, t) for (k, t), b in zip(_X_ARRAYS.items(), x)}
    slices = _slices(data, names, xs, _arr(comm, np.int64).reshape(-1, 1 + 2 * len(_COMM)))
    mem = _memory(names, unused, _arr(i_idx, np.int64), _arr(i_name, np.int32), i_ts, i_alloc, i_reserved, i_devtype)
    thread_names: dict[str, str] = {}
    process_names: dict[str, str] = {}
    for _, nid, pid, tid, arg, pid_s, tid_s in _arr(meta, np.int64).reshape(-1, 7).tolist():
        if arg < 0:
            continue
        pid, tid = names[pid_s] if pid_s >= 0 else pid, names[tid_s] if tid_s >= 0 else tid
        if names[nid] == "thread_name":
            thread_names[f"{pid}:{tid}"] = names[arg]
        elif names[nid] == "process_name":
            process_names[str(pid)] = names[arg]
    return Cols(
        **slices,
        **mem,
        thread_names=thread_names,
        process_names=process_names,
        n_events=n_events,
        marks=[],
        unused=unused,
    )


#: the scanner's arrays per complete (X) event, in its order: field → type ("dims": (start,
#: end) of the raw Input Dims; "strs": the ids of pid, tid, args kind and bytes written as strings)
_X_ARRAYS = {
    "idx": np.int64,
    "name": np.int32,
    "cat": np.int32,
    "pid": np.int64,
    "tid": np.int64,
    "ts": np.float64,
    "dur": np.float64,
    "ext": np.int64,
    "corr": np.int64,
    "kernel": np.int32,
    "kind": np.int64,
    "flops": np.float64,
    "bytes": np.float64,
    "dims": np.int64,
    "strs": np.int32,
}


def _slices(data, names: list[str], xs: dict, comm: np.ndarray) -> dict:
    """``columns._slices`` on the scanner's arrays."""
    xs["dims"] = xs["dims"].reshape(-1, 2)
    xs["strs"] = xs["strs"].reshape(-1, 4)
    cats, cat_ids = first_seen(xs["cat"], names)
    kind, keep = kinds_of(cats, cat_ids)
    frame_cols, py_engines = _python_frames(names, xs, cats, cat_ids, keep)
    dropped = int(np.count_nonzero(~keep))
    rows = np.flatnonzero(keep) if dropped else np.arange(len(keep))
    if dropped:
        xs = {k: v[rows] for k, v in xs.items()}
        kind, cat_ids = kind[rows], cat_ids[rows]
    ts_us, dur_us = xs["ts"], xs["dur"]
    finite = np.isfinite(ts_us) & np.isfinite(dur_us)
    if not finite.all() or ((np.abs(ts_us) > MAX_US) | (dur_us > MAX_DUR_US) | (dur_us < 0)).any():
        raise TraceError(_PATH, "an odd time")  # the reference says which and how
    uniq_names, name_ids = first_seen(xs["name"], names)
    rt_rows = np.flatnonzero(kind == K_RUNTIME)
    launched = xs["kernel"][rt_rows]
    launch_names, launch_ids = first_seen(launched[launched >= 0], names)
    flops = flops_column(xs["flops"], uniq_names, name_ids, lambda r: _raw(data, xs["dims"][r]))
    copies = np.flatnonzero((kind == K_MEMCPY) | (kind == K_MEMSET))
    if len(copies):
        moved = xs["bytes"][copies]
        written = xs["strs"][copies, 3]
        if (written >= 0).any():
            moved = np.array([_num(names[s]) if s >= 0 else b for b, s in zip(moved.tolist(), written.tolist())])
        flops[copies] = bytes_column(moved)
    pid, tid = _ints(names, xs["pid"], xs["strs"][:, 0]), _ints(names, xs["tid"], xs["strs"][:, 1])
    return {
        **core_columns(uniq_names, name_ids, cats, cat_ids, kind, ts_us, dur_us, pid, tid),
        "ext": xs["ext"].copy(),
        "corr": xs["corr"].copy(),
        "flops": flops,
        "copy": copy_column(len(kind), rt_rows, _values(names, xs["kind"][rt_rows], xs["strs"][rt_rows, 2])),
        "launch_names": launch_names,
        "launch_rows": rt_rows[launched >= 0],
        "launch_ids": launch_ids,
        **_comm(data, comm, rows),
        **frame_cols,
        "dropped": dropped,
        "py_engines": py_engines,
    }


def _values(names: list[str], ints: np.ndarray, strs: np.ndarray) -> list:
    """A column as the reference decodes it: each row's integer, or the string written there."""
    return [names[s] if s >= 0 else v for v, s in zip(ints.tolist(), strs.tolist())]


def _ints(names: list[str], ints: np.ndarray, strs: np.ndarray) -> np.ndarray:
    """pid/tid columns (``args._ints``): integers, strings as the reference maps them."""
    if not len(strs) or strs.max() < 0:
        return ints.copy()
    return odd_ints(_values(names, ints, strs))


def _raw(data, spans: np.ndarray) -> list[bytes]:
    """The raw bytes of values (``(start, end)`` spans; (0, 0): absent, b"")."""
    view = memoryview(data)
    return [bytes(view[a:b]) for a, b in spans.tolist()]


def _comm(data, comm: np.ndarray, kept: np.ndarray) -> dict:
    """``Cols.comm_*`` of the kept events that carry collective fields (their raw values):
    ``comm`` rows are (X event, 8 value spans); ``kept``: the X events kept, ascending."""
    pos = np.searchsorted(kept, comm[:, 0])
    found = pos < len(kept)
    found[found] = kept[pos[found]] == comm[found, 0]
    comm, pos = comm[found], pos[found]
    picked = []
    for row in comm:
        fields: dict[str, Any] = {f: msgspec.Raw(v) for f, v in zip(_COMM, _raw(data, row[1:].reshape(-1, 2)))}
        picked.append(SliceArgs(**fields))
    got = comm_columns(picked)
    got["rows"] = pos[got["rows"]].astype(np.int64)
    return {f"comm_{k}": v for k, v in got.items()}


def _python_frames(names: list[str], xs: dict, cats: list, cat_ids: np.ndarray, keep: np.ndarray) -> tuple:
    """``columns._python_frames`` on the scanner's arrays."""
    if "python_function" not in cats:
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0, np.float64)
        return frame_columns(empty_f, empty_f, empty_i, empty_i, lambda rows: ([], np.zeros(0, np.int32))), {}
    py_rows = np.flatnonzero(cat_ids == cats.index("python_function"))
    py_ids = xs["name"][py_rows]
    distinct = np.unique(py_ids)
    lookup = np.zeros(len(names), np.int8)
    lookup[distinct] = [frame_kind(names[i]) for i in distinct.tolist()]
    kind_of = lookup[py_ids]
    keep[py_rows[kind_of == 0]] = False
    py_engines = engine_counts([names[i] for i in py_ids.tolist()])
    f = py_rows[kind_of < 2]
    ids = xs["name"][f]
    return frame_columns(
        xs["ts"][f],
        xs["dur"][f],
        _ints(names, xs["pid"][f], xs["strs"][f, 0]),
        _ints(names, xs["tid"][f], xs["strs"][f, 1]),
        lambda rows: first_seen(ids if rows is None else ids[rows], names),
    ), py_engines


def _memory(names: list[str], unused: dict, idx: np.ndarray, name_ids: np.ndarray, ts, alloc, reserved, devtype):
    """``columns._memory`` on the scanner's arrays."""
    memory_id = names.index("[memory]") if "[memory]" in names else -1
    is_mem = name_ids == memory_id
    if not is_mem.all():
        by_row = dict(zip(idx.tolist(), name_ids.tolist()))
        other_instants(unused, idx[~is_mem].tolist(), lambda i: names[by_row[i]])
    return memory_columns(
        _PATH,
        idx[is_mem].tolist(),
        _arr(ts, np.float64)[is_mem],
        _arr(alloc, np.float64)[is_mem],
        _arr(reserved, np.float64)[is_mem],
        _arr(devtype, np.int64)[is_mem],
    )

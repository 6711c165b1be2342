"""PyTorch profiler (Kineto) Chrome traces: `*.pt.trace.json[.gz]`, vLLM profiler dirs.

Decoding is typed (msgspec structs with only the fields the model needs, not
tracked by the GC): the fastest full parse in Python, and about half the memory
of a dict-based load. Columns are then pulled out with C-level attrgetter maps;
there is no per-event Python loop beyond that.
"""

from __future__ import annotations

import math
import re
from operator import attrgetter
from pathlib import Path
from typing import Optional, Union

import msgspec
import numpy as np

from ..errors import TraceError
from ..profile import (
    COUNTER_SCHEMA,
    EVENT_SCHEMA,
    K_ANNOTATION,
    K_CPU_OP,
    K_KERNEL,
    K_MEMCPY,
    K_MEMSET,
    K_RUNTIME,
    K_UNKNOWN,
    Profile,
    StringTable,
    Table,
)
from . import ReadOptions, read_bytes

NAME = "kineto"

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
# Of python_function frames only module ranges matter (fused-op attribution).
MODULE_PREFIX = "nn.Module: "

_SNIFF = re.compile(rb'"(traceEvents|ph)"\s*:')
_KINETO_MARKERS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"', b'"cpu_op"',
                   b'"baseTimeNanoseconds"', b'"ph"')


class Args(msgspec.Struct, gc=False, frozen=True):
    external_id: int = msgspec.field(default=-1, name="External id")
    correlation: int = -1
    device: Union[int, str] = -1
    name: Optional[str] = None  # M events
    total_allocated: Optional[float] = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Optional[float] = msgspec.field(default=None, name="Total Reserved")
    device_type: Optional[int] = msgspec.field(default=None, name="Device Type")


_NO_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    ph: Optional[str] = None
    name: str = ""
    cat: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: Optional[float] = None
    dur: Optional[float] = None
    args: Args = _NO_ARGS


class DistributedInfo(msgspec.Struct, gc=False):
    rank: Optional[int] = None
    world_size: Optional[int] = None
    backend: Optional[str] = None


class Trace(msgspec.Struct, gc=False):
    traceEvents: Optional[list[Event]] = None
    distributedInfo: Optional[DistributedInfo] = None
    baseTimeNanoseconds: Optional[int] = None
    deviceProperties: Optional[list[dict]] = None
    schemaVersion: Optional[int] = None
    displayTimeUnit: Optional[str] = None


_TRACE_DECODER = msgspec.json.Decoder(Trace)
_ARRAY_DECODER = msgspec.json.Decoder(list[Event])


def sniff(path: Path, head: bytes) -> bool:
    h = head.lstrip()
    if not (h.startswith(b"{") or h.startswith(b"[")):
        return False
    return bool(_SNIFF.search(h)) or any(m in h for m in _KINETO_MARKERS[:3])


def _decode(path: Path, data: bytes):
    if not data.strip():
        raise TraceError(path, "empty file")
    try:
        if data.lstrip()[:1] == b"[":
            return None, _ARRAY_DECODER.decode(data)
        trace = _TRACE_DECODER.decode(data)
    except msgspec.ValidationError as e:
        raise TraceError(path, f"not a valid trace: {_where(e)}") from None
    except msgspec.DecodeError as e:
        msg = str(e)
        if "truncated" in msg.lower():
            raise TraceError(path, "truncated JSON (file ends in the middle of the trace)") from None
        raise TraceError(path, f"malformed JSON ({msg})") from None
    if trace.traceEvents is None:
        raise TraceError(path, "JSON is not a trace (no traceEvents array)")
    return trace, trace.traceEvents


def _where(e: Exception) -> str:
    """msgspec says `... - at `$.traceEvents[12].dur``; keep it, it names the event."""
    return str(e).replace("$.", "")


def _ints(values: list, what: str, path: Path) -> np.ndarray:
    """pid/tid/device columns: ints, with Kineto's odd strings ("" or "0x7f…") mapped to ids."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        out = np.empty(len(values), dtype=np.int64)
        seen: dict[str, int] = {}
        for i, v in enumerate(values):
            if isinstance(v, int):
                out[i] = v
            else:
                try:
                    out[i] = int(v, 0)
                except (TypeError, ValueError):
                    out[i] = seen.setdefault(v, -2 - len(seen))  # stable negative ids
        return out


def read(path: Path, options: ReadOptions) -> Profile:
    data = read_bytes(path, options.progress)
    trace, events = _decode(path, data)
    del data
    prof = Profile()
    strings = prof.strings
    n_all = len(events)

    rank = options.rank
    if rank is None and trace is not None and trace.distributedInfo is not None:
        rank = trace.distributedInfo.rank
    rank = int(rank or 0)

    # ---- columns of every event (C-level maps, no Python loop) -------------------------
    phs = list(map(attrgetter("ph"), events))
    if None in phs:
        i = phs.index(None)
        raise TraceError(path, f"event #{i} has no 'ph' field")
    ph_ids = {"X": 0, "i": 1, "I": 1, "M": 2, "C": 3}
    ph = np.fromiter((ph_ids.get(p[:1], 9) for p in phs), dtype=np.int8, count=n_all)
    del phs

    x_idx = np.flatnonzero(ph == 0)
    xs = [events[i] for i in x_idx.tolist()] if len(x_idx) != n_all else events
    names, cats, pids, tids, tss, durs, argss = (
        list(map(attrgetter(a), xs)) for a in ("name", "cat", "pid", "tid", "ts", "dur", "args"))
    if None in tss or None in durs:
        bad = tss.index(None) if None in tss else durs.index(None)
        field = "ts" if None in tss else "dur"
        raise TraceError(path, f"complete event #{int(x_idx[bad])} ({names[bad][:60]!r}) has no '{field}' field")
    ts_us = np.array(tss, dtype=np.float64)
    dur_us = np.array(durs, dtype=np.float64)
    del tss, durs
    if not np.isfinite(ts_us).all() or not np.isfinite(dur_us).all():
        bad = int(np.flatnonzero(~(np.isfinite(ts_us) & np.isfinite(dur_us)))[0])
        raise TraceError(path, f"event #{int(x_idx[bad])} ({names[bad][:60]!r}) has a non-finite time")
    if (dur_us < 0).any():
        bad = int(np.flatnonzero(dur_us < 0)[0])
        raise TraceError(path, f"event #{int(x_idx[bad])} ({names[bad][:60]!r}) has a negative duration "
                               f"({dur_us[bad]} us)")

    # ---- category → kind; drop what the model does not use --------------------------------
    cat_table = StringTable()
    cat_ids = cat_table.intern_many(cats)
    del cats
    cat_kind = np.array([CATEGORY_KINDS.get(c, K_UNKNOWN) for c in cat_table.strings], dtype=np.int8)
    cat_skip = np.array([c in SKIPPED_CATEGORIES for c in cat_table.strings], dtype=bool)
    kind = cat_kind[cat_ids] if len(cat_ids) else np.zeros(0, np.int8)
    keep = ~cat_skip[cat_ids] if len(cat_ids) else np.zeros(0, bool)
    py_cat = cat_table.get("python_function")
    if py_cat >= 0:
        py_rows = np.flatnonzero(cat_ids == py_cat)
        is_module = np.fromiter((names[i].startswith(MODULE_PREFIX) for i in py_rows.tolist()),
                                dtype=bool, count=len(py_rows))
        keep[py_rows[~is_module]] = False
    n_dropped_py = int(np.count_nonzero(~keep))

    keep_idx = np.flatnonzero(keep)
    sel = keep_idx.tolist()
    if len(sel) != len(names):
        names = [names[i] for i in sel]
        pids = [pids[i] for i in sel]
        tids = [tids[i] for i in sel]
        argss = [argss[i] for i in sel]
    kind = kind[keep_idx]
    cat_ids = cat_ids[keep_idx]
    ts_us = ts_us[keep_idx]
    dur_us = dur_us[keep_idx]

    ext = np.fromiter(map(attrgetter("external_id"), argss), dtype=np.int64, count=len(argss))
    corr = np.fromiter(map(attrgetter("correlation"), argss), dtype=np.int64, count=len(argss))
    del argss
    pid = _ints(pids, "pid", path)
    tid = _ints(tids, "tid", path)
    del pids, tids

    # ---- time base: integer ns relative to one base ----------------------------------------
    base_ns = 0
    if trace is not None and trace.baseTimeNanoseconds:
        base_ns = int(trace.baseTimeNanoseconds)
    ts_ns = np.rint(ts_us * 1000.0).astype(np.int64)
    dur_ns = np.rint(dur_us * 1000.0).astype(np.int64)
    del ts_us, dur_us
    # Kineto writes ts relative to baseTimeNanoseconds when present, else as absolute epoch µs.
    # Either way the profile's base becomes the first event, so every time starts at 0.
    shift = int(ts_ns.min()) if len(ts_ns) else 0
    base_ns += shift
    ts_ns -= shift

    is_dev = (kind == K_KERNEL) | (kind == K_MEMCPY) | (kind == K_MEMSET)
    gpu_ann = cat_table.get("gpu_user_annotation")
    if gpu_ann >= 0:
        is_dev |= cat_ids == gpu_ann
    device = np.where(is_dev, pid, -1).astype(np.int32)

    # Map the local category table into the profile's string table.
    cat_remap = strings.intern_many(cat_table.strings) if len(cat_table) else np.zeros(0, np.int32)
    prof.events = Table(EVENT_SCHEMA, {
        "name": strings.intern_many(names),
        "kind": kind,
        "start": ts_ns,
        "dur": dur_ns,
        "rank": np.full(len(names), rank, np.int32),
        "device": device,
        "track": tid,
        "corr": corr,
        "ext": ext,
        "cat": cat_remap[cat_ids] if len(cat_ids) else np.zeros(0, np.int32),
    })
    del names

    # ---- instants ([memory]) → counters; metadata → track names ----------------------------
    counters_t, counters_name, counters_v = [], [], []
    thread_names: dict[str, str] = {}
    process_names: dict[str, str] = {}
    odd = 0
    for i in np.flatnonzero(ph != 0).tolist():
        e = events[i]
        if e.ph in ("i", "I") and e.name == "[memory]":
            a = e.args
            if e.ts is None or not math.isfinite(e.ts):
                odd += 1
                continue
            t = int(round(e.ts * 1000.0)) - shift
            host = a.device_type == 0
            if a.total_allocated is not None:
                counters_t.append(t)
                counters_name.append("host_allocated_bytes" if host else "device_allocated_bytes")
                counters_v.append(a.total_allocated)
            if a.total_reserved is not None and not host:
                counters_t.append(t)
                counters_name.append("device_reserved_bytes")
                counters_v.append(a.total_reserved)
        elif e.ph == "M" and e.args.name is not None:
            key = f"{e.pid}:{e.tid}"
            if e.name == "thread_name":
                thread_names[key] = e.args.name
            elif e.name == "process_name":
                process_names[str(e.pid)] = e.args.name
    if counters_t:
        t = np.array(counters_t, dtype=np.int64)
        order = np.argsort(t, kind="stable")
        prof.counters = Table(COUNTER_SCHEMA, {
            "rank": np.full(len(t), rank, np.int32),
            "name": strings.intern_many(counters_name)[order],
            "t": t[order],
            "value": np.array(counters_v, dtype=np.float64)[order],
        })
    if odd:
        prof.warn(f"{path.name}: skipped {odd} odd events")

    prof.base_ns = base_ns
    info = {"path": str(path), "format": NAME, "events": n_all, "rank": rank}
    if trace is not None and trace.deviceProperties:
        info["devices"] = [d.get("name") for d in trace.deviceProperties if isinstance(d, dict)]
    if trace is not None and trace.distributedInfo is not None and trace.distributedInfo.world_size:
        info["world_size"] = trace.distributedInfo.world_size
    prof.run["sources"] = [info]
    prof.run["has_timeline"] = True
    prof.run.setdefault("thread_names", {})[str(rank)] = thread_names
    prof.run.setdefault("process_names", {})[str(rank)] = process_names
    if n_dropped_py:
        prof.run.setdefault("dropped_events", {})[str(path)] = n_dropped_py
    return prof

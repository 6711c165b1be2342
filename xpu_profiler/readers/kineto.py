"""PyTorch profiler (Kineto) Chrome traces: `*.pt.trace.json[.gz]`, vLLM profiler dirs.

Decoding is typed (msgspec structs with only the fields the model needs, not
tracked by the GC): the fastest full parse in Python, and about half the memory
of a dict-based load. Columns are then pulled out with C-level attrgetter maps;
there is no per-event Python loop beyond that.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import re
import threading
from itertools import repeat
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
from . import ReadOptions, rank_from_name, read_bytes

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
    # ids may come as strings from other writers; numeric strings are converted on extraction
    external_id: Union[int, str] = msgspec.field(default=-1, name="External id")
    correlation: Union[int, str] = -1
    device: Union[int, str] = -1
    name: Optional[str] = None  # M events
    kernel: Optional[str] = None  # runtime launches on ROCm: the kernel they launch
    # NaN / -1 rather than None: the [memory] columns are pulled out with np.fromiter
    total_allocated: float = msgspec.field(default=math.nan, name="Total Allocated")
    total_reserved: float = msgspec.field(default=math.nan, name="Total Reserved")
    device_type: int = msgspec.field(default=-1, name="Device Type")


_NO_ARGS = Args()


class _Fields(msgspec.Struct, gc=False):
    """What the model takes from an event (the rest of each object is skipped)."""

    name: str = ""
    cat: str = ""
    # Perfetto accepts numeric strings for ts/dur and doubles for pid/tid; so do we
    pid: Union[int, float, str] = 0
    tid: Union[int, float, str] = 0
    ts: Optional[Union[float, str]] = None
    dur: Optional[Union[float, str]] = None
    args: Args = _NO_ARGS


class Event(_Fields, gc=False):
    """The plain schema: any phase, checked by hand (exact messages for broken events)."""

    ph: Optional[str] = None


# The fast schema: a union tagged on "ph". Only X, instants and metadata carry fields;
# flows (a quarter of a Kineto trace), counters and the rest decode to empty structs that
# are cheap to make and to free. A phase outside the table fails the union, and that
# chunk is decoded again with the plain `Event` schema.
class _Slice(_Fields, tag_field="ph", tag="X"):
    pass


class _Instant(_Slice, tag="i"):
    pass


class _InstantG(_Slice, tag="I"):
    pass


class _Meta(_Slice, tag="M"):
    pass


class _Other(msgspec.Struct, gc=False, tag_field="ph", tag="s"):
    pass


_OTHERS = [_Other] + [type(f"_Other_{t}", (_Other,), {}, tag=t) for t in "ftCBEbenPRONDSTpv()"]
_PH_CODE = {_Slice: 0, _Instant: 1, _InstantG: 1, _Meta: 2}
_TAGGED_DECODER = msgspec.json.Decoder(list[Union[(_Slice, _Instant, _InstantG, _Meta, *_OTHERS)]])


class DistributedInfo(msgspec.Struct, gc=False):
    rank: Optional[int] = None
    world_size: Optional[int] = None
    backend: Optional[str] = None


class Trace(msgspec.Struct, gc=False):
    # Raw: the events array is located (and syntax-checked) without building objects,
    # then decoded in chunks, optionally in parallel.
    traceEvents: msgspec.Raw = msgspec.Raw(b"")
    distributedInfo: Optional[DistributedInfo] = None
    baseTimeNanoseconds: Optional[int] = None
    deviceProperties: Optional[list[dict]] = None
    schemaVersion: Optional[int] = None
    displayTimeUnit: Optional[str] = None


_TRACE_DECODER = msgspec.json.Decoder(Trace)
_EVENTS_DECODER = msgspec.json.Decoder(list[Event])

MAX_US = 4e15  # ~127 years: anything larger cannot be a trace time (and overflows int64 ns)
MEMORY_SERIES = ("host_allocated_bytes", "device_allocated_bytes", "device_reserved_bytes")
CHUNK_BYTES = 16 << 20        # decode this much at a time: bounded peak memory
PARALLEL_MIN_BYTES = 64 << 20  # below this, worker processes cost more than they save
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")


def sniff(path: Path, head: bytes) -> bool:
    h = head.lstrip()
    if not (h.startswith(b"{") or h.startswith(b"[")):
        return False
    return bool(_SNIFF.search(h)) or any(m in h for m in _KINETO_MARKERS[:3])


def _decode_error(path: Path, e: Exception) -> TraceError:
    if isinstance(e, msgspec.ValidationError):
        return TraceError(path, f"not a valid trace: {_where(e)}")
    msg = str(e)
    if "truncated" in msg.lower():
        return TraceError(path, "truncated JSON (file ends in the middle of the trace)")
    return TraceError(path, f"malformed JSON ({msg})")


def _top_level(path: Path, data: bytes) -> tuple[Trace | None, memoryview]:
    """The trace's top-level fields and the raw bytes of its events array."""
    first = data[:4096].lstrip()[:1]  # never strip the whole (hundreds of MB) buffer
    if not first and not data.strip():
        raise TraceError(path, "empty file")
    if first == b"[":
        return None, memoryview(data)
    fast = _locate_events(data)
    if fast is not None:
        return fast
    return _top_level_exact(path, data)


def _top_level_exact(path: Path, data: bytes) -> tuple[Trace, memoryview]:
    """Parse the whole document once (events as Raw) to find the array exactly."""
    try:
        trace = _TRACE_DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        raise _decode_error(path, e) from None
    raw = memoryview(trace.traceEvents)
    if not len(raw):
        raise TraceError(path, "JSON is not a trace (no traceEvents array)")
    if raw[:1] != b"[":
        raise TraceError(path, "not a valid trace: traceEvents is not an array")
    return trace, raw


def _locate_events(data: bytes) -> tuple[Trace, memoryview] | None:
    """Find the events array by byte search and check the guess by decoding what is around it.

    Kineto writes `traceEvents` as the one large array; everything else is small. A wrong
    guess (another `]` after the array) fails a chunk later and the exact path takes over.
    """
    key = data.find(b'"traceEvents"')
    if key < 0:
        return None
    start = data.find(b"[", key)
    if start < 0 or data[key + 13:start].strip() != b":":
        return None
    # the array's "]" is the last one that closes an object ("}]"): Kineto writes string
    # arrays (INFO, ERROR) after it, never object arrays
    end = len(data)
    for _ in range(100_000):
        end = data.rfind(b"]", start, end)
        if end <= start or data[max(start, end - 64):end].rstrip()[-1:] in (b"}", b"["):
            break
    if end <= start:
        return None
    try:
        trace = _TRACE_DECODER.decode(data[:start] + b"[]" + data[end + 1:])
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return trace, memoryview(data)[start:end + 1]


def _chunks(raw: memoryview, size: int) -> list[tuple[int, int]]:
    """(start, end) byte spans of the array's elements, cut between two events.

    A cut that lands inside a nested object or a string makes that chunk fail to decode;
    the reader then falls back to decoding the whole array at once.
    """
    n = len(raw)
    spans, pos = [], 1
    buf = raw  # re searches the buffer in place: no copy of the array
    while True:
        target = pos + size
        if target >= n - 1:
            spans.append((pos, n - 1))
            return spans
        m = _BOUNDARY.search(buf, target)
        if m is None:
            spans.append((pos, n - 1))
            return spans
        spans.append((pos, m.start() + 1))
        pos = m.end() - 1


class _Cols(msgspec.Struct):
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
    launch_names: list      # kernel names runtime launches carry (chunk-local table)
    launch_rows: np.ndarray  # rows (of this chunk's kept events) that carry one
    launch_ids: np.ndarray
    mem_t: np.ndarray      # ns, not yet shifted
    mem_series: np.ndarray  # index into MEMORY_SERIES
    mem_v: np.ndarray
    thread_names: dict
    process_names: dict
    n_events: int
    dropped: int
    odd: int


def _local_ids(values: list) -> tuple[list, np.ndarray]:
    table = StringTable()
    ids = table.intern_many(values)
    return table.strings, ids


def _columns(path: Path, events: list[Event]) -> _Cols:
    """Pull the model's columns out of decoded events with C-level maps, no per-event loop."""
    n_all = len(events)
    if n_all and type(events[0]) is not Event:  # the tagged schema: the type is the phase
        ph = np.fromiter(map(_PH_CODE.get, map(type, events), repeat(9)), dtype=np.int8, count=n_all)
    else:
        phs = list(map(attrgetter("ph"), events))
        if None in phs:
            raise TraceError(path, f"event #{phs.index(None)} has no 'ph' field")
        ph_ids = {"X": 0, "i": 1, "I": 1, "M": 2}  # others (flows, counters, async) are not used
        ph = np.fromiter(map(ph_ids.get, phs, repeat(9)), dtype=np.int8, count=n_all)
        del phs

    x_idx = np.flatnonzero(ph == 0)
    xs = [events[i] for i in x_idx.tolist()] if len(x_idx) != n_all else events

    # category → kind; drop what the model does not use before pulling more columns
    cats, cat_ids = _local_ids(list(map(attrgetter("cat"), xs)))
    cat_kind = np.array([CATEGORY_KINDS.get(c, K_UNKNOWN) for c in cats], dtype=np.int8)
    cat_skip = np.array([c in SKIPPED_CATEGORIES for c in cats], dtype=bool)
    kind = cat_kind[cat_ids] if len(cat_ids) else np.zeros(0, np.int8)
    keep = ~cat_skip[cat_ids] if len(cat_ids) else np.zeros(0, bool)
    if "python_function" in cats:
        py_rows = np.flatnonzero(cat_ids == cats.index("python_function"))
        is_module = np.fromiter((xs[i].name.startswith(MODULE_PREFIX) for i in py_rows.tolist()),
                                dtype=bool, count=len(py_rows))
        keep[py_rows[~is_module]] = False
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
    finite = np.isfinite(ts_us) & np.isfinite(dur_us)
    if not finite.all():  # fromiter reads a missing value (None) as NaN
        bad = int(np.flatnonzero(~finite)[0])
        e = events[int(x_idx[bad])]
        what = "has no 'ts' field" if e.ts is None else "has no 'dur' field" if e.dur is None \
            else "has a non-finite time"
        raise TraceError(path, f"complete event #{int(x_idx[bad])} ({names[bad][:60]!r}) {what}")
    out_of_range = (np.abs(ts_us) > MAX_US) | (dur_us > MAX_US)
    if out_of_range.any():
        bad = int(np.flatnonzero(out_of_range)[0])
        raise TraceError(path, f"event #{int(x_idx[bad])} ({names[bad][:60]!r}) has a time out of range "
                               f"(ts {ts_us[bad]:g} us, dur {dur_us[bad]:g} us)")
    if (dur_us < 0).any():
        bad = int(np.flatnonzero(dur_us < 0)[0])
        raise TraceError(path, f"event #{int(x_idx[bad])} ({names[bad][:60]!r}) has a negative duration "
                               f"({dur_us[bad]} us)")
    uniq_names, name_ids = _local_ids(names)
    del names
    ext = _ids(argss, "external_id")
    corr = _ids(argss, "correlation")
    rt_rows = np.flatnonzero(kind == K_RUNTIME)
    launched = [argss[i].kernel for i in rt_rows.tolist()]
    has = np.fromiter((k is not None for k in launched), dtype=bool, count=len(launched))
    launch_rows = rt_rows[has]
    launch_names, launch_ids = _local_ids([k for k in launched if k is not None])
    del argss, launched

    # instants ([memory]) → counters; metadata → track names
    inst = [events[i] for i in np.flatnonzero(ph == 1).tolist()]
    mem = [e for e, n in zip(inst, map(attrgetter("name"), inst)) if n == "[memory]"]
    m_ts = np.fromiter(map(attrgetter("ts"), mem), dtype=np.float64, count=len(mem))
    m_args = list(map(attrgetter("args"), mem))
    alloc = np.fromiter(map(attrgetter("total_allocated"), m_args), dtype=np.float64, count=len(mem))
    reserved = np.fromiter(map(attrgetter("total_reserved"), m_args), dtype=np.float64, count=len(mem))
    host = np.fromiter(map(attrgetter("device_type"), m_args), dtype=np.int64, count=len(mem)) == 0
    ok = np.isfinite(m_ts)
    odd = int(np.count_nonzero(~ok))
    t_ns = np.rint(np.where(ok, m_ts, 0) * 1000.0).astype(np.int64)
    has_a, has_r = ok & np.isfinite(alloc), ok & np.isfinite(reserved) & ~host
    mem_t = np.concatenate([t_ns[has_a], t_ns[has_r]])
    mem_series = np.concatenate([np.where(host[has_a], 0, 1), np.full(int(has_r.sum()), 2)]).astype(np.int8)
    mem_v = np.concatenate([alloc[has_a], reserved[has_r]])
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

    return _Cols(
        names=uniq_names, name_ids=name_ids, cats=cats, cat_ids=cat_ids, kind=kind,
        ts_ns=np.rint(ts_us * 1000.0).astype(np.int64), dur_ns=np.rint(dur_us * 1000.0).astype(np.int64),
        pid=pid, tid=tid, ext=ext, corr=corr,
        launch_names=launch_names, launch_rows=launch_rows, launch_ids=launch_ids,
        mem_t=mem_t, mem_series=mem_series, mem_v=mem_v, thread_names=thread_names,
        process_names=process_names, n_events=n_all, dropped=dropped, odd=odd)


def _where(e: Exception) -> str:
    """msgspec says `... - at `$.traceEvents[12].dur``; keep it, it names the event."""
    return str(e).replace("$.", "")


def _floats(path: Path, xs: list[Event], field: str, x_idx: np.ndarray, names: list[str]) -> np.ndarray:
    """ts/dur in µs; numbers or numeric strings, as Perfetto reads them."""
    try:
        return np.fromiter(map(attrgetter(field), xs), dtype=np.float64, count=len(xs))
    except (ValueError, TypeError):
        for i, v in enumerate(map(attrgetter(field), xs)):
            try:
                float(v if v is not None else "nan")
            except (ValueError, TypeError):
                raise TraceError(path, f"complete event #{int(x_idx[i])} ({names[i][:60]!r}): "
                                       f"{field} {str(v)[:40]!r} is not a number") from None
        raise


def _ids(argss: list[Args], field: str) -> np.ndarray:
    """Correlation / External ids; an id that is no integer is taken as absent (-1)."""
    try:
        return np.fromiter(map(attrgetter(field), argss), dtype=np.int64, count=len(argss))
    except (ValueError, TypeError, OverflowError):
        out = np.full(len(argss), -1, np.int64)
        for i, v in enumerate(map(attrgetter(field), argss)):
            try:
                out[i] = int(v)
            except (ValueError, TypeError, OverflowError):
                pass
        return out


def _ints(xs: list[Event], field: str) -> np.ndarray:
    """pid/tid columns: ints, with Kineto's odd strings ("" or "0x7f…") mapped to ids."""
    try:
        return np.fromiter(map(attrgetter(field), xs), dtype=np.int64, count=len(xs))
    except (TypeError, ValueError, OverflowError):
        values = list(map(attrgetter(field), xs))
        out = np.empty(len(values), dtype=np.int64)
        seen: dict[str, int] = {}
        for i, v in enumerate(values):
            if isinstance(v, (int, float)) and -2**63 <= v < 2**63 and v == int(v):
                out[i] = int(v)
            else:
                try:
                    out[i] = int(v, 0)
                except (TypeError, ValueError, OverflowError):
                    out[i] = seen.setdefault(str(v), -2 - len(seen))  # stable negative ids
        return out


# ---- chunked, optionally parallel decoding ----------------------------------------------

_RAW: memoryview | None = None  # the events array, inherited by forked workers


class _ChunkFailed(Exception):
    """A chunk did not decode on its own: cut at a bad place, or a broken event inside."""


def _decode_chunk(span: tuple[int, int]) -> _Cols:
    a, b = span
    raw = _RAW
    try:
        chunk = b"[" + bytes(raw[a:b]) + b"]"
        try:
            events = _TAGGED_DECODER.decode(chunk)
        except msgspec.ValidationError:  # an unusual phase, or a field of the wrong type
            events = _EVENTS_DECODER.decode(chunk)
        del chunk
        return _columns(Path("-"), events)
    except (msgspec.DecodeError, msgspec.ValidationError, TraceError) as e:
        raise _ChunkFailed(str(e)) from None


def _workers(raw: memoryview) -> int:
    if len(raw) < PARALLEL_MIN_BYTES or os.environ.get("XPU_PROFILER_WORKERS") == "1":
        return 1
    if multiprocessing.get_start_method(allow_none=True) not in (None, "fork") or threading.active_count() > 1:
        return 1  # forking a threaded process (a live engine) is unsafe
    want = os.environ.get("XPU_PROFILER_WORKERS")
    n = int(want) if want and want.isdigit() else (os.cpu_count() or 1)
    return max(1, min(n, 8))


def _decode_all(path: Path, raw: memoryview) -> list[_Cols]:
    global _RAW
    spans = _chunks(raw, CHUNK_BYTES)
    workers = _workers(raw) if len(spans) > 1 else 1
    _RAW = raw
    try:
        if workers > 1:
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(workers) as pool:
                return pool.map(_decode_chunk, spans, chunksize=1)
        return [_decode_chunk(s) for s in spans]
    finally:
        _RAW = None


def _decode_whole(path: Path, raw: memoryview, in_object: bool) -> _Cols:
    """One decode of the whole array: exact error messages with global event numbers."""
    try:
        events = _EVENTS_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        if isinstance(e, msgspec.ValidationError) and in_object:  # `$[12].dur` → `traceEvents[12].dur`
            e = msgspec.ValidationError(str(e).replace("`$", "`$.traceEvents"))
        raise _decode_error(path, e) from None
    return _columns(path, events)


def read(path: Path, options: ReadOptions) -> Profile:
    data = read_bytes(path, options.progress)
    trace, raw = _top_level(path, data)
    try:
        parts = _decode_all(path, raw)
    except _ChunkFailed:
        if trace is not None:  # the located array may have been a guess: find it exactly
            trace, raw = _top_level_exact(path, data)
        try:
            parts = _decode_all(path, raw)
        except _ChunkFailed:
            parts = [_decode_whole(path, raw, trace is not None)]
    del raw, data

    # the trace says its rank; else its file name does; --rank is for a file that says neither
    rank = trace.distributedInfo.rank if trace is not None and trace.distributedInfo is not None else None
    if rank is None:
        rank = rank_from_name(path)
    if rank is None:
        rank = options.rank
    rank = int(rank or 0)

    prof = Profile()
    strings = prof.strings
    # chunk-local string ids → profile ids, in chunk order (same ids as one sequential pass)
    name_ids = [strings.intern_many(c.names)[c.name_ids] if len(c.name_ids) else c.name_ids for c in parts]
    cat_ids = [strings.intern_many(c.cats)[c.cat_ids] if len(c.cat_ids) else c.cat_ids for c in parts]
    cat = lambda k: np.concatenate([getattr(c, k) for c in parts])  # noqa: E731
    kind, ts_ns, dur_ns, pid, tid = cat("kind"), cat("ts_ns"), cat("dur_ns"), cat("pid"), cat("tid")
    n = len(ts_ns)

    # Kineto writes ts relative to baseTimeNanoseconds when present, else as absolute epoch µs.
    # Either way the profile's base becomes the first event, so every time starts at 0.
    base_ns = int(trace.baseTimeNanoseconds) if trace is not None and trace.baseTimeNanoseconds else 0
    mem_t = np.concatenate([c.mem_t for c in parts])
    starts = [int(ts_ns.min())] if n else []
    starts += [int(mem_t.min())] if len(mem_t) else []
    shift = min(starts) if starts else 0
    prof.base_ns = base_ns + shift
    ts_ns -= shift

    cat_all = np.concatenate(cat_ids).astype(np.int32) if n else np.zeros(0, np.int32)
    launch = np.full(n, -1, np.int32)
    offset = 0
    for c in parts:  # chunk rows → profile rows; chunk string ids → profile ids
        if len(c.launch_rows):
            launch[offset + c.launch_rows] = strings.intern_many(c.launch_names)[c.launch_ids]
        offset += len(c.ts_ns)
    is_dev = (kind == K_KERNEL) | (kind == K_MEMCPY) | (kind == K_MEMSET)
    gpu_ann = strings.get("gpu_user_annotation")
    if gpu_ann >= 0:
        is_dev |= cat_all == gpu_ann
    prof.events = Table(EVENT_SCHEMA, {
        "name": np.concatenate(name_ids) if n else np.zeros(0, np.int32),
        "kind": kind, "start": ts_ns, "dur": dur_ns,
        "rank": np.full(n, rank, np.int32),
        "device": np.where(is_dev, pid, -1).astype(np.int32),
        "track": tid, "corr": cat("corr"), "ext": cat("ext"), "cat": cat_all, "launch": launch,
    })

    if len(mem_t):
        t = mem_t - shift
        order = np.argsort(t, kind="stable")
        series = np.array([strings.intern(s) for s in MEMORY_SERIES], np.int32)
        prof.counters = Table(COUNTER_SCHEMA, {
            "rank": np.full(len(t), rank, np.int32),
            "name": series[np.concatenate([c.mem_series for c in parts])][order],
            "t": t[order],
            "value": np.concatenate([c.mem_v for c in parts])[order],
        })
    odd = sum(c.odd for c in parts)
    if odd:
        prof.warn(f"{path.name}: skipped {odd} odd events")

    info = {"path": str(path), "format": NAME, "events": sum(c.n_events for c in parts), "rank": rank}
    if trace is not None and trace.deviceProperties:
        info["devices"] = [d.get("name") for d in trace.deviceProperties if isinstance(d, dict)]
    if trace is not None and trace.distributedInfo is not None and trace.distributedInfo.world_size:
        info["world_size"] = trace.distributedInfo.world_size
    prof.run["sources"] = [info]
    prof.run.setdefault("thread_names", {})[str(rank)] = {k: v for c in parts for k, v in c.thread_names.items()}
    prof.run.setdefault("process_names", {})[str(rank)] = {k: v for c in parts for k, v in c.process_names.items()}
    dropped = sum(c.dropped for c in parts)
    if dropped:
        prof.run.setdefault("dropped_events", {})[str(path)] = dropped
    return prof

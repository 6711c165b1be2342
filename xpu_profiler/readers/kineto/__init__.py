"""PyTorch profiler (Kineto) Chrome traces: `*.pt.trace.json[.gz]`, vLLM profiler dirs.

Reading goes in three steps, one module each: ``stream`` reads the file in blocks and
decodes its events in chunks cut between two events as they come (in parallel for
large files) with the typed ``schema``; a file it cannot take is read whole, and
``decode`` finds the events array in it and decodes it in chunks;
``columns`` pulls numpy columns out of each chunk; ``read`` here joins the chunks into
one Profile on one time base.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...core.errors import TraceError
from ...core.profile import (
    COMM_SCHEMA,
    COUNTER_SCHEMA,
    EVENT_SCHEMA,
    FRAME_SCHEMA,
    K_KERNEL,
    K_MEMCPY,
    K_MEMSET,
    Profile,
    Table,
)
from ..base import ReadOptions, looks_like_kineto, resolve_rank
from ..begin_end import Mark, pair
from ..content import read_bytes
from .columns import MAX_US, MEMORY_SERIES, REDUNDANT_UNUSED
from .columns import columns as to_columns
from .decode import ChunkFailed, decode_all, decode_whole, top_level, top_level_exact
from .schema import Args, Event
from .stream import read_streamed
from .tolerant import from_document, merge_skips, offset_skips, skip_lines

NAME = "kineto"
#: what the run record keeps of Kineto's deviceProperties (enough to know the part: ``devices``)
DEVICE_PROPERTIES = ("id", "name", "totalGlobalMem", "computeMajor", "computeMinor", "numSms", "warpSize")
MAX_RANK = 1 << 20  # a declared rank beyond it is no rank of a real job


def sniff(path: Path, head: bytes) -> bool:
    return looks_like_kineto(head)


def read(path: Path, options: ReadOptions) -> Profile:
    streamed = read_streamed(path, options.progress)
    trace, parts, notes = (*streamed, []) if streamed is not None else _read_whole(path)
    return _assemble(path, options, trace, parts, notes)


def _read_whole(path: Path) -> tuple:
    """The whole (decompressed) file in memory: for files the stream cannot take."""
    data = read_bytes(path)
    notes: list[str] = []
    try:
        trace, raw = top_level(path, data)
    except TraceError as e:  # NaN, a huge number, an odd top-level field: the tolerant parse
        if not e.problem.startswith(("malformed JSON", "not a valid trace:")):
            raise
        trace, parts, notes = from_document(path, data)
        raw = None
    if raw is not None:
        try:
            parts = decode_all(path, raw)
        except ChunkFailed:
            if trace is not None:  # the located array may have been a guess: find it exactly
                trace, raw = top_level_exact(path, data)
            try:
                parts = decode_all(path, raw)
            except ChunkFailed:
                parts = [decode_whole(path, raw, trace is not None)]
    del raw, data
    return trace, parts, notes


def _assemble(path: Path, options: ReadOptions, trace, parts: list, notes: list[str]) -> Profile:
    parts = _with_slices(path, parts, notes)
    unused = _unused(parts)
    if sum(len(c.ts_ns) + len(c.mem_t) for c in parts) == 0 and unused and not any(c.skipped for c in parts):
        # events of kinds the analysis does not read, and nothing else: what they were, named
        raise TraceError(path, f"nothing to analyse: {_events_line(unused)}, no slice (X, or a B/E pair)")
    skipped = _skipped(path, parts)
    declared = trace.distributedInfo.rank if trace is not None and trace.distributedInfo is not None else None
    if declared is not None and not 0 <= declared < MAX_RANK:
        notes.append(f"{path.name}: ignored the odd top-level field 'distributedInfo' (rank {str(declared)[:24]})")
        declared = trace.distributedInfo = None
    rank = int(resolve_rank(path, options, declared) or 0)

    prof = Profile()
    strings = prof.strings
    # chunk-local string ids → profile ids, in chunk order (same ids as one sequential pass)
    name_ids = [strings.intern_many(c.names)[c.name_ids] if len(c.name_ids) else c.name_ids for c in parts]
    cat_ids = [strings.intern_many(c.cats)[c.cat_ids] if len(c.cat_ids) else c.cat_ids for c in parts]

    def cat(k: str) -> np.ndarray:
        """A column of every chunk joined; the chunks' own copies go (peak memory)."""
        out = np.concatenate([getattr(c, k) for c in parts])
        if k != "ts_ns":  # chunk lengths are read from ts_ns below
            for c in parts:
                setattr(c, k, out[:0])
        return out

    kind, ts_ns, dur_ns, pid, tid = cat("kind"), cat("ts_ns"), cat("dur_ns"), cat("pid"), cat("tid")
    n = len(ts_ns)

    # Kineto writes ts relative to baseTimeNanoseconds when present, else as absolute epoch µs.
    # Either way the profile's base becomes the first event, so every time starts at 0.
    base_ns = int(trace.baseTimeNanoseconds) if trace is not None and trace.baseTimeNanoseconds else 0
    if not 0 <= base_ns < 1 << 62:  # no clock reads that: the times stay relative
        notes.append(f"{path.name}: ignored baseTimeNanoseconds {str(base_ns)[:24]} (out of range)")
        base_ns = 0
    mem_t = np.concatenate([c.mem_t for c in parts])
    starts = [int(ts_ns.min())] if n else []
    starts += [int(mem_t.min())] if len(mem_t) else []
    starts += [int(c.frame_ts_ns.min()) for c in parts if len(c.frame_ts_ns)]  # a host gap's frames come first
    shift = min(starts) if starts else 0
    prof.base_ns = base_ns + shift
    ts_ns -= shift

    cat_all = np.concatenate(cat_ids).astype(np.int32) if n else np.zeros(0, np.int32)
    launch = np.full(n, -1, np.int32)
    comm = np.full(n, -1, np.int32)
    comm_parts: list[dict] = []
    offset = n_comm = 0
    for c in parts:  # chunk rows → profile rows; chunk string ids → profile ids
        if len(c.launch_rows):
            launch[offset + c.launch_rows] = strings.intern_many(c.launch_names)[c.launch_ids]
        offset += len(c.ts_ns)
    offset = 0
    for c in parts:  # the same for the collectives' metadata (strings after the launches': chunking-proof)
        if len(c.comm_rows):
            remap = strings.intern_many(c.comm_strings) if c.comm_strings else np.zeros(0, np.int32)
            comm[offset + c.comm_rows] = n_comm + np.arange(len(c.comm_rows))
            comm_parts.append(
                {
                    **{
                        k: np.where(v >= 0, remap[np.maximum(v, 0)] if len(remap) else -1, -1)
                        for k, v in (
                            ("coll", c.comm_coll),
                            ("pg", c.comm_pg),
                            ("pg_ranks", c.comm_pg_ranks),
                            ("dtype", c.comm_dtype),
                        )
                    },
                    "seq": c.comm_seq,
                    "in_nelems": c.comm_in_nelems,
                    "out_nelems": c.comm_out_nelems,
                    "group_size": c.comm_group_size,
                }
            )
            n_comm += len(c.comm_rows)
        offset += len(c.ts_ns)
    empty = strings.get("")
    if n and empty >= 0 and (cat_all == empty).all():  # no category anywhere: not a PyTorch profiler trace
        kind[:] = K_KERNEL
        notes.append(
            f"{path.name}: no event names a category (not a PyTorch profiler trace): its {n} slices are taken "
            "as device work, one stream per (pid, tid)"
        )
    is_dev = (kind == K_KERNEL) | (kind == K_MEMCPY) | (kind == K_MEMSET)
    gpu_ann = strings.get("gpu_user_annotation")
    if gpu_ann >= 0:
        is_dev |= cat_all == gpu_ann
    prof.events = Table(
        EVENT_SCHEMA,
        {
            "name": np.concatenate(name_ids) if n else np.zeros(0, np.int32),
            "kind": kind,
            "start": ts_ns,
            "dur": dur_ns,
            "rank": np.full(n, rank, np.int32),
            "device": np.where(is_dev, pid, -1).astype(np.int32),
            "track": tid,
            "corr": cat("corr"),
            "ext": cat("ext"),
            "cat": cat_all,
            "launch": launch,
            "comm": comm,
            "flops": cat("flops"),
        },
    )
    if n_comm:
        prof.comms = Table(
            COMM_SCHEMA,
            {
                "rank": np.full(n_comm, rank, np.int32),
                **{k: np.concatenate([p[k] for p in comm_parts]) for k in comm_parts[0]},
            },
        )

    if len(mem_t):
        t = mem_t - shift
        order = np.argsort(t, kind="stable")
        series = np.array([strings.intern(s) for s in MEMORY_SERIES], np.int32)
        prof.counters = Table(
            COUNTER_SCHEMA,
            {
                "rank": np.full(len(t), rank, np.int32),
                "name": series[np.concatenate([c.mem_series for c in parts])][order],
                "t": t[order],
                "value": np.concatenate([c.mem_v for c in parts])[order],
            },
        )
    prof.frames = _frames(parts, strings, shift, rank)
    odd = {k: v for k, v in unused.items() if k not in REDUNDANT_UNUSED}
    if odd:
        notes.append(f"{path.name}: not used by the analysis: {_events_line(odd)}")
    for line in notes + skip_lines(path.name, skipped):
        prof.warn(line)

    info = {"path": str(path), "format": NAME, "events": sum(c.n_events for c in parts), "rank": rank}
    if unused:
        info["unused_events"] = {k: v[0] for k, v in unused.items()}
    if trace is not None and trace.deviceProperties:
        info["devices"] = [d.get("name") for d in trace.deviceProperties if isinstance(d, dict)]
        info["device_properties"] = [
            {k: d[k] for k in DEVICE_PROPERTIES if k in d and isinstance(d[k], (str, int, float))}
            for d in trace.deviceProperties
            if isinstance(d, dict)
        ][:64]
    if trace is not None and trace.distributedInfo is not None and trace.distributedInfo.world_size:
        info["world_size"] = trace.distributedInfo.world_size
    if trace is not None and trace.host_name:
        info["host"] = trace.host_name[:256]
    prof.run["sources"] = [info]
    prof.run.setdefault("thread_names", {})[str(rank)] = {k: v for c in parts for k, v in c.thread_names.items()}
    prof.run.setdefault("process_names", {})[str(rank)] = {k: v for c in parts for k, v in c.process_names.items()}
    engines: dict[str, int] = {}
    for c in parts:
        for k, v in c.py_engines.items():
            engines[k] = engines.get(k, 0) + v
    if engines:  # which engine's code ran (the findings speak its language)
        prof.run["python_frames"] = engines
    dropped = sum(c.dropped for c in parts)
    if dropped:
        prof.run.setdefault("dropped_events", {})[str(path)] = dropped
    return prof


def _frames(parts: list, strings, shift: int, rank: int) -> Table:
    """The Python frames of every chunk on the profile's time base (their names interned
    after every event's, so the events' string ids are those of a trace without them)."""
    if not any(len(c.frame_ts_ns) for c in parts):
        return Table(FRAME_SCHEMA)
    start = np.concatenate([c.frame_ts_ns for c in parts]) - shift
    return Table(
        FRAME_SCHEMA,
        {
            "rank": np.full(len(start), rank, np.int32),
            "track": np.concatenate([c.frame_tid for c in parts]),
            "name": np.concatenate(
                [strings.intern_many(c.frame_names)[c.frame_name_ids] for c in parts if len(c.frame_ts_ns)]
            ),
            "start": start,
            "dur": np.concatenate([c.frame_dur_ns for c in parts]),
        },
    )


def _skipped(path: Path, parts: list) -> dict:
    """The odd events every chunk skipped, numbered in the whole array; a file whose events
    were all odd is no usable trace."""
    offset, found = 0, []
    for c in parts:
        if c.skipped:
            found.append(offset_skips(c.skipped, offset))
        offset += c.n_events
    if offset == 0:
        raise TraceError(path, "not a valid trace: no events (its traceEvents array is empty)")
    skipped = merge_skips(found)
    if not skipped and sum(len(c.ts_ns) + len(c.mem_t) for c in parts) == 0:
        raise TraceError(
            path, f"not a valid trace: no timed event among its {offset:,} (metadata, instants or kinds not read)"
        )
    if skipped and sum(len(c.ts_ns) + len(c.mem_t) for c in parts) == 0:  # track names alone are nothing
        n = sum(v[0] for v in skipped.values())
        lines = skip_lines("", skipped)
        raise TraceError(
            path,
            f"not a valid trace: no usable event, all {n} skipped"
            f" ({'; '.join(x.removeprefix(': skipped ') for x in lines)})",
        )
    return skipped


def _with_slices(path: Path, parts: list, notes: list[str]) -> list:
    """The Begin/End (and async b/e) events of every chunk paired into slices (``begin_end``),
    as one more chunk of columns: a pair may span chunks, so pairing waits for all of them."""
    marks, offset, no_time = [], 0, 0
    for c in parts:
        for i, code, key, name, ts, begin in c.marks:
            if ts != ts or abs(ts) > MAX_US:  # NaN or absurd: no slice can be made of it
                no_time += 1
                continue
            marks.append(Mark((code <= 4, key), name, ts, code in (3, 5), (offset + i, begin)))
        offset += c.n_events
        c.marks = []
    if not marks and not no_time:
        return parts
    slices, unmatched = pair(marks)
    backwards = [sl for sl in slices if sl.dur < 0]
    if backwards:
        i, b = backwards[0].payload
        notes.append(
            f"{path.name}: skipped {len(backwards)} begin/end pair(s) ending before they begin (first: #{i} {str(b.name)[:60]!r})"
        )
        slices = [sl for sl in slices if sl.dur >= 0]
    events = [_as_slice(sl.payload[1], sl.start, sl.dur) for sl in slices]
    if unmatched or no_time:
        notes.append(
            f"{path.name}: skipped {unmatched + no_time} begin/end event(s) without a partner or a usable time"
        )
    if not events:
        return parts
    cols = to_columns(path, events)
    cols.n_events = 0  # counted in their own chunks
    return [*parts, cols]


def _as_slice(begin, ts: float, dur: float) -> Event:
    """A complete event made of a Begin event (its name, category, ids and args) and its span."""
    args = getattr(begin, "args", Args())
    return Event(name=begin.name, cat=begin.cat, pid=begin.pid, tid=begin.tid, ts=ts, dur=dur, args=args, ph="X")


def _unused(parts: list) -> dict:
    """Events of phases the analysis does not use, over all chunks: label → [count, first index, name]."""
    out: dict[str, list] = {}
    offset = 0
    for c in parts:
        for label, (k, i, name) in c.unused.items():
            got = out.setdefault(label, [0, offset + i, name])
            got[0] += k
        offset += c.n_events
    return out


def _events_line(unused: dict) -> str:
    """``24,620 flow events (first: 'ac2g', #35), 2 instant events (...)``."""
    return ", ".join(
        f"{k:,} {label} event{'s' if k != 1 else ''} (first: {name!r}, #{i})"
        for label, (k, i, name) in sorted(unused.items(), key=lambda kv: -kv[1][0])
    )

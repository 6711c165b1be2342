"""The decoded chunks of one trace joined into a Profile's tables.

Chunk-local string ids become the profile's (interned in the order one sequential pass
would: names, categories, launches, collectives, memory series, frames), chunk rows become
profile rows, and every time moves onto one base: the first event.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...core.profile import (
    COMM_SCHEMA,
    COUNTER_SCHEMA,
    EVENT_SCHEMA,
    FRAME_SCHEMA,
    K_KERNEL,
    K_MEMCPY,
    K_MEMSET,
    Profile,
    StringTable,
    Table,
)
from .cols import MEMORY_SERIES


def add_tables(prof: Profile, path: Path, trace, parts: list, rank: int, notes: list[str]) -> None:
    """The events (with their launches and collectives), the collectives' metadata, the memory
    counters and the Python frames of every chunk, on the profile's time base."""
    strings = prof.strings
    # chunk-local string ids → profile ids, in chunk order (same ids as one sequential pass)
    name_ids = [strings.intern_many(c.names)[c.name_ids] if len(c.name_ids) else c.name_ids for c in parts]
    cat_ids = [strings.intern_many(c.cats)[c.cat_ids] if len(c.cat_ids) else c.cat_ids for c in parts]
    kind, ts_ns, dur_ns, pid, tid = (_joined(parts, k) for k in ("kind", "ts_ns", "dur_ns", "pid", "tid"))
    n = len(ts_ns)
    mem_t = np.concatenate([c.mem_t for c in parts])
    shift = _time_base(prof, path, trace, parts, ts_ns, mem_t, notes)
    ts_ns -= shift
    cat_all = np.concatenate(cat_ids).astype(np.int32) if n else np.zeros(0, np.int32)
    launch = _launches(parts, strings, n)
    comm, comms = _collectives(parts, strings, n, rank)
    is_dev = _device_rows(path, strings, kind, cat_all, notes)
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
            "corr": _joined(parts, "corr"),
            "ext": _joined(parts, "ext"),
            "cat": cat_all,
            "launch": launch,
            "comm": comm,
            "flops": _joined(parts, "flops"),
            "copy": _joined(parts, "copy"),
        },
    )
    if comms is not None:
        prof.comms = comms
    if len(mem_t):
        prof.counters = _memory(parts, strings, mem_t - shift, rank)
    prof.frames = _frames(parts, strings, shift, rank)


def _joined(parts: list, k: str) -> np.ndarray:
    """A column of every chunk joined; the chunks' own copies go (peak memory)."""
    out = np.concatenate([getattr(c, k) for c in parts])
    if k != "ts_ns":  # chunk lengths are read from ts_ns below
        for c in parts:
            setattr(c, k, out[:0])
    return out


def _time_base(
    prof: Profile, path: Path, trace, parts: list, ts_ns: np.ndarray, mem_t: np.ndarray, notes: list[str]
) -> int:
    """Set the profile's base to the first event (or memory sample, or frame); returns the
    shift (ns) every time of the chunks is moved by."""
    # Kineto writes ts relative to baseTimeNanoseconds when present, else as absolute epoch µs.
    # Either way the profile's base becomes the first event, so every time starts at 0.
    base_ns = int(trace.baseTimeNanoseconds) if trace is not None and trace.baseTimeNanoseconds else 0
    if not 0 <= base_ns < 1 << 62:  # no clock reads that: the times stay relative
        notes.append(f"{path.name}: ignored baseTimeNanoseconds {str(base_ns)[:24]} (out of range)")
        base_ns = 0
    starts = [int(ts_ns.min())] if len(ts_ns) else []
    starts += [int(mem_t.min())] if len(mem_t) else []
    starts += [int(c.frame_ts_ns.min()) for c in parts if len(c.frame_ts_ns)]  # a host gap's frames come first
    shift = min(starts) if starts else 0
    prof.base_ns = base_ns + shift
    return shift


def _launches(parts: list, strings: StringTable, n: int) -> np.ndarray:
    """The ``launch`` column: the name id of the kernel each runtime launch names, -1."""
    launch = np.full(n, -1, np.int32)
    offset = 0
    for c in parts:  # chunk rows → profile rows; chunk string ids → profile ids
        if len(c.launch_rows):
            launch[offset + c.launch_rows] = strings.intern_many(c.launch_names)[c.launch_ids]
        offset += len(c.ts_ns)
    return launch


def _collectives(parts: list, strings: StringTable, n: int, rank: int) -> tuple[np.ndarray, Table | None]:
    """The ``comm`` column (row in the comms table, -1) and the comms table: the collectives'
    metadata (their strings interned after the launches': chunking-proof), None without any."""
    comm = np.full(n, -1, np.int32)
    comm_parts: list[dict] = []
    offset = n_comm = 0
    for c in parts:
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
    if not n_comm:
        return comm, None
    return comm, Table(
        COMM_SCHEMA,
        {
            "rank": np.full(n_comm, rank, np.int32),
            **{k: np.concatenate([p[k] for p in comm_parts]) for k in comm_parts[0]},
        },
    )


def _device_rows(
    path: Path, strings: StringTable, kind: np.ndarray, cat_all: np.ndarray, notes: list[str]
) -> np.ndarray:
    """Which events run on a device (kernels, copies, fills, GPU annotations). In a trace where
    no event names a category, every slice is device work (``kind`` is set so)."""
    n = len(kind)
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
    return is_dev


def _memory(parts: list, strings: StringTable, t: np.ndarray, rank: int) -> Table:
    """The ``[memory]`` samples of every chunk as counters in time order (``t``: on the base)."""
    order = np.argsort(t, kind="stable")
    series = np.array([strings.intern(s) for s in MEMORY_SERIES], np.int32)
    return Table(
        COUNTER_SCHEMA,
        {
            "rank": np.full(len(t), rank, np.int32),
            "name": series[np.concatenate([c.mem_series for c in parts])][order],
            "t": t[order],
            "value": np.concatenate([c.mem_v for c in parts])[order],
        },
    )


def _frames(parts: list, strings: StringTable, shift: int, rank: int) -> Table:
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

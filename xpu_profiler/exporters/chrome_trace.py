"""Chrome / Perfetto trace JSON (`.json`, `.json.gz`) that imports with zero errors.

Layout: one process per rank; in it one track for engine steps (slices named by
phase, tokens in args: ``chrome_steps``), one for the steps' device spans, one per host thread, one
per device stream (with extra "lane" tracks where kernels on a stream overlap),
counter tracks for memory, KV-cache usage, throughput and each step's device idle
by cause, the Python stack frames beside their thread (``chrome_frames``), and flow
arrows from each launch to its device work (``chrome_device``). The rules followed are
those of Perfetto's JSON importer: `traceEvents` first, integer-derived µs with at most 3 decimals,
events sorted by (ts, -dur), exactly one name per process and thread, no
partially overlapping slices on a track, no NaN.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ..core import atomic_write
from ..core.fmt import place
from ..core.intervals import distinct_rows, lanes
from ..core.ordering import lexsort, lexsort_taking
from ..core.profile import DEVICE_KINDS, K_ANNOTATION, KINDS, PHASES, Profile, Table
from ..knowledge.taxonomy import FUSED_OPS
from ..summary import Summary
from . import trace_stream
from .chrome_device import device_step_tracks, flow_pairs
from .chrome_frames import add_frames
from .chrome_rows import ROW_SEP, S_COUNTER, S_FLOW, S_FRAME, S_SLICE, S_TEXT, Rows
from .chrome_steps import engine_steps
from .trace_findings import markers
from .trace_host import host_path_slices
from .trace_layers import layer_slices
from .validate import JS_SAFE

NAME = "perfetto"
#: a bare ".json" is no Perfetto trace's name: it could as well be the summary's (``-o`` refuses it)
SUFFIXES = (".json.gz", ".trace.json", ".trace.json.gz")

HOST_TID0 = 100
DEVICE_TID0 = 10_000
MAX_DEPTH = 500  # Perfetto drops slices deeper than 512

_encoder = msgspec.json.Encoder()


def _changes(c: Table, ok: np.ndarray) -> np.ndarray:
    """``ok`` less the counter samples that repeat their series' previous value: a counter
    track is a step function, so they draw nothing (a memory event leaves the reserved
    total as it was, most of the time)."""
    sel = np.flatnonzero(ok)
    o = sel[lexsort((c["t"][sel], c["rank"][sel], c["name"][sel]))]
    name, rank, value = c["name"][o], c["rank"][o], c["value"][o]
    repeat = (name[1:] == name[:-1]) & (rank[1:] == rank[:-1]) & (value[1:] == value[:-1])
    ok = ok.copy()
    ok[o[1:][repeat]] = False
    return ok


@dataclass
class _Bulk:
    """What the export needs of the profile before its attribution: the tracks and their
    metadata, the exported events (``idx``) and where they go, flows and counters as
    columns (in ``rows``). The slices are set on ``rows`` once attributed (``_set_slices``)."""

    pid_of: dict[int, int]
    meta: list[dict[str, Any]]
    rows: Rows
    kinds: list[np.ndarray]  # per source block, in the order the rows are numbered: kind, ts, dur
    ts: list[np.ndarray | None]  # None: the slices' events' own starts
    dur: list[np.ndarray | None]  # None: those events' own durations (slices), else zeros
    idx: np.ndarray  # the exported events (rows of the event columns), ascending
    tid: np.ndarray  # their tracks
    pid: np.ndarray  # their processes
    name_json: dict[int, bytes]
    columns: tuple  # the profile's columns it was made from (``take_ahead``)


AHEAD_BYTES_PER_EVENT = 96  # the transient peak of ``bulk`` per kept event (measured: 91, 2.97M events)
#: the event columns ``bulk`` reads (attribution adds others and never replaces these)
_BULK_COLUMNS = ("name", "kind", "start", "dur", "rank", "device", "track", "corr")


def _columns(profile: Profile) -> tuple:
    return (
        *(profile.events[c] for c in _BULK_COLUMNS),
        *(profile.counters[c] for c in profile.counters.schema),
        *(profile.frames[c] for c in profile.frames.schema),
    )


def ahead(profile: Profile) -> _Bulk:
    """The attribution- and summary-free part of the export, done ahead (while the profile
    is attributed, in another thread: it is numpy's work, mostly without the GIL); ``write``
    takes it back (``ahead=``) and uses it while the columns it read are the same."""
    return bulk(profile)


def usable(b: Any, profile: Profile) -> _Bulk | None:
    """The work done ahead, if it was made from the profile's columns as they are now."""
    if isinstance(b, _Bulk) and all(x is y for x, y in zip(b.columns, _columns(profile), strict=True)):
        return b
    return None


def bulk(profile: Profile) -> _Bulk:
    """Tracks (with lanes where slices overlap), launch → device flows, counters: all that
    needs no attribution."""
    ev, strings = profile.events, profile.strings
    meta: list[dict[str, Any]] = []
    ranks = profile.ranks or [0]
    pid_of = {r: i + 1 for i, r in enumerate(ranks)}
    timed = ev["start"] >= 0
    host_ann = (ev["kind"] == K_ANNOTATION) & (ev["device"] < 0)
    idx = np.flatnonzero(timed & ((ev["kind"] != K_ANNOTATION) | host_ann))  # no gpu_user_annotation twins
    rank = ev["rank"][idx]
    tid, label_of = _tracks(profile, idx, rank, pid_of, meta)
    enc = _encoder.encode
    rows = Rows()
    name_json = {int(i): enc(strings[int(i)] or "[no name]") for i in np.unique(ev["name"][idx])}
    pid_col = (
        np.array([pid_of[r] for r in ranks], np.int32)[np.searchsorted(np.array(ranks), rank)]
        if len(idx)
        else np.zeros(0, np.int32)
    )
    del rank
    # per block of rows: kind, ts and dur (None: the slices' own columns; zeros)
    blocks: tuple[list, list, list] = ([np.full(len(idx), S_SLICE, np.int8)], [None], [None])
    _add_flows(profile, idx, tid, pid_col, rows, blocks)  # launch → device work arrows
    _add_counters(profile, ranks, pid_of, rows, blocks)
    add_frames(profile, pid_of, label_of, rows, MAX_DEPTH, meta, blocks)  # beside their threads
    kinds_all, ts_all, dur_all = blocks
    return _Bulk(
        pid_of, meta, rows, kinds_all, ts_all, dur_all, idx.astype(np.int32), tid, pid_col, name_json, _columns(profile)
    )


def _tracks(
    profile: Profile, idx: np.ndarray, rank: np.ndarray, pid_of: dict[int, int], meta: list[dict[str, Any]]
) -> tuple[np.ndarray, dict[tuple[int, int], tuple[str, int]]]:
    """Each exported event's track: one per (rank, host thread) and (rank, device stream),
    with lanes where its slices overlap; their names added to ``meta``. (tids, host thread →
    (its name, its last lane))."""
    ev = profile.events
    thread_names = profile.run.get("thread_names", {})
    is_dev = (np.isin(ev["kind"][idx], DEVICE_KINDS) | (ev["device"][idx] >= 0)).astype(np.int8)
    # tracks: (rank, host/device, device, thread or stream) → tid, with lanes where slices overlap
    uniq, inv = distinct_rows(rank, is_dev, ev["device"][idx], ev["track"][idx])
    del is_dev
    by_track = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[by_track], np.arange(len(uniq) + 1))
    del inv
    tid = np.zeros(len(idx), np.int32)
    ev_start, ev_dur = ev["start"], ev["dur"]
    next_tid: dict[tuple[int, int], int] = {}
    label_of: dict[tuple[int, int], tuple[str, int]] = {}  # host thread → (its name, its last lane)
    for u, (r, dev, d, tr) in enumerate(uniq.tolist()):
        m = by_track[bounds[u] : bounds[u + 1]]
        rows_m = idx[m]
        start_m = ev_start[rows_m]
        lane_of = lanes(start_m, start_m + ev_dur[rows_m], MAX_DEPTH)
        del rows_m, start_m
        n_lanes = int(lane_of.max()) + 1 if len(lane_of) else 1
        base = (DEVICE_TID0 if dev else HOST_TID0) + next_tid.get((r, dev), 0)
        next_tid[(r, dev)] = next_tid.get((r, dev), 0) + n_lanes
        if dev:
            label = f"device {d} stream {tr}"
        else:
            tname = thread_names.get(str(r), {})
            label = next((v for k, v in tname.items() if k.endswith(f":{tr}")), None) or f"thread {tr}"
            label_of[(r, tr)] = (label, base + n_lanes - 1)
        tid[m] = base + lane_of
        meta += _lane_meta(pid_of[r], base, n_lanes, label)
    return tid, label_of


def _lane_meta(pid: int, base: int, n_lanes: int, label: str) -> list[dict[str, Any]]:
    """The names and sort indexes of a track's lanes (tids ``base``, ``base`` + 1, ...)."""
    meta: list[dict[str, Any]] = []
    for lane in range(n_lanes):
        t = base + lane
        meta.append(
            {
                "ph": "M",
                "pid": pid,
                "tid": t,
                "name": "thread_name",
                "args": {"name": label if lane == 0 else f"{label} (lane {lane + 1})"},
            }
        )
        meta.append({"ph": "M", "pid": pid, "tid": t, "name": "thread_sort_index", "args": {"sort_index": t}})
    return meta


def _add_flows(
    profile: Profile,
    idx: np.ndarray,
    tid: np.ndarray,
    pid_col: np.ndarray,
    rows: Rows,
    blocks: tuple[list, list, list],
) -> None:
    """The launch → device work flows set on ``rows``, their block of rows (kinds, ts, dur)
    added to ``blocks``: an ``s`` and an ``f`` row per pair."""
    flow = flow_pairs(profile, idx, tid, pid_col)
    rows.set_flows(*flow)
    flow_ts = np.empty(2 * len(flow[0]), np.int64)
    flow_ts[0::2], flow_ts[1::2] = flow[0], flow[3]
    for block, part in zip(blocks, (np.full(len(flow_ts), S_FLOW, np.int8), flow_ts, None)):
        block.append(part)


def _add_counters(
    profile: Profile, ranks: list[int], pid_of: dict[int, int], rows: Rows, blocks: tuple[list, list, list]
) -> None:
    """The counters set on ``rows`` (one series per event: the set of keys is fixed by the
    first event), each sample where its series changes; their block of rows added to
    ``blocks``. Nothing when there are none."""
    c = profile.counters
    if not len(c):
        return
    enc, strings = _encoder.encode, profile.strings
    ok = _changes(c, np.isin(c["rank"], ranks) & (c["t"] >= 0) & np.isfinite(c["value"]))
    cname = {int(i): enc(strings[int(i)]) for i in np.unique(c["name"][ok])}
    c_pid = np.array([pid_of.get(int(r_), 0) for r_ in range(int(c["rank"].max()) + 1)] if len(c) else [], np.int64)
    c_rank = c["rank"][ok].astype(np.int64)
    rows.set_counters(
        cname,
        c["name"][ok],
        c_pid[c_rank] if len(c_rank) else c_rank,
        c["t"][ok].astype(np.int64),
        c["value"][ok].astype(np.float64),
    )
    for block, part in zip(blocks, (np.full(int(ok.sum()), S_COUNTER, np.int8), c["t"][ok], None)):
        block.append(part)


def _set_slices(profile: Profile, b: _Bulk) -> None:
    """The slices, with what the attribution says of each event (fused op, step, phase)."""
    b.rows.set_slices(
        profile.events, b.idx, b.tid, b.pid, b.name_json, list(KINDS), list(FUSED_OPS), list(PHASES), JS_SAFE
    )


def _text_block(ts: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.full(len(ts), S_TEXT, np.int8), ts, dur


def _times(profile: Profile, rows: Rows, kinds: list, ts: list, dur: list) -> tuple[np.ndarray, np.ndarray]:
    """Every row's ts and -dur, block after block, in one array each (no copy per block)."""
    n = sum(len(k) for k in kinds)
    ts_cat, neg_dur = np.empty(n, np.int64), np.zeros(n, np.int64)
    at = 0
    for k, t, d in zip(kinds, ts, dur):
        part = slice(at, at + len(k))
        if t is None:  # the slices
            np.take(profile.events["start"], rows.s_idx, out=ts_cat[part], mode="clip")
            np.take(profile.events["dur"], rows.s_idx, out=neg_dur[part], mode="clip")
        else:
            ts_cat[part] = t
            if d is not None:
                neg_dur[part] = d
        at += len(k)
    np.negative(neg_dur, out=neg_dur)
    return ts_cat, neg_dur


def prepare(profile: Profile, summary: Summary | None = None, ahead: Any = None) -> tuple[list[dict[str, Any]], Rows]:
    """Metadata events (dicts) and every other event as ``Rows`` in the order written.
    With the summary, each rank's process says its place in the parallel layout.

    Slices, flows and counters stay columns (``chrome_rows``): formatted a chunk at a
    time when written, so million-event profiles export in about a second.
    """
    b = usable(ahead, profile) or bulk(profile)
    _set_slices(profile, b)
    pid_of, rows = b.pid_of, b.rows
    meta: list[dict[str, Any]] = []
    places = (
        {row.rank: place(row.groups, summary.parallel.sizes) for row in summary.ranks} if summary is not None else {}
    )
    for r, pid in pid_of.items():
        label = f"rank {r} ({places[r]})" if places.get(r) else f"rank {r}"
        meta.append({"ph": "M", "pid": pid, "tid": pid, "name": "process_name", "args": {"name": label}})
        meta.append({"ph": "M", "pid": pid, "tid": pid, "name": "process_sort_index", "args": {"sort_index": r}})
    meta += b.meta
    d_meta, d_texts, d_ts, d_dur = device_step_tracks(summary, pid_of, _encoder.encode)  # on the device's clock
    s_meta, s_texts, s_ts, s_dur = engine_steps(profile, pid_of, _encoder.encode)
    f_meta, f_texts, f_ts = markers(profile, summary, pid_of)  # findings at the steps where seen
    l_meta, l_texts, l_ts, l_dur = layer_slices(summary, pid_of)  # each step's decoder layers
    h_meta, h_texts, h_ts, h_dur = host_path_slices(summary, pid_of)  # the host time the device waited for
    meta += d_meta + s_meta + f_meta + l_meta + h_meta
    texts = (
        d_texts + s_texts + l_texts + h_texts + f_texts
    )  # the few events formatted one by one, numbered across their blocks
    blocks = [
        *zip(b.kinds[:2], b.ts[:2], b.dur[:2]),  # slices, flows
        _text_block(d_ts, d_dur),
        _text_block(s_ts, s_dur),
        _text_block(l_ts, l_dur),
        _text_block(h_ts, h_dur),
        *zip(b.kinds[2:], b.ts[2:], b.dur[2:]),  # counters, Python frames
        _text_block(f_ts, np.zeros(len(f_ts), np.int64)),
    ]
    kinds_all, ts_all, dur_all = (list(x) for x in zip(*blocks))
    del b

    kind_cat = np.concatenate(kinds_all)
    ts_cat, neg_dur = _times(profile, rows, kinds_all, ts_all, dur_all)
    del ts_all, dur_all
    keys = [neg_dur, ts_cat]
    del ts_cat, neg_dur
    order = lexsort_taking(keys)  # by ts, longer first: parents before children
    # each row's place in its own source: sources are contiguous in kind_cat except the
    # texts, which are numbered across their blocks in the order they were appended
    row_in = np.empty(len(kind_cat), np.int32)
    for k in (S_SLICE, S_FLOW, S_TEXT, S_COUNTER, S_FRAME):
        m = np.flatnonzero(kind_cat == k)
        row_in[m] = np.arange(len(m), dtype=np.int32)
    rows.kind, rows.row = kind_cat[order], row_in[order]
    rows.set_texts(texts)
    return meta, rows


def build(profile: Profile, summary: Summary | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Metadata events (dicts) and every other event as JSON text, in the order written
    (the whole trace in memory: for tests and small profiles; ``write`` streams)."""
    meta, rows = prepare(profile, summary)
    return meta, [t.decode() for t in rows.chunk(0, len(rows))]


def _head_tail(profile: Profile, meta: list[dict[str, Any]], has_rows: bool) -> tuple[bytes, bytes]:
    head = {
        "displayTimeUnit": "ns",
        "metadata": {
            "producer": "xpu_profiler",
            # a string: as a JSON number it would exceed 2^53 and lose precision in JS viewers
            "base_time_ns": str(int(profile.base_ns)),
            "has_timeline": profile.has_timeline,
            "model": str(profile.run.get("model", "")),
            "device": str(profile.run.get("device", "")),
        },
    }
    # traceEvents first: Perfetto sniffs the first bytes to pick its JSON importer
    first = b'{"traceEvents":[\n' + ROW_SEP.join(_encoder.encode(m) for m in meta)
    if meta and has_rows:
        first += ROW_SEP
    return first, b"\n]," + _encoder.encode(head)[1:]  # drop the "{"


def encode_parts(profile: Profile, summary: Summary | None, gzip: bool, ahead: Any = None) -> Iterator[bytes]:
    """The trace file's bytes, in parts (gzip-compressed when ``gzip``): rows are
    formatted and compressed a piece at a time, by worker processes for large traces."""
    meta, rows = prepare(profile, summary, ahead)
    head, tail = _head_tail(profile, meta, len(rows) > 0)

    def fmt(lo: int, hi: int) -> bytes:
        text = rows.text(lo, hi)
        return (ROW_SEP + text) if lo else text

    return trace_stream.encoded(head, len(rows), fmt, tail, gzip)


def to_bytes(profile: Profile, summary: Summary | None = None) -> bytes:
    return b"".join(encode_parts(profile, summary, gzip=False))


def _write_parts(path: Path, parts: Iterable[bytes]) -> None:
    """The parts written in order, into a file renamed over ``path`` when all are in."""
    with atomic_write.replacing(path, "wb") as f:
        for part in parts:
            f.write(part)


def write(profile: Profile, summary: Summary | None, path: str | Path, ahead: Any = None) -> Path:
    """The trace; ``ahead``: what ``ahead(profile)`` made beforehand (used while still valid)."""
    path = Path(path)
    _write_parts(path, encode_parts(profile, summary, gzip=path.name.lower().endswith(".gz"), ahead=ahead))
    return path

"""PyTorch profiler (Kineto) Chrome traces: `*.pt.trace.json[.gz]`, vLLM profiler dirs.

Reading goes in steps, one module each: ``stream`` reads the file in blocks and
decodes its events in chunks cut between two events as they come (in parallel for
large files) with the typed ``schema``; a file it cannot take is read whole, and
``decode`` finds the events array in it and decodes it in chunks;
``columns`` pulls numpy columns out of each chunk; ``join`` joins the chunks' columns into
one Profile's tables on one time base, which ``read`` here completes with the run record.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...core import compression
from ...core.errors import TraceError
from ...core.profile import Profile
from .. import own_outputs
from ..base import FRONT_END, NO_MODEL, ReadOptions, is_rank, looks_like_kineto, resolve_rank
from ..begin_end import Mark, pair
from ..content import HEAD_BYTES, iter_content, read_bytes
from .cols import MAX_US, REDUNDANT_UNUSED
from .columns import columns as to_columns
from .decode import ChunkFailed, decode_all, decode_whole, top_level, top_level_exact
from .join import add_tables
from .schema import Args, Event
from .stream import HEAD_MAX, read_streamed
from .tolerant import from_document, merge_skips, offset_skips, skip_lines

NAME = "kineto"
#: what the run record keeps of Kineto's deviceProperties (enough to know the part: ``devices``)
DEVICE_PROPERTIES = ("id", "name", "totalGlobalMem", "computeMajor", "computeMinor", "numSms", "warpSize")


def sniff(path: Path, head: bytes) -> bool:
    """Chrome/Kineto JSON by its first bytes; an object whose first ``HEAD_BYTES`` hold other
    keys only (a large ``stackFrames`` written before the events) by a ``traceEvents`` key
    further on, within ``stream.HEAD_MAX``, where the reader looks for it too."""
    if looks_like_kineto(head):
        return True
    return len(head) >= HEAD_BYTES and head.lstrip()[:1] == b"{" and _events_key_further(path)


def _events_key_further(path: Path) -> bool:
    seen, tail = 0, b""
    try:
        for block in iter_content(path):
            if _EVENTS_KEY.search(tail + block):
                return True
            seen += len(block)
            if seen > HEAD_MAX:
                return False
            tail = block[-64:]
    except _UNREADABLE:
        return False
    return False


_UNREADABLE: tuple[type[BaseException], ...] = (OSError, *compression.READ_ERRORS)


def read(path: Path, options: ReadOptions) -> Profile:
    streamed = read_streamed(path, options.progress)
    trace, parts, notes = (*streamed, []) if streamed is not None else _read_whole(path)
    if trace is not None and isinstance(trace.metadata, dict) and trace.metadata.get("producer") == "xpu_profiler":
        raise TraceError(path, own_outputs.OWN_TRACE)
    return _assemble(path, options, trace, parts, notes)


def _read_whole(path: Path) -> tuple:
    """The whole (decompressed) file in memory: for files the stream cannot take."""
    data = read_bytes(path)
    notes: list[str] = []
    data = closed_array(path, data, notes)
    repeated = len(_EVENTS_KEY.findall(data, 0, len(data)))
    if repeated > 1:  # (the streamed read declines such a file: its chunks do not decode)
        notes.append(
            f"{path.name}: its 'traceEvents' key is written {repeated} times: the events of the last read, "
            "as JSON readers take a repeated key (Perfetto shows every one's)"
        )
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


#: the events array's key (a second one: a repeated key, which JSON readers take the last of)
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
#: the last complete event of an array a crashed writer left open: "}" then "," (or the end)
_LAST_EVENT_END = re.compile(rb"\}\s*,?\s*$")


def closed_array(path: Path, data: bytes, notes: list[str]) -> bytes:
    """The JSON Array Format without its closing "]" (optional in the Trace Event Format: a
    process that crashed writes exactly that), closed; a partial event after the last complete
    one is left out. Each repair is a note; a document that is no bare array is returned as is."""
    head = data[:4096].lstrip()
    if not head.startswith(b"[") or data.rstrip().endswith(b"]"):
        return data
    body = data.rstrip()
    cut = 0
    if not _LAST_EVENT_END.search(body[-4096:]):
        end = body.rfind(b"}")
        while end > 0 and not re.match(rb"\s*,", body[end + 1 : end + 64]):
            end = body.rfind(b"}", 0, end)
        if end <= 0:
            return data  # no complete event: the parser says what is wrong
        cut, body = len(body) - end - 1, body[: end + 1]
    body = body.rstrip().rstrip(b",")
    notes.append(
        f"{path.name}: the JSON array has no closing ']' (a writer that stopped early; the Trace Event Format "
        "allows it): read as closed"
        + (f", the partial event after the last complete one left out ({cut} bytes)" if cut else "")
    )
    return body + b"]"


def _assemble(path: Path, options: ReadOptions, trace, parts: list, notes: list[str]) -> Profile:
    """One Profile of the decoded chunks of a trace (``trace``: its top-level fields), with
    what reading it noted (``notes``) as warnings."""
    parts = _with_slices(path, parts, notes)
    unused = _unused(parts)
    if sum(len(c.ts_ns) + len(c.mem_t) for c in parts) == 0 and unused and not any(c.skipped for c in parts):
        # events of kinds the analysis does not read, and nothing else: what they were, named
        raise TraceError(path, f"nothing to analyse: {_events_line(unused)}, no slice (X, or a B/E pair)")
    skipped = _skipped(path, parts)
    rank = _rank(path, options, trace, notes)
    prof = Profile()
    add_tables(prof, path, trace, parts, rank, notes)
    odd = {k: v for k, v in unused.items() if k not in REDUNDANT_UNUSED}
    if odd:
        notes.append(f"{path.name}: not used by the analysis: {_events_line(odd)}")
    for line in notes + skip_lines(path.name, skipped):
        prof.warn(line)
    prof.run["sources"] = [_source(path, trace, parts, unused, rank)]
    _note_run(prof, path, parts, rank)
    return prof


def _rank(path: Path, options: ReadOptions, trace, notes: list[str]) -> int:
    """The trace's rank: what its ``distributedInfo`` declares (an absurd one is noted and
    ignored), else what its name says, else ``--rank``, else 0."""
    declared = trace.distributedInfo.rank if trace is not None and trace.distributedInfo is not None else None
    if declared is not None and not is_rank(declared):
        notes.append(f"{path.name}: ignored the odd top-level field 'distributedInfo' (rank {str(declared)[:24]})")
        declared = trace.distributedInfo = None
    return int(resolve_rank(path, options, declared) or 0)


def _source(path: Path, trace, parts: list, unused: dict, rank: int) -> dict:
    """The trace's entry in ``run["sources"]``: its events, the ones not used, and what its
    top-level fields say of the devices, the world and the host."""
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
    return info


def _note_run(prof: Profile, path: Path, parts: list, rank: int) -> None:
    """The rank's thread and process names, which engine's Python code ran, and how many
    events were left out (Python frames) in the run record."""
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


def only_frames(parts: list, frames: int) -> str:
    """Why a trace of Python frames alone is no rank: what it is, and what to analyse instead."""
    engines: dict[str, int] = {}
    for c in parts:
        for k, v in c.py_engines.items():
            engines[k] = engines.get(k, 0) + v
    what = FRONT_END if engines.get("vllm") else NO_MODEL
    return (
        f"{what}: {frames:,} Python frames, no op, kernel or step: no rank of the run; analyse the rank traces "
        "written beside it (the directory)"
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
    frames = sum(len(c.frame_ts_ns) for c in parts)
    if sum(len(c.ts_ns) + len(c.mem_t) for c in parts) == 0 and frames:
        raise TraceError(path, only_frames(parts, frames))
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

"""Finding the events array and decoding it in chunks, optionally in parallel.

The events array is located by a byte search checked by decoding what is around it
(``top_level``), else by one parse of the whole document with the events left raw
(``top_level_exact``). It is then cut between two events into chunks decoded one at
a time (bounded memory) or by forked worker processes for large files. A chunk that
that the typed schema refuses (an odd event in it) is decoded again by ``tolerant``,
which skips and counts the odd events; a chunk that is no JSON on its own (cut at a
bad place) makes the reader fall back to one tolerant decode of the whole array, whose
errors name the file's real problem (truncated, malformed).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from ...core.errors import TraceError
from ...core.forking import fork_pool, fork_workers
from .cols import Cols
from .columns import columns, where
from .native import native_cols
from .schema import EVENTS_DECODER, TAGGED_DECODER, TRACE_DECODER, Trace
from .tolerant import tolerant_cols

CHUNK_BYTES = 8 << 20  # decode this much at a time: bounded peak memory (and 8 MiB
# balances two workers better than 16: 0.07 s less of 0.8 at 1M events)
PARALLEL_MIN_BYTES = 64 << 20  # below this, worker processes cost more than they save
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")


def _decode_error(path: Path, e: Exception) -> TraceError:
    if isinstance(e, msgspec.ValidationError):
        return TraceError(path, f"not a valid trace: {where(e)}")
    msg = str(e)
    if "truncated" in msg.lower():
        return TraceError(path, "truncated JSON (file ends in the middle of the trace)")
    return TraceError(path, f"malformed JSON ({msg})")


def top_level(path: Path, data: bytes) -> tuple[Trace | None, memoryview]:
    """The trace's top-level fields and the raw bytes of its events array."""
    first = data[:4096].lstrip()[:1]  # never strip the whole (hundreds of MB) buffer
    if not first and not data.strip():
        raise TraceError(path, "empty file")
    if first == b"[":
        return None, memoryview(data)
    fast = locate_events(data)
    if fast is not None:
        return fast
    return top_level_exact(path, data)


def top_level_exact(path: Path, data: bytes) -> tuple[Trace, memoryview]:
    """Parse the whole document once (events as Raw) to find the array exactly."""
    try:
        trace = TRACE_DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        raise _decode_error(path, e) from None
    raw = memoryview(trace.traceEvents)
    if not len(raw):
        raise TraceError(path, "JSON is not a trace (no traceEvents array)")
    if raw[:1] != b"[":
        raise TraceError(path, "not a valid trace: traceEvents is not an array")
    return trace, raw


def locate_events(data: bytes) -> tuple[Trace, memoryview] | None:
    """Find the events array by byte search and check the guess by decoding what is around it.

    Kineto writes `traceEvents` as the one large array; everything else is small. A wrong
    guess (another `]` after the array) fails a chunk later and the exact path takes over.
    """
    key = data.find(b'"traceEvents"')
    if key < 0:
        return None
    start = data.find(b"[", key)
    if start < 0 or data[key + 13 : start].strip() != b":":
        return None
    # the array's "]" is the last one that closes an object ("}]"): Kineto writes string
    # arrays (INFO, ERROR) after it, never object arrays
    end = len(data)
    for _ in range(100_000):
        end = data.rfind(b"]", start, end)
        if end <= start or data[max(start, end - 64) : end].rstrip()[-1:] in (b"}", b"["):
            break
    if end <= start:
        return None
    try:
        trace = TRACE_DECODER.decode(data[:start] + b"[]" + data[end + 1 :])
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return trace, memoryview(data)[start : end + 1]


def chunks(raw: memoryview, size: int) -> list[tuple[int, int]]:
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


# ---- chunked, optionally parallel decoding ----------------------------------------------

_RAW: memoryview | None = None  # the events array, inherited by forked workers


class ChunkFailed(Exception):
    """A chunk did not decode on its own: cut at a bad place, or a broken event inside."""


def decode_cols(data: bytes | bytearray | memoryview) -> Cols:
    """The columns of one chunk (``[`` events ``]``): the native scanner's where it takes the
    chunk (``native``), else typed, else (an odd event in it, NaN) tolerant, skipping and
    counting the odd events; ChunkFailed when it is no JSON on its own (cut at a bad place)."""
    got = native_cols(data)
    if got is not None:
        return got
    try:
        try:
            events = TAGGED_DECODER.decode(data)
        except msgspec.ValidationError:  # an unusual phase, or a field of the wrong type
            events = EVENTS_DECODER.decode(data)
        return columns(Path("-"), events)
    except (msgspec.ValidationError, msgspec.DecodeError, TraceError, ValueError, TypeError, OverflowError):
        pass  # the tolerant decode below skips what the typed one refused
    try:
        return tolerant_cols(Path("-"), data)
    except TraceError as e:
        raise ChunkFailed(str(e)) from None


def frame(size: int) -> bytearray:
    """A buffer of ``size`` bytes between "[" and "]", for events written into ``[1:-1]``."""
    out = bytearray(size + 2)
    out[0], out[-1] = 0x5B, 0x5D
    return out


def framed(part: bytes | memoryview) -> bytearray:
    """ "[" part "]" in one copy (``b"[" + part + b"]"`` copies the part twice)."""
    out = frame(len(part))
    out[1:-1] = part
    return out


def _decode_chunk(span: tuple[int, int]) -> Cols:
    a, b = span
    assert _RAW is not None  # set by decode_all around its chunks (forked workers inherit it)
    return decode_cols(framed(_RAW[a:b]))


def _workers(raw: memoryview) -> int:
    return fork_workers(len(raw), PARALLEL_MIN_BYTES)


def decode_all(path: Path, raw: memoryview) -> list[Cols]:
    global _RAW
    spans = chunks(raw, CHUNK_BYTES)
    workers = _workers(raw) if len(spans) > 1 else 1
    _RAW = raw
    try:
        if workers > 1:
            with fork_pool(workers) as pool:
                return pool.map(_decode_chunk, spans, chunksize=1)
        return [_decode_chunk(s) for s in spans]
    finally:
        _RAW = None


def decode_whole(path: Path, raw: memoryview, in_object: bool) -> Cols:
    """One decode of the whole array (a chunk was no JSON on its own): typed, else tolerant,
    whose errors say what is wrong with the file and whose event numbers are global."""
    try:
        return columns(path, EVENTS_DECODER.decode(raw))
    except (msgspec.ValidationError, msgspec.DecodeError, TraceError, ValueError, TypeError, OverflowError):
        return tolerant_cols(path, raw)

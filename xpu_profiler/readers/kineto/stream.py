"""Reading a Kineto trace as a stream: the file (or its compressed stream) is read in blocks
and cut between two events into chunks that are decoded as they come, by forked
workers for large files; the whole raw text is never held.

The top-level fields are what comes before the events array and after it: the head
up to ``"traceEvents": [`` and, at the end of the file, what follows the array's
closing ``]``. Anything this cannot handle on its own (no events array where Kineto
puts it, a chunk that does not decode, a broken compressed stream) returns None, and the
reader reads the whole file instead, with its exact error messages and tolerance of
odd events everywhere (a chunk with odd events is decoded tolerantly here too).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from ...core import compression
from ...core.forking import fork_pool, fork_workers
from ..content import compression_of, content_size
from . import decode, handoff
from .cols import Cols
from .decode import _BOUNDARY, ChunkFailed
from .schema import TRACE_DECODER, Trace

BLOCK_BYTES = 4 << 20  # read (and decompress) this much at a time
HEAD_MAX = 64 << 20  # the events array starts within this many bytes, or the file is read whole
SLOT_SLACK = 1 << 20  # a chunk is cut at the first event boundary after its size


class Unstreamable(Exception):
    """The file needs the whole-file reader."""


def _blocks(path: Path, progress: Callable[[int], None] | None) -> Iterator[bytes]:
    """The (decompressed) content in blocks; Unstreamable on a broken compressed stream."""
    with open(path, "rb") as f:
        kind = compression.kind_of(f.read(6))
        f.seek(0)
        if kind is None:
            while block := f.read(BLOCK_BYTES):
                if progress:
                    progress(len(block))
                yield block
            return
        try:
            # a trace's text compresses ~10-20x
            for out, n in compression.blocks(f, kind, BLOCK_BYTES >> 4):
                if progress and n:
                    progress(n)
                yield out
        except compression.READ_ERRORS:
            raise Unstreamable() from None


class _Split:
    """Cuts the content into the head, event chunks and the tail."""

    def __init__(self) -> None:
        self.prefix: bytes | None = None  # up to (not including) the array's "["; b"" for a bare array
        self.suffix = b""  # after the array's "]"

    def _start(self, head: bytes) -> int | None:
        """Offset just after the events array's "[" in ``head``, None while not yet seen."""
        first = head[:4096].lstrip()[:1]
        if first == b"[":
            self.prefix = b""
            return head.index(b"[") + 1
        if first != b"{":
            raise Unstreamable()
        key = head.find(b'"traceEvents"')
        if key < 0:
            return None
        start = head.find(b"[", key)
        if start < 0:
            return None
        if head[key + 13 : start].strip() != b":":
            raise Unstreamable()
        self.prefix = head[:start]
        return start + 1

    def chunks(self, blocks: Iterator[bytes], size: int) -> Iterator[memoryview | bytes]:
        """The events array in chunks of about ``size`` bytes cut between two events (each
        valid until the next is asked for). Blocks are gathered until a chunk's worth is
        in and joined once, not appended to the rest one by one."""
        parts: list[bytes] = []  # the unread content, joined
        have = 0
        for block in blocks:
            parts.append(block)
            have += len(block)
            if self.prefix is None:
                head = b"".join(parts)
                at = self._start(head)
                if at is None:
                    if len(head) > HEAD_MAX:
                        raise Unstreamable()
                    parts = [head]
                    continue
                parts, have = [head[at:]], len(head) - at
            if have <= size:
                continue
            pending = b"".join(parts)
            view, pos = memoryview(pending), 0
            while len(pending) - pos > size:
                m = _BOUNDARY.search(pending, pos + size)
                if m is None:
                    break
                yield view[pos : m.start() + 1]
                pos = m.end() - 1
            parts = [pending[pos:]]
            have = len(parts[0])
        if self.prefix is None:
            raise Unstreamable()
        yield self._last(b"".join(parts))

    def _last(self, pending: bytes) -> bytes:
        """The last chunk of events; the tail goes to ``suffix``."""
        if self.prefix == b"":
            body = pending.rstrip()
            if not body.endswith(b"]"):
                raise Unstreamable()
            return body[:-1]
        # the array's "]" is the last one that closes an object (string arrays may follow)
        end = len(pending)
        while True:
            end = pending.rfind(b"]", 0, end)
            if end < 0:
                raise Unstreamable()
            before = pending[max(0, end - 64) : end].rstrip()
            if before.endswith(b"}") or not pending[:end].strip():
                break
        self.suffix = pending[end + 1 :]
        return pending[:end]

    def trace(self) -> Trace | None:
        if not self.prefix:
            return None
        try:
            return TRACE_DECODER.decode(self.prefix + b"[]" + self.suffix)
        except (msgspec.ValidationError, msgspec.DecodeError):
            raise Unstreamable() from None


def _read_framed(fd: int, lo: int, hi: int) -> bytearray:
    """Bytes ``lo..hi`` of the file between "[" and "]", read straight into place."""
    framed = decode.frame(hi - lo)
    view = memoryview(framed)[1:-1]
    done = 0
    while done < len(view):
        n = os.preadv(fd, [view[done:]], lo + done)
        if n <= 0:
            raise OSError(f"the file ended {hi - lo - done} bytes early (changed while read?)")
        done += n
    view.release()
    return framed


# ---- an uncompressed file: workers read their own byte ranges ---------------------------

TAIL_BYTES = 1 << 20  # the array's end and the fields after it lie in the file's last MiB
_FILE: tuple[str, int, int, int] | None = None  # path, array start, array end, chunk size


def _cut(fd: int, pos: int, end: int) -> tuple[int, int]:
    """The first cut between two events at or after ``pos`` (before ``end``): where the
    chunk before it ends and the next begins; (end, end) when there is none. Every chunk
    finds its two cuts with this, so neighbours agree on them."""
    window = 1 << 20
    while pos < end:
        buf = os.pread(fd, min(window, end - pos) + 64, pos)
        m = _BOUNDARY.search(buf)
        if m is not None and pos + m.start() < end:
            return pos + m.start() + 1, pos + m.end() - 1
        if m is not None or len(buf) < window:
            break
        pos += window
    return end, end


def _range_chunk(k: int) -> Cols:
    assert _FILE is not None  # set around the chunks' decode (forked workers inherit it)
    path, start, end, size = _FILE
    with open(path, "rb") as f:
        fd = f.fileno()
        lo = start if k == 0 else _cut(fd, start + k * size, end)[1]
        hi = _cut(fd, start + (k + 1) * size, end)[0]
        return decode.decode_cols(_read_framed(fd, lo, hi) if hi > lo else decode.frame(0))


def _locate(path: Path, split: _Split) -> tuple[int, int]:
    """Byte offsets of the events array's first event and of its closing "]"."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(BLOCK_BYTES)
        while (at := split._start(head)) is None:
            block = f.read(BLOCK_BYTES)
            if not block or len(head) > HEAD_MAX:
                raise Unstreamable()
            head += block
        tail_at = max(at, size - TAIL_BYTES)
        tail = os.pread(f.fileno(), size - tail_at, tail_at)
    prefix = split.prefix
    last = split._last(tail)  # sets split.suffix
    split.prefix = prefix
    return at, tail_at + len(last)


def read_ranges(path: Path, progress: Callable[[int], None] | None, size: int) -> tuple[Trace | None, list[Cols]]:
    global _FILE
    split = _Split()
    start, end = _locate(path, split)
    trace = split.trace()
    n = max(1, -(-(end - start) // size))
    workers = fork_workers(end - start, 0) if end - start >= decode.PARALLEL_MIN_BYTES and n > 1 else 1
    _FILE = (str(path), start, end, size)
    try:
        if workers > 1:
            with fork_pool(workers) as pool:
                parts = pool.map(_range_chunk, range(n), chunksize=1)
        else:
            parts = [_range_chunk(k) for k in range(n)]
    finally:
        _FILE = None
    if progress:
        progress(path.stat().st_size)
    return trace, parts


def read_streamed(
    path: Path, progress: Callable[[int], None] | None = None, chunk_bytes: int | None = None
) -> tuple[Trace | None, list[Cols]] | None:
    """(top-level fields, the columns of each chunk), or None when the file needs the
    whole-file reader. An uncompressed file is read by byte ranges (each chunk, or
    worker, reads its own); a compressed stream is decompressed here and its chunks handed on."""
    size = chunk_bytes or decode.CHUNK_BYTES  # read at call time: tests set it
    split = _Split()
    try:
        if compression_of(path) is None:
            return read_ranges(path, progress, size)
        chunks = split.chunks(_blocks(path, progress), size)
        est = content_size(path)
        workers = fork_workers(est, 0) if est >= decode.PARALLEL_MIN_BYTES else 1
        if workers > 1:
            parts = handoff.decode_in_pool(lambda: fork_pool(workers), chunks, workers + 2, size + SLOT_SLACK)
        else:
            parts = [decode.decode_cols(decode.framed(c)) for c in chunks]
        return split.trace(), parts
    except (Unstreamable, ChunkFailed, OSError):
        return None

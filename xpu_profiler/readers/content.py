"""A file's content, compressed or not (gzip, xz, bzip2, Zstandard: ``core.compression``, told
by the first bytes): its first bytes (what readers sniff), all of it, and its size without
reading it."""

from __future__ import annotations

import functools
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from ..core import compression
from ..core.errors import TraceError

HEAD_BYTES = 64 * 1024
#: a UTF-8 byte-order mark, which a parser may ignore (RFC 8259 §8.1): left out of what is read
BOM = b"\xef\xbb\xbf"

ProgressFn = Callable[[int], None]  # called with a number of bytes just processed


def text_encoding(head: bytes) -> str | None:
    """What a UTF-16 byte-order mark at the start says (a text saved by a Windows tool), or
    None (a UTF-8 one is left out where files are read: ``BOM``)."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text"
    return None


#: the one line for a text file in another encoding than the formats' UTF-8
NOT_UTF8 = "{}: the trace formats are UTF-8 text without one; convert it"


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def compression_of(path: Path) -> str | None:
    """The file's compression (``core.compression``: gzip, xz, bzip2, zstd), None for none."""
    with open(path, "rb") as f:
        return compression.kind_of(f.read(6))


def content_size(path: Path) -> int:
    """Bytes of a file's (decompressed) content, without reading it all. A gzip file's
    trailer holds the size modulo 4 GiB (of the last member only): where the file is large
    enough for the content to have wrapped, the ratio of its first MiB picks the wrap (worked
    out once per file: the command sizes its inputs, the reader its workers)."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):  # (a FIFO is never opened here: that would wait for a writer)
        return 0
    return _content_size(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _content_size(path: str, size: int, mtime_ns: int) -> int:
    with open(path, "rb") as f:
        kind = compression.kind_of(f.read(6))
        if kind is None or size < 18:
            return size
        if kind != compression.GZIP:  # no size in the stream: the first MiB's ratio, for the rest
            f.seek(0)
            try:
                out = len(compression.head(f, kind, 1 << 20))
            except compression.READ_ERRORS:
                return size
            return size if out < 1 << 20 and f.tell() >= size else round(out / max(f.tell(), 1) * size)
        f.seek(-4, os.SEEK_END)
        n = int.from_bytes(f.read(4), "little")
        if size * _DEFLATE_MAX_RATIO < 1 << 32:
            return n
        f.seek(0)
        head, d = f.read(1 << 20), zlib.decompressobj(31)
        try:
            out = len(d.decompress(head, 64 << 20))
        except zlib.error:
            return n
    used = len(head) - len(d.unconsumed_tail) - len(d.unused_data)
    estimate = out / max(used, 1) * size
    return n + max(0, round((estimate - n) / (1 << 32))) * (1 << 32)


_DEFLATE_MAX_RATIO = 1032  # deflate's most: 258 bytes from one code of a few bits


def read_head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """First ``n`` bytes of the (decompressed) file; b"" when unreadable."""
    try:
        with open(path, "rb") as f:
            kind = compression.kind_of(f.read(6))
            f.seek(0)
            head = compression.head(f, kind, n + 3) if kind else f.read(n + 3)
    except compression.READ_ERRORS:
        return b""
    return head[3:] if head.startswith(BOM) else head[:n]


def iter_content(path: Path, block_bytes: int = 4 << 20) -> Iterator[bytes]:
    """The (decompressed) content in blocks. Raises OSError, EOFError, MissingPackage or one of
    ``compression.ERRORS`` as the stream does."""
    with open(path, "rb") as f:
        kind = compression.kind_of(f.read(6))
        f.seek(0)
        if kind is None:
            while block := f.read(block_bytes):
                yield block
            return
        for part, _ in compression.blocks(f, kind, block_bytes >> 2):
            if part:
                yield part


def read_bytes(path: Path, progress: ProgressFn | None = None) -> bytes:
    """Whole (decompressed) content; a compressed file is stream-decompressed in chunks.

    Raises TraceError naming the problem for a corrupt or truncated compressed stream, or a
    compression whose package is not installed.
    """
    kind = None
    try:
        size = os.path.getsize(path)
        kind = compression_of(path)
        if kind is None:
            with open(path, "rb", buffering=0) as raw:  # unbuffered: no second copy of the file
                data = raw.readall()
            if progress:
                progress(size)
            return data[3:] if data.startswith(BOM) else data
        parts = []
        with open(path, "rb") as f:
            for part, n in compression.blocks(f, kind, 1 << 20):
                parts.append(part)
                if progress and n:
                    progress(n)
        data = b"".join(parts)
        return data[3:] if data.startswith(BOM) else data
    except compression.MissingPackage as e:
        raise TraceError(path, str(e)) from None
    except EOFError:
        raise TraceError(path, f"truncated {kind} file (compressed stream ends early)") from None
    except IsADirectoryError:
        raise TraceError(path, "is a directory") from None
    except FileNotFoundError:
        raise TraceError(path, "no such file") from None
    except PermissionError:
        raise TraceError(path, "permission denied") from None
    except compression.ERRORS as e:
        raise TraceError(path, f"corrupt {kind} data ({e})" if kind else f"unreadable ({e})") from None

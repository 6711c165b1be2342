"""A file's content, gzip-compressed or not: its first bytes (what readers sniff), all of
it, and its size without reading it."""

from __future__ import annotations

import functools
import gzip
import os
import stat
import zlib
from collections.abc import Callable
from pathlib import Path

from ..core import deflate
from ..core.errors import TraceError

HEAD_BYTES = 64 * 1024

ProgressFn = Callable[[int], None]  # called with a number of bytes just processed


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


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
        if size < 18 or f.read(2) != b"\x1f\x8b":
            return size
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
        if is_gzip(path):
            with gzip.open(path, "rb") as f:
                return f.read(n)
        with open(path, "rb") as f:
            return f.read(n)
    except (OSError, EOFError, zlib.error):
        return b""


def read_bytes(path: Path, progress: ProgressFn | None = None) -> bytes:
    """Whole (decompressed) content; gzip is stream-decompressed in chunks.

    Raises TraceError naming the problem for a corrupt or truncated gzip.
    """
    try:
        size = os.path.getsize(path)
        if not is_gzip(path):
            with open(path, "rb", buffering=0) as raw:  # unbuffered: no second copy of the file
                data = raw.readall()
            if progress:
                progress(size)
            return data
        parts = []
        with open(path, "rb") as f:
            for part, n in deflate.gunzip_blocks(f, 1 << 20):
                parts.append(part)
                if progress and n:
                    progress(n)
        return b"".join(parts)
    except EOFError:
        raise TraceError(path, "truncated gzip file (compressed stream ends early)") from None
    except deflate.ERRORS as e:
        raise TraceError(path, f"corrupt gzip data ({e})") from None
    except IsADirectoryError:
        raise TraceError(path, "is a directory") from None
    except FileNotFoundError:
        raise TraceError(path, "no such file") from None
    except PermissionError:
        raise TraceError(path, "permission denied") from None

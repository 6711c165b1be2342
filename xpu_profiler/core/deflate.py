"""The deflate implementation every gzip read and write goes through.

ISA-L's (the ``isal`` package, a dependency) where it is installed: its level 1
compresses a trace's text about 4× faster than zlib's level 1, a little smaller, and
it decompresses about 2× faster. zlib's otherwise: same formats, other bytes.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import BinaryIO

try:
    from isal import isal_zlib as _impl
except ImportError:  # pragma: no cover - isal is a dependency; a build without it still works
    _impl = zlib

LEVEL = 1  # fast: traces are large, and the text compresses ~9x even so
ERRORS: tuple[type[BaseException], ...] = tuple({zlib.error, _impl.error})
SYNC_FLUSH, FINISH = zlib.Z_SYNC_FLUSH, zlib.Z_FINISH

crc32 = _impl.crc32


def raw_compressor():
    """A raw deflate stream (no header or trailer) at ``LEVEL``."""
    return _impl.compressobj(LEVEL, zlib.DEFLATED, -15)


def gunzip_blocks(f: BinaryIO, block_bytes: int) -> Iterator[tuple[bytes, int]]:
    """The decompressed content of the gzip file ``f`` as (text, compressed bytes read),
    reading ``block_bytes`` at a time; concatenated members follow each other. Raises one
    of ``ERRORS`` on corrupt data and EOFError when the stream ends early."""
    d = _impl.decompressobj(31)
    while block := f.read(block_bytes):
        out = d.decompress(block)
        while d.unused_data:  # concatenated gzip members
            rest = d.unused_data
            out += d.flush()
            d = _impl.decompressobj(31)
            out += d.decompress(rest)
        yield out, len(block)
    tail = d.flush()
    if not d.eof:
        raise EOFError("compressed stream ends early")
    yield tail, 0

"""The deflate implementation every gzip read and write goes through.

ISA-L's (the ``isal`` package, a dependency) where it is installed: its level 1
compresses a trace's text about 4× faster than zlib's level 1, a little smaller, and
it decompresses about 2× faster. zlib's otherwise: same formats, other bytes.
"""

from __future__ import annotations

import types
import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO, Protocol

_impl: types.ModuleType  # isal_zlib or zlib: the same functions, read through the protocols below
try:
    from isal import isal_zlib as _impl
except ImportError:  # pragma: no cover - isal is a dependency; a build without it still works
    _impl = zlib


class Compressor(Protocol):
    """What ``compressobj`` returns, in either implementation."""

    def compress(self, data: bytes, /) -> bytes: ...
    def flush(self, mode: int = ..., /) -> bytes: ...


class Decompressor(Protocol):
    """What ``decompressobj`` returns, in either implementation."""

    @property
    def unused_data(self) -> bytes: ...
    @property
    def eof(self) -> bool: ...
    def decompress(self, data: bytes, /) -> bytes: ...
    def flush(self, length: int = ..., /) -> bytes: ...


LEVEL = 1  # fast: traces are large, and the text compresses ~9x even so
ERRORS: tuple[type[BaseException], ...] = tuple({zlib.error, _impl.error})
SYNC_FLUSH, FINISH = zlib.Z_SYNC_FLUSH, zlib.Z_FINISH

crc32: Callable[..., int] = _impl.crc32  # (data, value=0) -> int


def raw_compressor() -> Compressor:
    """A raw deflate stream (no header or trailer) at ``LEVEL``."""
    c: Compressor = _impl.compressobj(LEVEL, zlib.DEFLATED, -15)
    return c


def gunzip_blocks(f: BinaryIO, block_bytes: int) -> Iterator[tuple[bytes, int]]:
    """The decompressed content of the gzip file ``f`` as (text, compressed bytes read),
    reading ``block_bytes`` at a time; concatenated members follow each other. Raises one
    of ``ERRORS`` on corrupt data and EOFError when the stream ends early."""
    d: Decompressor = _impl.decompressobj(31)
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

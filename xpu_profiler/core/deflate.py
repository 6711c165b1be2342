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


GZIP_MAGIC = b"\x1f\x8b"
LEVEL = 1  # fast: traces are large, and the text compresses ~9x even so
ERRORS: tuple[type[BaseException], ...] = tuple({zlib.error, _impl.error})
SYNC_FLUSH, FINISH = zlib.Z_SYNC_FLUSH, zlib.Z_FINISH

crc32: Callable[..., int] = _impl.crc32  # (data, value=0) -> int


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A + B from crc(A), crc(B) and len(B): ISA-L's (C) where installed, else zlib's
    algorithm in Python (its operator table, built on the first call, took 40 ms)."""
    if _combine is not None:
        return int(_combine(crc1, crc2, len2))
    if not _ZERO_BYTES:
        op = [0xEDB88320] + [1 << n for n in range(31)]  # one zero bit
        for _ in range(3):
            op = _gf2_square(op)  # 2, 4, 8 zero bits
        for _ in range(64):
            _ZERO_BYTES.append(op)
            op = _gf2_square(op)
    k = 0
    while len2 > 0:
        if len2 & 1:
            crc1 = _gf2_times(_ZERO_BYTES[k], crc1)
        len2 >>= 1
        k += 1
    return crc1 ^ crc2


_combine: Callable[[int, int, int], int] | None = getattr(_impl, "crc32_combine", None)
_ZERO_BYTES: list[list[int]] = []  # operator applying 2^k zero bytes to a CRC, k = 0..63


def _gf2_times(mat: list[int], vec: int) -> int:
    s, i = 0, 0
    while vec:
        if vec & 1:
            s ^= mat[i]
        vec >>= 1
        i += 1
    return s


def _gf2_square(mat: list[int]) -> list[int]:
    return [_gf2_times(mat, mat[n]) for n in range(32)]


def raw_compressor() -> Compressor:
    """A raw deflate stream (no header or trailer) at ``LEVEL``."""
    c: Compressor = _impl.compressobj(LEVEL, zlib.DEFLATED, -15)
    return c


def gunzip_blocks(f: BinaryIO, block_bytes: int) -> Iterator[tuple[bytes, int]]:
    """The decompressed content of the gzip file ``f`` as (text, compressed bytes read),
    reading ``block_bytes`` at a time; concatenated members follow each other, and zero bytes
    after a member are padding (as gzip and Python's gzip read them). Raises one of ``ERRORS``
    on corrupt data (ValueError for bytes after the last member that are no gzip member) and
    EOFError when the stream ends early."""
    d: Decompressor = _impl.decompressobj(31)
    ended = False  # a member has ended: what follows is padding or the next member
    carry = b""  # the first byte of what may be the next member's two-byte magic
    while block := f.read(block_bytes):
        data, out = carry + block, []
        carry = b""
        while data:
            if ended:
                data = data.lstrip(b"\0")
                if len(data) < 2:
                    carry = data
                    break
                if not data.startswith(GZIP_MAGIC):
                    raise ValueError("bytes after the compressed stream that are no gzip data")
                d, ended = _impl.decompressobj(31), False
            out.append(d.decompress(data))
            data = b""
            if d.eof:
                out.append(d.flush())
                data, ended = d.unused_data, True
        yield b"".join(out), len(block)
    if carry:
        raise ValueError("bytes after the compressed stream that are no gzip data")
    if not ended:
        tail = d.flush()
        if not d.eof:
            raise EOFError("compressed stream ends early")
        yield tail, 0

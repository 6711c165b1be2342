"""The compressions a profile arrives in, told by their first bytes (never by the name): gzip
(``deflate``), xz and bzip2 (the standard library), Zstandard (the ``zstandard`` package, where
it is installed); and the archives a profile directory is packed in (tar, zip), which are
refused in one line: they hold a directory, and the tool reads directories.

Magic numbers: gzip RFC 1952 (1f 8b), xz file format 1.0 (fd 37 7a 58 5a 00), bzip2 ("BZh"
then the block size digit), Zstandard RFC 8878 (28 b5 2f fd), zip APPNOTE (50 4b 03 04; an
empty archive 50 4b 05 06), tar POSIX ustar ("ustar" at offset 257).
"""

from __future__ import annotations

import bz2
import lzma
from collections.abc import Iterator
from typing import Any, BinaryIO

from . import deflate

GZIP, XZ, BZIP2, ZSTD = "gzip", "xz", "bzip2", "zstd"
_MAGIC = (
    (deflate.GZIP_MAGIC, GZIP),
    (b"\xfd7zXZ\x00", XZ),
    (b"BZh", BZIP2),
    (b"\x28\xb5\x2f\xfd", ZSTD),
)


def _zstd_errors() -> tuple[type[BaseException], ...]:
    try:
        import zstandard
    except ImportError:
        return ()
    return (zstandard.ZstdError,)


#: what a decompressor of each kind raises on corrupt data (EOFError: a stream that ends early)
ERRORS: tuple[type[BaseException], ...] = (*deflate.ERRORS, lzma.LZMAError, OSError, ValueError, *_zstd_errors())


class MissingPackage(Exception):
    """A compression whose package is not installed: the message says which."""


#: everything reading a compressed stream may raise: corrupt data, an early end, a missing package
READ_ERRORS: tuple[type[BaseException], ...] = (EOFError, MissingPackage, *ERRORS)


def kind_of(head: bytes) -> str | None:
    """The compression the first bytes of a file say, None for none."""
    for magic, kind in _MAGIC:
        if head.startswith(magic) and (kind != BZIP2 or head[3:4].isdigit()):
            return kind
    return None


def archive_of(head: bytes) -> str | None:
    """ "a zip archive" / "a tar archive" when the (decompressed) head is one, else None."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "a zip archive"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "a tar archive"
    return None


def _zstd() -> Any:
    try:
        import zstandard
    except ImportError:
        raise MissingPackage(
            "Zstandard-compressed: install the 'zstandard' package to read it (pip install zstandard), "
            "or decompress it first (zstd -d)"
        ) from None
    return zstandard


def _decompressor(kind: str) -> Any:
    if kind == XZ:
        return lzma.LZMADecompressor()
    if kind == BZIP2:
        return bz2.BZ2Decompressor()
    return _zstd().ZstdDecompressor().decompressobj()


def blocks(f: BinaryIO, kind: str, block_bytes: int) -> Iterator[tuple[bytes, int]]:
    """The decompressed content of ``f`` (compressed by ``kind``) as (text, compressed bytes
    read); concatenated streams (gzip members, xz streams, bzip2 streams, Zstandard frames)
    follow each other, and the zero bytes the xz format allows between streams (its stream
    padding) are skipped. Raises one of ``ERRORS`` on corrupt data (trailing bytes that are
    no stream included), EOFError when the stream ends early, MissingPackage for Zstandard
    without its package."""
    if kind == GZIP:
        yield from deflate.gunzip_blocks(f, block_bytes)
        return
    d = _decompressor(kind)
    ended = False  # a stream has ended: what follows is padding (xz) or the next stream
    while block := f.read(block_bytes):
        data, out = block, []
        while data:
            if ended:
                if kind == XZ:
                    data = data.lstrip(b"\0")
                    if not data:
                        break
                d, ended = _decompressor(kind), False
            out.append(d.decompress(data))
            data = b""
            if d.eof:
                data, ended = d.unused_data, True
        yield b"".join(out), len(block)
    if not ended:
        tail = d.flush() if kind == ZSTD else b""
        if not d.eof:
            raise EOFError("compressed stream ends early")
        yield tail, 0


def head(f: BinaryIO, kind: str, n: int) -> bytes:
    """The first ``n`` decompressed bytes (fewer when the content is shorter)."""
    out = b""
    for part, _ in blocks(f, kind, 1 << 16):
        out += part
        if len(out) >= n:
            break
    return out[:n]

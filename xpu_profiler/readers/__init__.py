"""Readers: one module (or package: ``kineto``) per input format, chosen by sniffing the content.

Each reader module exposes:

- ``NAME``: short format name shown to users;
- ``sniff(path, head) -> bool``: True when ``head`` (the first bytes of the
  decompressed file) looks like this format; must be cheap and never raise;
- ``read(path, options) -> Profile``: load the file; raise ``TraceError`` for a
  file that is broken, and ``profile.warn()`` for events that are merely odd.

A reader of inputs that are a whole directory (a server's record directory) also has

- ``claim(directory) -> list[Path] | None``: the files below ``directory`` it reads
  together, or None; ``read(directory, options)`` then reads them as one input, and
  no reader sniffs those files one by one.

``registry()`` is the ordered registry: a directory is first offered to each reader
with a ``claim``; the first reader whose ``sniff`` says yes reads a file, so more
specific formats come first.
"""

from __future__ import annotations

from .base import ReadOptions
from .content import is_gzip, read_bytes, read_head
from .formats import expand, find_reader, registry, why_unreadable
from .loader import load

__all__ = [
    "ReadOptions",
    "expand",
    "find_reader",
    "is_gzip",
    "load",
    "read_bytes",
    "read_head",
    "registry",
    "why_unreadable",
]

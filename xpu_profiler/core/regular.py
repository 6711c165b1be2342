"""Only regular files are read whole: a FIFO would wait for a writer forever, a device such as
/dev/zero never end (reading it fills memory). Every path the tool reads as one file (a trace,
a setting's file, a trace to validate) goes through ``require_regular`` first."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import TraceError


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def not_regular(path: str | Path) -> str | None:
    """Why a path is no regular file to read, ``not a regular file (a FIFO)``; None for one
    (OSError where it cannot be looked at)."""
    mode = os.stat(path).st_mode
    return None if stat.S_ISREG(mode) else f"not a regular file ({file_kind(mode)})"


def require_regular(path: str | Path, what: str = "pass the file itself", directory_ok: bool = False) -> os.stat_result:
    """The path's stat; TraceError (one line) where it is no regular file (nor a directory,
    where ``directory_ok``). A missing path is left to the caller (its own message)."""
    st = os.stat(path)
    if stat.S_ISREG(st.st_mode) or (directory_ok and stat.S_ISDIR(st.st_mode)):
        return st
    raise TraceError(path, f"not a regular file ({file_kind(st.st_mode)}): {what}")

"""The compiled parts and whether they are in use: the native trace reader
(``readers/kineto/_scan.c``) and template filling (``_fill.c``, for the trace writer).

Both are built by ``pip install .`` where a C compiler exists; each has a pure-Python twin,
the reference, which gives the same bytes. ``XPU_PROFILER_PURE_PYTHON=1`` turns every
compiled part off (what an install without a compiler runs).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

try:
    from ._fill import fill as _fill
except ImportError:  # not built: Python's own %
    _fill = None

PURE_ENV = "XPU_PROFILER_PURE_PYTHON"


def enabled() -> bool:
    """Whether compiled parts may be used (``XPU_PROFILER_PURE_PYTHON`` unset, empty or 0)."""
    return os.environ.get(PURE_ENV, "") in ("", "0")


def fill(fmt: bytes, values: Sequence[object]) -> bytes:
    """``fmt % tuple(values)``: in C for templates of %d (ints), %s (bytes) and %%, else (or
    not built, or turned off) Python's own ``%``, with the same bytes or the same error."""
    if _fill is not None and enabled():
        out: bytes | None = _fill(fmt, values)
        if out is not None:
            return out
    return fmt % tuple(values)

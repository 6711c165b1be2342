"""The compiled parts and whether they are in use: the native trace reader
(``readers/kineto/_scan.c``), template filling (``_fill.c``, for the trace writer) and the
interval nesting check (``_nest.c``, for ``intervals``).

All are built by ``pip install .`` where a C compiler exists; each has a pure-Python (numpy)
twin, the reference, which gives the same bytes or the same answer. ``XPU_PROFILER_PURE_PYTHON=1`` turns every
compiled part off (what an install without a compiler runs).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

try:
    from ._fill import fill as _fill
except ImportError:  # not built: Python's own %
    _fill = None
try:
    from ._nest import nested as _nested
except ImportError:  # not built: the numpy sweep
    _nested = None

PURE_ENV = "XPU_PROFILER_PURE_PYTHON"


#: the values of ``XPU_PROFILER_PURE_PYTHON`` that leave the compiled parts on (as a flag reads)
OFF_VALUES = ("", "0", "false", "no", "off")


def enabled() -> bool:
    """Whether compiled parts may be used (``XPU_PROFILER_PURE_PYTHON`` unset, or a value a
    flag reads as off: empty, 0, false, no, off, in any case and spacing)."""
    value = os.environ.get(PURE_ENV, "").strip().lower()
    return value in OFF_VALUES or (value.isdigit() and int(value) == 0)


def fill(fmt: bytes, values: Sequence[object]) -> bytes:
    """``fmt % tuple(values)``: in C for templates of %d (ints), %s (bytes) and %%, else (or
    not built, or turned off) Python's own ``%``, with the same bytes or the same error."""
    if _fill is not None and enabled():
        out: bytes | None = _fill(fmt, values)
        if out is not None:
            return out
    return fmt % tuple(values)


def nested(start: np.ndarray, end: np.ndarray, order: np.ndarray, max_depth: int) -> bool | None:
    """Whether the intervals nest at most ``max_depth`` deep (``intervals._nested``'s
    question; ``order``: by start, longer first), walked in C; None when not built or turned
    off (the caller's numpy sweep answers)."""
    if _nested is None or not enabled():
        return None
    as64 = [np.ascontiguousarray(a, dtype=np.int64) for a in (start, end, order)]
    return bool(_nested(*as64, max_depth))

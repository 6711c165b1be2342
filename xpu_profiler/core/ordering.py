"""``lexsort``: numpy's, made fast for the keys an analysis sorts by.

Event columns come mostly in time order already (per chunk, per track), and the keys
(ranks, track ids, integer ns) span ranges whose product fits in 62 bits. Then the keys
are packed into one int64 and ordered by one stable argsort, whose merge sort runs in
near-linear time on presorted runs; ``np.lexsort`` sorts each key in turn. The order is
the same as ``np.lexsort``'s (both are stable); other keys go to ``np.lexsort``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_PACKED_BITS = 62


def lexsort(keys: Sequence[np.ndarray]) -> np.ndarray:
    """Indices that sort by ``keys``, the last one primary (``np.lexsort``'s convention)."""
    return lexsort_taking([np.asarray(k) for k in keys])  # a list of its own: the caller's keys stay


def lexsort_taking(keys: list[np.ndarray]) -> np.ndarray:
    """``lexsort(keys)`` that empties ``keys`` as soon as they are packed, so that the keys
    (when the caller holds no other reference) are freed before the sort allocates: for the
    largest sorts, where the keys, their packing and the order would otherwise coexist."""
    packed = packed_keys(keys)
    if packed is None:
        order = np.asarray(np.lexsort(keys))
        keys.clear()
        return order
    keys.clear()
    return np.argsort(packed, kind="stable")


def packed_keys(keys: Sequence[np.ndarray]) -> np.ndarray | None:
    """The keys (the last one primary) packed into one int64 that orders as they do, or None
    where they cannot be: not integer, of unequal lengths, empty, or spanning 62 bits or more."""
    keys = [np.asarray(k) for k in keys]
    n = len(keys[0]) if keys else 0
    if n == 0 or any(len(k) != n or k.ndim != 1 for k in keys):
        return None
    lows, spans, total = [], [], 1
    for k in keys:
        if k.dtype.kind not in "biu" or (k.dtype.kind == "u" and k.dtype.itemsize == 8):
            return None
        lo, hi = int(k.min()), int(k.max())
        lows.append(lo)
        spans.append(hi - lo + 1)
        total *= hi - lo + 1
        if total >= 1 << _PACKED_BITS:
            return None
    packed = np.zeros(n, np.int64)
    for k, lo, span in zip(reversed(keys), reversed(lows), reversed(spans)):
        packed *= span
        np.add(packed, k, out=packed, casting="unsafe")  # no int64 copy of a narrower key
        packed -= lo
    return packed


def number_per_rank(ranks: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... within each rank, in the row order."""
    out = np.zeros(len(ranks), np.int64)
    for r in np.unique(ranks):
        m = ranks == r
        out[m] = np.arange(int(m.sum()))
    return out

"""The ranks' clocks aligned on their collectives: the ranks of one collective finish
together (each waits for the last), so each rank's clock offset is the median difference of its
collectives' ends against the lowest rank's, carried breadth-first over the ranks that shared
collectives. Offsets within ``CLOCK_TOLERANCE_NS`` (or ranks on one host) mean the clocks are
shared and times are used as recorded."""

from __future__ import annotations

import numpy as np

from ...core.intervals import distinct_rows

CLOCK_TOLERANCE_NS = 100_000


def clock_offsets(inst, rank, end, n_ranks: int, same_host: bool) -> tuple[dict[int, int], str]:
    """Each rank's clock offset from its collectives' ends, and what the clock is."""
    ranks = np.unique(rank).tolist()
    if n_ranks < 2:
        return {}, "single_rank"
    m = inst >= 0
    if not m.any():
        return {}, "shared" if same_host else "unknown"
    ii, rr, ee = inst[m], rank[m], end[m]
    ref = np.full(int(ii.max()) + 1, np.iinfo(np.int64).max)
    np.minimum.at(ref, ii, rr)
    is_ref = rr == ref[ii]
    ref_end = np.zeros(len(ref), np.int64)
    ref_end[ii[is_ref]] = ee[is_ref]
    o = ~is_ref
    pair_a, pair_b, diff = ref[ii[o]], rr[o], ee[o] - ref_end[ii[o]]
    med: dict[int, list[tuple[int, int]]] = {}
    if len(diff):
        pairs, pinv = distinct_rows(pair_a, pair_b)
        for j, (a, b) in enumerate(pairs.tolist()):
            d = int(np.median(diff[pinv == j]))
            med.setdefault(a, []).append((b, d))
            med.setdefault(b, []).append((a, -d))
    offsets: dict[int, int] = {}
    for root in ranks:  # breadth-first over ranks that shared collectives
        if root in offsets:
            continue
        offsets[root] = 0
        todo = [root]
        while todo:
            a = todo.pop(0)
            for b, d in sorted(med.get(a, [])):
                if b not in offsets:
                    offsets[b] = offsets[a] + d
                    todo.append(b)
    if same_host or all(abs(v) <= CLOCK_TOLERANCE_NS for v in offsets.values()):
        return {r: 0 for r in ranks}, "shared"
    return offsets, "collective_ends"

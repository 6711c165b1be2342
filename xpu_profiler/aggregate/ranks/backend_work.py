"""The work a host collective hands to its backend's own threads (runs without device work).

``torch.distributed`` over gloo (vLLM on a CPU whose kernels have no shared-memory
all-reduce, e.g. AVX2-only x86) records the collective twice: ``c10d::allreduce_`` on
the calling thread, which only enqueues the work and returns (~0.1 ms), and
``gloo:all_reduce`` on one of gloo's worker threads, which moves the data while the
caller blocks in an unrecorded wait (~0.5-2 ms). The collective lasts from the op's
start to the end of its work; the worker thread's own ops (``aten::copy_``, ...) inside
that annotation are the collective's, not compute that hides it.

A work annotation belongs to the latest communication op of the same rank and kind that
started at or before it, on another thread (one that holds no communication op itself).
"""

from __future__ import annotations

import numpy as np

from ...core.intervals import containing, group_ids, top_level
from ...core.launches import thread_ids
from ...core.ordering import lexsort
from ...core.profile import K_ANNOTATION, Profile
from ...knowledge.taxonomy import FUSED_OPS

COMM = FUSED_OPS.index("communication")


def work_rows(profile: Profile, ops: np.ndarray) -> np.ndarray:
    """The communication annotations on threads other than those of the ``ops``."""
    ev = profile.events
    rows = np.flatnonzero(
        (ev["kind"] == K_ANNOTATION) & (ev["fused"] == COMM) & (ev["start"] >= 0) & (ev["device"] < 0)
    )
    if not len(rows) or not len(ops):
        return rows[:0]
    thread = thread_ids(profile)
    return rows[~np.isin(thread[rows], thread[ops])]


def work_ends(
    profile: Profile, ops: np.ndarray, op_kind: np.ndarray, work: np.ndarray, work_kind: np.ndarray
) -> np.ndarray:
    """Each op's end: its own, or that of the backend work it handed off, whichever is later."""
    ev = profile.events
    end = ev["start"][ops] + ev["dur"][ops]
    if not len(work) or not len(ops):
        return end
    rank = ev["rank"].astype(np.int64)
    gid = group_ids(np.concatenate([rank[ops], rank[work]]), np.concatenate([op_kind, work_kind]))
    og, wg = gid[: len(ops)], gid[len(ops) :]
    os_, ws = ev["start"][ops], ev["start"][work]
    order = lexsort((os_, og))
    big = int(max(os_.max(), ws.max())) + 1
    keys = og[order] * big + os_[order]
    pos = np.searchsorted(keys, wg * big + ws, side="right") - 1
    ok = pos >= 0
    ok[ok] = og[order][pos[ok]] == wg[ok]
    np.maximum.at(end, order[pos[ok]], ws[ok] + ev["dur"][work[ok]])
    return end


def inside_work(profile: Profile, rows: np.ndarray, work: np.ndarray) -> np.ndarray:
    """Mask of the ``rows`` that lie inside a work annotation on their own thread."""
    ev = profile.events
    if not len(work) or not len(rows):
        return np.zeros(len(rows), bool)
    thread = thread_ids(profile)
    wg, rg = thread[work], thread[rows]
    we = ev["start"][work] + ev["dur"][work]
    outer = top_level(wg, ev["start"][work], we)
    w = work[outer]
    return (
        containing(wg[outer], ev["start"][w], we[outer], rg, ev["start"][rows], ev["start"][rows] + ev["dur"][rows])
        >= 0
    )

"""How much of each rank's communication compute hides: per rank and phase, the union of
its communication intervals, the part of it during which compute ran, and the rest
(exposed communication), with the rank's step time in that phase to compare against:
the span of the work its steps launched (device work runs behind the host's step range)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.intervals import containing, top_level, union_length
from ...core.launches import thread_ids
from ...core.profile import PHASES, Profile
from .backend_work import inside_work


@dataclass
class Overlap:
    """Indexed [rank position, phase]; ``ranks`` gives the rank of each position."""

    ranks: list[int]
    comm: np.ndarray
    overlapped: np.ndarray
    step: np.ndarray

    @property
    def exposed(self) -> np.ndarray:
        return self.comm - self.overlapped


def compute_events(
    profile: Profile, basis: np.ndarray, comm_idx: np.ndarray, host: bool, work: np.ndarray | None = None
) -> np.ndarray:
    """Rows of the compute the communication can hide behind: the basis events that are
    not communication; on the host basis also not the top-level ops a collective runs in,
    nor the ops of a backend's threads inside the collective work they run (``work``)."""
    ev = profile.events
    mask = basis & (ev["start"] >= 0)
    mask[comm_idx] = False
    idx = np.flatnonzero(mask)
    if host and len(idx) and len(comm_idx):
        end = ev["start"] + ev["dur"]
        thread = thread_ids(profile)
        cg, qg = thread[idx], thread[comm_idx]
        outer = top_level(cg, ev["start"][idx], end[idx])
        o = idx[outer]
        hit = containing(cg[outer], ev["start"][o], end[o], qg, ev["start"][comm_idx], end[comm_idx])
        holds = np.zeros(len(ev), bool)
        holds[o[hit[hit >= 0]]] = True
        idx = idx[~holds[idx]]
    if host and work is not None and len(work):
        idx = idx[~inside_work(profile, idx, work)]
    return idx


def step_spans(profile: Profile, rows: np.ndarray) -> np.ndarray:
    """Each step row's time: from the first to the last of its ``rows`` events (the device
    work it launched, which runs behind the host), else its own wall time."""
    ev, steps = profile.events, profile.steps
    span = steps["dur"].astype(np.int64).copy()
    st = ev["step"][rows].astype(np.int64)
    ok = st >= 0
    if ok.any():
        k = len(steps)
        lo = np.full(k, np.iinfo(np.int64).max)
        hi = np.full(k, np.iinfo(np.int64).min)
        s = ev["start"][rows[ok]]
        np.minimum.at(lo, st[ok], s)
        np.maximum.at(hi, st[ok], s + ev["dur"][rows[ok]])
        has = hi > lo
        span[has] = hi[has] - lo[has]
    return span


def overlap(
    profile: Profile, comm_idx: np.ndarray, comm_end: np.ndarray, compute_idx: np.ndarray, ranks: list[int]
) -> Overlap:
    """Communication (``comm_end``: each event's end, its backend work's included), its
    overlap with compute, and step time, per (rank, phase)."""
    ev, steps = profile.events, profile.steps
    sorted_ranks = np.array(sorted(ranks), np.int64)
    order = np.argsort(np.array(ranks, np.int64), kind="stable")
    n_p = len(PHASES)
    n_g = len(ranks) * n_p

    def position(rank: np.ndarray) -> np.ndarray:
        """Index into ``ranks`` of each rank, -1 for ranks not in it."""
        if not len(ranks):
            return np.full(len(rank), -1, np.int64)
        i = np.minimum(np.searchsorted(sorted_ranks, rank), len(ranks) - 1)
        return np.where(sorted_ranks[i] == rank, order[i], -1)

    keep = position(ev["rank"][comm_idx].astype(np.int64)) >= 0
    comm_idx, comm_end = comm_idx[keep], comm_end[keep]
    compute_idx = compute_idx[position(ev["rank"][compute_idx].astype(np.int64)) >= 0]

    def union(rows: np.ndarray, end: np.ndarray) -> np.ndarray:
        gid = position(ev["rank"][rows].astype(np.int64)) * n_p + ev["phase"][rows].astype(np.int64)
        return union_length(gid, ev["start"][rows], end, n_g)

    both = np.concatenate([comm_idx, compute_idx])
    compute_end = ev["start"][compute_idx] + ev["dur"][compute_idx]
    comm = union(comm_idx, comm_end)
    inter = comm + union(compute_idx, compute_end) - union(both, np.concatenate([comm_end, compute_end]))
    step = np.zeros(n_g, np.int64)
    if len(steps):
        sp = position(steps["rank"].astype(np.int64))
        ok = sp >= 0
        span = step_spans(profile, both)
        np.add.at(step, sp[ok] * n_p + steps["phase"][ok].astype(np.int64), span[ok])
    shape = (len(ranks), n_p)
    return Overlap(ranks, comm.reshape(shape), inter.reshape(shape), step.reshape(shape))

"""The Summary's communication section: collectives by kind, group and phase; each rank's
wait, straggling and exposed communication by phase (from ``collectives`` and ``overlap``)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...core.profile import PHASES, Profile
from ...knowledge.collective_kinds import BUS_FACTOR, KIND_NAMES
from ...summary import Collective, Comm, RankComm
from .collectives import Collectives
from .overlap import Overlap

ALL = "all"


def comm_section(profile: Profile, c: Collectives, ov: Overlap) -> Comm:
    if not len(c.idx):
        return Comm()
    return Comm(
        collectives=collective_rows(profile, c),
        ranks=rank_rows(c, ov),
        events=int(len(c.idx)),
        matched_events=int(np.count_nonzero(c.inst >= 0)),
        basis=c.basis,
    )


def collective_rows(profile: Profile, c: Collectives) -> list[Collective]:
    """One row per (kind, group, phase) of the matched collectives, the most time first."""
    k = len(c.i_kind)
    if not k:
        return []
    m = c.inst >= 0
    ii, rr = c.inst[m], c.rank[m]
    names = profile.events["name"][c.idx[m]]
    rows = []
    keys = np.stack([c.i_kind, c.i_group, c.i_phase], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    for j, (kind, group, phase) in enumerate(uniq.tolist()):
        sel = np.flatnonzero(inv == j)
        ev_sel = np.isin(ii, sel)
        lat = c.i_latency[sel]
        wait = {str(r): int(c.wait[m][ev_sel & (rr == r)].sum()) for r in np.unique(rr[ev_sel]).tolist()}
        last = Counter(c.i_last[sel].tolist())
        nbytes = c.i_bytes[sel]
        known = nbytes >= 0
        row = Collective(
            kind=KIND_NAMES[kind],
            group=c.group_labels[group],
            phase=PHASES[phase],
            count=int(len(sel)),
            name=profile.strings[Counter(names[ev_sel].tolist()).most_common(1)[0][0]],
            ranks=int(c.i_ranks[sel].max()),
            latency_ns=int(lat.sum()),
            mean_latency_ns=float(lat.mean()),
            wait_ns_by_rank=wait,
            arrived_last_by_rank={str(r): int(n) for r, n in sorted(last.items())},
            start_skew_mean_ns=float(c.i_start_skew[sel].mean()),
            start_skew_max_ns=int(c.i_start_skew[sel].max()),
            end_skew_mean_ns=float(c.i_end_skew[sel].mean()),
            end_skew_max_ns=int(c.i_end_skew[sel].max()),
        )
        if known.any():
            b, t = int(nbytes[known].sum()), int(lat[known].sum())
            row.bytes = b
            if t > 0:
                row.algo_bytes_s = b / t * 1e9
                factor = BUS_FACTOR.get(row.kind)
                if factor is not None:
                    n = c.i_size[sel][known]
                    row.bus_bytes_s = float((nbytes[known] * np.array([factor(x) for x in n.tolist()])).sum()) / t * 1e9
        rows.append(row)
    rows.sort(key=lambda r: (-r.latency_ns - sum(r.wait_ns_by_rank.values()), r.kind, r.group, r.phase))
    return rows


def rank_rows(c: Collectives, ov: Overlap) -> list[RankComm]:
    """Per rank: one row per phase with communication, and one for all phases."""
    m = c.inst >= 0
    ii, rr, wait = c.inst[m], c.rank[m], c.wait[m]
    ph = c.i_phase[ii] if len(ii) else np.zeros(0, np.int64)
    out = []
    for pos, r in enumerate(ov.ranks):
        phases = [p for p in range(len(PHASES)) if ov.comm[pos, p] or np.any((rr == r) & (ph == p))]
        for p in phases + [None]:
            sel = (rr == r) & (ph == p if p is not None else True)
            n = int(sel.sum())
            comm = int(ov.comm[pos, p] if p is not None else ov.comm[pos].sum())
            olap = int(ov.overlapped[pos, p] if p is not None else ov.overlapped[pos].sum())
            step = int(ov.step[pos, p] if p is not None else ov.step[pos].sum())
            mine = ii[sel]
            w = int(wait[sel].sum())
            out.append(
                RankComm(
                    rank=int(r),
                    phase=PHASES[p] if p is not None else ALL,
                    collectives=n,
                    comm_ns=comm,
                    overlapped_ns=olap,
                    exposed_ns=comm - olap,
                    step_ns=step,
                    exposed_share=((comm - olap) / step) if step else None,
                    wait_ns=w,
                    mean_wait_ns=(w / n) if n else None,
                    arrived_last_share=float(np.count_nonzero(c.i_last[mine] == r) / n) if n else None,
                    arrived_first_share=float(np.count_nonzero(c.i_first[mine] == r) / n) if n else None,
                )
            )
    return out

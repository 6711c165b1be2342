"""Collectives matched across ranks (vendor-neutral): which events are communication,
what kind each is, which events of different ranks are the same collective, and the
ranks' clocks aligned on them.

- **Which**: device work of the taxonomy's communication family (NCCL/RCCL
  ``ncclDevKernel_*``/``ncclKernel_*``, vLLM's custom all-reduce ``cross_device_reduce*``,
  Kunlun ``kl3_all_reduce*``/BKCL/XCCL, HCCL); on a run without device work (the CPU),
  the outermost host ops of that family (``_C::shm_allreduce``, ``c10d::allreduce_``),
  each lasting until the work it handed to gloo's threads ends (``backend_work``).
- **Kind** (``collective_kinds.KINDS``, first match wins; else the kind of the name's
  communication family, ``taxonomy.collective_kind``): from the collective name the trace records
  (``record_param_comms``'s ``Collective name``), else the communication host op the
  work was launched from (``nccl:all_reduce``, ``c10d::allreduce_``: NCCL runs several
  kinds as ``ncclKernel_SendRecv``), else the event's own name.
- **Group**: the process group the trace names, else the stream (or host thread) it
  ran on, numbered per rank in order of first use so that ranks whose stream ids differ
  still pair up.
- **Match**: the k-th collective of a kind in a group, on each rank: by the group's
  sequence number (``Seq``) where every event of the group has one, else counted within
  each engine step (ranks aligned by step, see ``ranks``), else over the whole trace.
- **Clock**: the ranks of one collective finish together (each waits for the last), so
  each rank's clock offset is the median difference of its collectives' ends against the
  lowest rank's. Offsets within ``CLOCK_TOLERANCE_NS`` (or ranks on one host) mean the
  clocks are shared and times are used as recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.intervals import containing, distinct_rows, top_level
from ...core.launches import launch_rows, thread_ids
from ...core.ordering import lexsort
from ...core.profile import DEVICE_KINDS, K_ANNOTATION, K_CPU_OP, Profile
from ...core.run_info import RunInfo
from ...knowledge.collective_kinds import KIND_NAMES, OTHER_KIND, dtype_bytes, kind_of
from ...knowledge.taxonomy import FUSED_OPS, collective_kind
from ..attribution import launch_points
from .align import step_engine
from .backend_work import work_ends, work_rows
from .clocks import CLOCK_TOLERANCE_NS as CLOCK_TOLERANCE_NS
from .clocks import clock_offsets

COMM = FUSED_OPS.index("communication")


@dataclass
class Collectives:
    """Every communication event (``idx`` into events) and the matched collectives."""

    basis: str = "device"
    idx: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rank: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    group: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # into group_labels
    group_labels: list[str] = field(default_factory=list)
    inst: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # matched collective, -1
    start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # on the aligned clock
    end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # on the recorded clock: each event's end, or that of the backend work it handed off
    work_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    work: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # backend work annotations
    wait: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    match: str = "none"
    clock: str = "single_rank"
    offsets: dict[int, int] = field(default_factory=dict)
    # per matched collective
    i_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    i_group: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    i_phase: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    i_ranks: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    i_latency: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    i_start_skew: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    i_end_skew: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    i_last: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # rank that arrived last
    i_first: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    i_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # -1 unknown
    i_size: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # group size n
    i_rankset: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # into ranksets
    ranksets: list[tuple[int, ...]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def one_host(run: RunInfo) -> bool:
    """Whether the sources say that every rank ran on one host (then they share a clock)."""
    hosts = {s.get("host") for s in run.get("sources", []) if isinstance(s, dict) and s.get("rank") is not None}
    return len(hosts) == 1 and None not in hosts and "" not in hosts


def comm_events(profile: Profile) -> tuple[np.ndarray, str]:
    """Rows of the communication events, and the basis ("device", or "host" without device work)."""
    ev = profile.events
    timed = ev["start"] >= 0
    dev = np.isin(ev["kind"], DEVICE_KINDS)
    if dev.any():
        return np.flatnonzero(dev & timed & (ev["fused"] == COMM)), "device"
    host = np.flatnonzero(timed & (ev["kind"] == K_CPU_OP) & (ev["fused"] == COMM))
    if len(host):  # the outermost of nested ones (vllm::all_reduce > _C::shm_allreduce)
        host = host[top_level(thread_ids(profile)[host], ev["start"][host], ev["start"][host] + ev["dur"][host])]
    return host, "host"


def _name_kinds(profile: Profile, rows: np.ndarray) -> np.ndarray:
    names = profile.events["name"][rows]
    uniq, inv = np.unique(names, return_inverse=True)
    return (
        np.array([collective_kind(profile.strings[int(u)]) for u in uniq], np.int64)[inv]
        if len(rows)
        else np.zeros(0, np.int64)
    )


def _holders(profile: Profile, idx: np.ndarray, cands: np.ndarray) -> np.ndarray:
    """For each event, the candidate host range (same rank and thread) holding its launch
    point: the innermost (latest-starting), else the outermost; -1."""
    ev = profile.events
    out = np.full(len(idx), -1, np.int64)
    if not len(cands) or not len(idx):
        return out
    lt, le, qg = launch_points(profile, launch_rows(profile), idx)
    end = ev["start"] + ev["dur"]
    cg = thread_ids(profile)[cands]
    for sub in (np.arange(len(cands)), np.flatnonzero(top_level(cg, ev["start"][cands], end[cands]))):
        miss = np.flatnonzero(out < 0)
        if not len(miss):
            break
        hit = containing(cg[sub], ev["start"][cands[sub]], end[cands[sub]], qg[miss], lt[miss], le[miss])
        ok = hit >= 0
        out[miss[ok]] = cands[sub[hit[ok]]]
    return out


def match(profile: Profile, same_host: bool = False) -> Collectives:
    """Find, classify and match the collectives; align the ranks' clocks on them."""
    ev, comms = profile.events, profile.comms
    idx, basis = comm_events(profile)
    out = Collectives(basis=basis, idx=idx)
    n = len(idx)
    if not n:
        return out
    rank = ev["rank"][idx].astype(np.int64)
    meta = _metadata(profile, idx, basis)
    has_meta = meta >= 0
    kind = _kinds(profile, idx, meta, basis)
    out.rank, out.kind = rank, kind

    def from_meta(col: str) -> np.ndarray:
        if not len(comms):
            return np.full(n, -1, np.int64)
        return np.where(has_meta, comms[col][np.maximum(meta, 0)], -1).astype(np.int64)

    # the group: the process group, else the stream / thread in order of first use
    group_key, labels = _groups(profile, idx, rank, from_meta("pg"), basis)
    out.group, out.group_labels = group_key, labels
    start = ev["start"][idx]
    out.work = work_rows(profile, idx) if basis == "host" else idx[:0]
    out.work_end = work_ends(profile, idx, kind, out.work, _name_kinds(profile, out.work))
    dur = out.work_end - start
    mode = _instances_of(out, profile, idx, from_meta("seq"), start)
    used = mode[out.inst >= 0]
    out.match = (
        ("seq" if (used == 0).all() else "step" if (used == 1).all() else "order" if (used == 2).all() else "mixed")
        if len(used)
        else "none"
    )
    out.offsets, out.clock = clock_offsets(out.inst, rank, start + dur, len(np.unique(rank)), same_host)
    off = np.array([out.offsets.get(int(r), 0) for r in rank.tolist()], np.int64)
    out.start, out.end = start - off, start + dur - off
    _instances(out, profile, idx, meta, dur)
    if out.match != "seq":
        out.warnings += _doubtful(out)
    return out


def _metadata(profile: Profile, idx: np.ndarray, basis: str) -> np.ndarray:
    """Each collective's row in ``comms``: the event's own, else the host range it was
    launched from; -1."""
    ev = profile.events
    meta = ev["comm"][idx].astype(np.int64)
    if basis == "device" and (meta < 0).any():
        host = (ev["device"] < 0) & (ev["start"] >= 0) & np.isin(ev["kind"], (K_CPU_OP, K_ANNOTATION))
        holder = _holders(profile, idx, np.flatnonzero(host & (ev["comm"] >= 0)))
        take = (meta < 0) & (holder >= 0)
        meta[take] = ev["comm"][holder[take]]
    return meta


def _kinds(profile: Profile, idx: np.ndarray, meta: np.ndarray, basis: str) -> np.ndarray:
    """The kind of each collective: the recorded collective name, the launching host op's,
    the own name."""
    ev, comms, strings = profile.events, profile.comms, profile.strings
    kind = np.full(len(idx), OTHER_KIND, np.int64)
    has_meta = meta >= 0
    if has_meta.any():
        coll = comms["coll"][meta[has_meta]]
        kind[has_meta] = [kind_of(strings[int(c)]) if c >= 0 else OTHER_KIND for c in coll.tolist()]
    if basis == "device":
        host = (ev["device"] < 0) & (ev["start"] >= 0) & np.isin(ev["kind"], (K_CPU_OP, K_ANNOTATION))
        h = _holders(profile, idx, np.flatnonzero(host & (ev["fused"] == COMM)))
        todo = (kind == OTHER_KIND) & (h >= 0)
        kind[todo] = _name_kinds(profile, h[todo])
    todo = kind == OTHER_KIND
    kind[todo] = _name_kinds(profile, idx[todo])
    return kind


def _instances_of(
    out: Collectives, profile: Profile, idx: np.ndarray, seq: np.ndarray, start: np.ndarray
) -> np.ndarray:
    """Which events of different ranks are the same collective (``out.inst``, -1 unmatched):
    per group by their sequence number when every event has one, else by engine step, else by
    order; returns each event's mode (0 seq, 1 step, 2 order)."""
    n = len(idx)
    st = profile.events["step"][idx].astype(np.int64)
    estep = np.full(n, -1, np.int64)
    es = step_engine(profile)
    if (es >= 0).any():
        ok = st >= 0
        estep[ok] = es[st[ok]]
    g_seq = np.ones(len(out.group_labels), bool)
    np.logical_and.at(g_seq, out.group, seq >= 0)
    by_seq = g_seq[out.group]
    by_step = ~by_seq & bool((estep >= 0).any())
    slot = np.where(by_seq, seq, np.where(by_step, estep, -1))
    mode = np.where(by_seq, 0, np.where(by_step, 1, 2))
    k = _ordinal(out.rank, out.group, out.kind, mode, slot, start)
    _, inst = distinct_rows(out.group, out.kind, mode, slot, k)
    # matched: collectives with events from at least two ranks
    ranks_in = np.zeros(int(inst.max()) + 1, np.int64)
    np.add.at(ranks_in, inst, 1)
    keep = ranks_in[inst] >= 2
    _, dense = np.unique(inst[keep], return_inverse=True)
    out.inst = np.full(n, -1, np.int64)
    out.inst[keep] = dense
    return mode


def step_waits(profile: Profile, c: Collectives) -> np.ndarray:
    """Each step row's wait at collectives (the sum over its communication events)."""
    out = np.zeros(len(profile.steps), np.int64)
    st = profile.events["step"][c.idx].astype(np.int64) if len(c.idx) else np.zeros(0, np.int64)
    ok = st >= 0
    np.add.at(out, st[ok], c.wait[ok])
    return out


def _doubtful(c: Collectives) -> list[str]:
    """Matched by count only, collectives that end far apart were likely not the same one."""
    out = []
    for kind in np.unique(c.i_kind).tolist():
        for group in np.unique(c.i_group[c.i_kind == kind]).tolist():
            m = (c.i_kind == kind) & (c.i_group == group)
            skew, lat = float(c.i_end_skew[m].mean()), float(c.i_latency[m].mean())
            if skew > max(lat, CLOCK_TOLERANCE_NS):
                out.append(
                    f"{KIND_NAMES[kind]} collectives on {c.group_labels[group]} end {skew / 1e6:.3g} ms apart "
                    f"on average across ranks (latency {lat / 1e6:.3g} ms): matched by their order only (the "
                    "trace has no process-group sequence numbers), they may not be the same collectives"
                )
    return out


def _groups(profile: Profile, idx: np.ndarray, rank: np.ndarray, pg: np.ndarray, basis: str):
    """A group id per event and the groups' labels."""
    ev = profile.events
    track = ev["track"][idx]
    # streams (threads) per rank in order of first use
    order = lexsort((ev["start"][idx], rank))
    nth = np.zeros(len(idx), np.int64)
    seen: dict[tuple[int, int], int] = {}
    per_rank: dict[int, int] = {}
    first_track: dict[int, tuple[int, int]] = {}
    for i in order.tolist():
        r, t = int(rank[i]), int(track[i])
        key = (r, t)
        if key not in seen:
            seen[key] = per_rank.get(r, 0)
            per_rank[r] = seen[key] + 1
        nth[i] = seen[key]
        if seen[key] not in first_track or r < first_track[seen[key]][0]:
            first_track[seen[key]] = (r, t)
    where = "stream" if basis == "device" else "thread"
    labels: list[str] = []
    ids: dict[tuple[int, int], int] = {}
    out = np.zeros(len(idx), np.int64)
    for i, (p, s) in enumerate(zip(pg.tolist(), nth.tolist())):
        key = (p, -1) if p >= 0 else (-1, s)
        g = ids.get(key)
        if g is None:
            g = ids[key] = len(labels)
            labels.append(
                f"pg {profile.strings[p]}"
                if p >= 0
                else (f"{where} {first_track[s][1]}" if basis == "device" else "host")
            )
        out[i] = g
    return out, labels


def _ordinal(rank, group, kind, mode, slot, start) -> np.ndarray:
    """0, 1, 2, ... over each rank's events of one (group, kind, mode, slot), by start."""
    order = lexsort((start, slot, mode, kind, group, rank))
    keys = np.stack([rank[order], group[order], kind[order], mode[order], slot[order]])
    new = np.concatenate(([True], (keys[:, 1:] != keys[:, :-1]).any(axis=0)))
    run_start = np.maximum.accumulate(np.where(new, np.arange(len(order)), 0))
    out = np.empty(len(order), np.int64)
    out[order] = np.arange(len(order)) - run_start
    return out


def _instances(out: Collectives, profile: Profile, idx, meta, dur) -> None:
    """Latency, skew, first and last rank, size of every matched collective; waits."""
    m = out.inst >= 0
    k = int(out.inst.max()) + 1 if m.any() else 0
    out.wait = np.zeros(len(idx), np.int64)
    if not k:
        return
    ii = out.inst[m]
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min

    def red(fn, values, init):
        a = np.full(k, init, np.int64)
        fn.at(a, ii, values)
        return a

    s, e, r, d = out.start[m], out.end[m], out.rank[m], dur[m]
    latest, earliest = red(np.maximum, s, small), red(np.minimum, s, big)
    out.wait[m] = latest[ii] - s
    out.i_latency = red(np.minimum, d, big)
    out.i_start_skew = latest - earliest
    out.i_end_skew = red(np.maximum, e, small) - red(np.minimum, e, big)
    out.i_last = red(np.minimum, np.where(s == latest[ii], r, big), big)
    out.i_first = red(np.minimum, np.where(s == earliest[ii], r, big), big)
    ref = red(np.minimum, r, big)
    is_ref = r == ref[ii]
    rows = np.flatnonzero(m)[is_ref]  # the lowest rank's event of each collective
    at = ii[is_ref]
    out.i_kind = np.zeros(k, np.int64)
    out.i_kind[at] = out.kind[rows]
    out.i_group = np.zeros(k, np.int64)
    out.i_group[at] = out.group[rows]
    out.i_phase = np.zeros(k, np.int64)
    out.i_phase[at] = profile.events["phase"][idx[rows]]
    out.i_ranks = np.bincount(ii, minlength=k)
    # sizes from the lowest rank's metadata: bytes of the payload, group size n
    comms, strings = profile.comms, profile.strings
    out.i_bytes = np.full(k, -1, np.int64)
    out.i_size = out.i_ranks.copy()
    mr = meta[rows]
    for row, c in zip(at.tolist(), mr.tolist()):
        if c < 0:
            continue
        gs = int(comms["group_size"][c])
        if gs >= 2:
            out.i_size[row] = gs
        kind = KIND_NAMES[int(out.i_kind[row])]
        nel = int(comms["out_nelems"][c] if kind == "all_gather" else comms["in_nelems"][c])
        dt = int(comms["dtype"][c])
        width = dtype_bytes(strings[dt]) if dt >= 0 else -1
        if nel >= 0 and width > 0:
            out.i_bytes[row] = nel * width
    # the set of ranks of each collective (for the parallel groups)
    order = lexsort((r, ii))
    sets: dict[tuple[int, ...], int] = {}
    out.i_rankset = np.zeros(k, np.int64)
    bounds = np.searchsorted(ii[order], np.arange(k + 1))
    rs = r[order].tolist()
    for j in range(k):
        key = tuple(rs[bounds[j] : bounds[j + 1]])
        out.i_rankset[j] = sets.setdefault(key, len(sets))
    out.ranksets = list(sets)

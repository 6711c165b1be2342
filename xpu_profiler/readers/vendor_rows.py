"""Profiles out of vendor profilers' tables (Nsight Systems, rocprofv3): blocks of rows, one
block per kind of record, joined into one Profile with one rank per process.

A vendor profiler writes one table per kind of record — device work (kernels, copies, fills),
runtime calls, ranges (NVTX, ROCTx) — each row with its process, thread or stream, times in
integer ns on one clock, and a correlation id that links a runtime call to the device work it
enqueued. A reader turns each table into a ``Block`` of numpy columns (names as ids into the
file's own string table) and ``assemble`` joins the blocks:

- **ranks**: a report of several processes (``nsys profile --trace-fork-before-exec``, a
  launcher and its workers) holds one rank per process that ran device work. When each such
  process ran on one device of its own, its rank is that device's index (rank *i* on GPU *i*, as
  ``torchrun`` and vLLM's workers place them); otherwise the processes are numbered in the order
  of the first device each used. Host rows of processes that ran no device work (a launcher, a
  shell, vLLM's front-end) are left out and counted; a report with no device work at all keeps
  every process with host rows, numbered in pid order. Device work on no GPU (device -1: a
  rocprofv3 copy from host to host, between CPU agents) is no GPU's: it is left out of the
  profile (no device stream of its own) and counted in one note per table.
- **times**: the profile's time 0 is the earliest row; ``base_ns`` is that row on the epoch when
  the file gives the epoch of its clock, else on the file's own clock (so that files of one
  machine still line up).
- **odd rows** (a value that is missing or no 64-bit integer, a time beyond any clock, an end
  before the start, a duration beyond any real run, device work on a device index no machine
  has) are skipped and counted in one warning per table and reason, never a failure. A reader
  marks a value it could not read as ``ODD`` and drops those rows itself (``usable``: it knows
  the columns' names), counting them in the block's ``skipped``; ``assemble`` checks the times
  and devices and writes the warnings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.profile import DEVICE_KINDS, EVENT_SCHEMA, KINDS, Profile, StringTable, Table
from .base import MAX_DEVICE, NO_DEVICE

MAX_NS = 1 << 62  # no clock reads beyond it: a row there is odd
MAX_DUR_NS = 10**15  # ~11.6 days, as the Kineto reader's MAX_DUR_US: a row that long is absurd
ODD = np.iinfo(np.int64).min  # a value a reader could not read as a 64-bit integer (NULL, text, beyond int64)
I64_MAX = np.iinfo(np.int64).max


@dataclass
class Block:
    """One table's rows as columns. ``name`` indexes ``names`` (the file's string table, or a
    list made for the block); ``device`` is -1 for host rows."""

    table: str  # where the rows came from, as a warning names it ("CUPTI_ACTIVITY_KIND_KERNEL")
    kind: int
    names: Sequence[str] | Mapping[int, str]
    name: np.ndarray
    start: np.ndarray
    end: np.ndarray
    pid: np.ndarray
    track: np.ndarray
    device: np.ndarray | None = None
    corr: np.ndarray | None = None
    flops: np.ndarray | None = None  # copies and fills: bytes
    cat: str = ""
    copy: np.ndarray | None = None  # copies: their direction as the profiler recorded it (copy_kinds)
    skipped: dict[str, int] = field(default_factory=dict)  # reason → rows the reader left out (``usable``)

    def __len__(self) -> int:
        return len(self.start)


@dataclass
class Assembled:
    profile: Profile
    ranks: dict[int, int]  # pid → rank
    host_rows_left_out: dict[int, int] = field(default_factory=dict)  # pid → rows of a process with no device work


def usable(cols: Sequence[np.ndarray], names: Sequence[str], why: str, skipped: dict[str, int]) -> list[np.ndarray]:
    """The columns without their rows that hold ``ODD`` in one of them; each such row counted in
    ``skipped`` under ``why.format(name)``, ``name`` that of its first odd column ("a NULL or
    non-integer {}"). A clean read costs one minimum per column."""
    odd = [i for i, c in enumerate(cols) if len(c) and c.min() == ODD]
    if not odd:
        return list(cols)
    bad = np.zeros(len(cols[0]), bool)
    for i in odd:
        new = (cols[i] == ODD) & ~bad
        n = int(new.sum())
        if n:
            key = why.format(names[i])
            skipped[key] = skipped.get(key, 0) + n
            bad |= new
    return [c[~bad] for c in cols]


def _row_problems(b: Block) -> tuple[np.ndarray, dict[str, int]]:
    """Which of a block's rows have usable times (and, for device work, a usable device), and
    the others counted by what is wrong."""
    start, end = b.start, b.end
    beyond = (start < 0) | (start >= MAX_NS) | (end < 0) | (end >= MAX_NS)
    backwards = ~beyond & (end < start)
    too_long = ~beyond & ~backwards & (end - np.where(beyond, end, start) >= MAX_DUR_NS)
    bad = beyond | backwards | too_long
    no_device = np.zeros(len(b), bool)
    if b.kind in DEVICE_KINDS and b.device is not None:
        no_device = ~bad & ((b.device < -1) | (b.device >= MAX_DEVICE))
    found = {
        "a time beyond any clock (negative, or past 2^62 ns)": int(beyond.sum()),
        "an end before the start": int(backwards.sum()),
        "a duration of 11.6 days or more (beyond any real run)": int(too_long.sum()),
        NO_DEVICE: int(no_device.sum()),
    }
    return ~(bad | no_device), {k: n for k, n in found.items() if n}


def on_gpu(device: np.ndarray) -> np.ndarray:
    """Which device indices are a GPU's: 0 up to ``MAX_DEVICE`` (-1 is none, the host)."""
    return (device >= 0) & (device < MAX_DEVICE)


def _off_gpu(b: Block, off_gpu: dict[str, list]) -> Block:
    """The block without its device work on no GPU (device -1: a copy from host to host): those
    rows are no GPU's stream and say nothing of a rank; counted in ``off_gpu`` (table → [rows,
    the first one's name])."""
    if b.kind not in DEVICE_KINDS or b.device is None or not len(b):
        return b
    off = b.device < 0
    n = int(off.sum())
    if not n:
        return b
    first = int(b.name[int(np.argmax(off))])
    if isinstance(b.names, Mapping):
        name = b.names.get(first, f"#{first}")
    else:
        name = b.names[first] if 0 <= first < len(b.names) else f"#{first}"
    off_gpu.setdefault(b.table, [0, str(name)[:80]])[0] += n
    return _take(b, ~off)


def _col(values: np.ndarray | None, n: int, default: int) -> np.ndarray:
    return np.full(n, default, np.int64) if values is None else np.asarray(values, np.int64)


def ranks_of(blocks: Sequence[Block]) -> dict[int, int]:
    """pid → rank: see the module's docstring."""
    firsts: dict[int, tuple[int, int]] = {}  # pid → (first start, its device)
    devices: dict[int, set[int]] = {}
    for b in blocks:
        if b.kind not in DEVICE_KINDS or not len(b) or b.device is None:
            continue
        gpu = on_gpu(b.device)  # (device -1: no GPU's work, no rank's)
        for pid in np.unique(b.pid[gpu]).tolist():
            mine = (b.pid == pid) & gpu
            devices.setdefault(pid, set()).update(np.unique(b.device[mine]).tolist())
            i = int(np.argmin(np.where(mine, b.start, np.iinfo(np.int64).max)))
            first = (int(b.start[i]), int(b.device[i]))
            firsts[pid] = min(firsts.get(pid, first), first)
    if not devices:  # no device work anywhere: every process with rows, in pid order
        pids = sorted({p for b in blocks for p in np.unique(b.pid).tolist()})
        return {p: i for i, p in enumerate(pids)}
    own = [next(iter(d)) for d in devices.values() if len(d) == 1]
    if len(own) == len(devices) and len(set(own)) == len(own) and min(own) >= 0:
        return {p: next(iter(d)) for p, d in devices.items()}
    order = sorted(devices, key=lambda p: (firsts[p][1], firsts[p][0], p))
    return {p: i for i, p in enumerate(order)}


def _interned(
    strings: StringTable, names: Sequence[str] | Mapping[int, str], ids: np.ndarray, unnamed: list[int]
) -> np.ndarray:
    """Profile string ids of a block's name ids (only the names it uses are interned; an id
    the table lacks is named by its number, ``#12``: ``unnamed`` gets its rows, the ids and the first)."""
    if not len(ids):
        return np.zeros(0, np.int32)
    uniq, inv = np.unique(ids, return_inverse=True)
    inv = inv.reshape(-1)
    if isinstance(names, Mapping):
        known = [u in names for u in uniq.tolist()]
    else:
        known = [0 <= u < len(names) for u in uniq.tolist()]
    words = [names[u] if k else f"#{u}" for u, k in zip(uniq.tolist(), known)]
    if not all(known):
        lost = ~np.array(known)
        unnamed[0] += int(lost[inv].sum())
        unnamed[1] += int(lost.sum())
        unnamed[2] = int(uniq[lost][0])
    out: np.ndarray = strings.intern_many(words)[inv]
    return out


def _usable_blocks(path: Path, blocks: Sequence[Block], notes: list[str]) -> list[Block]:
    """The blocks without their odd rows (``_row_problems``, and those a reader left out) and
    their device work on no GPU, each kind counted in one line of ``notes`` per table."""
    kept: list[Block] = []
    skipped: dict[tuple[str, str], int] = {}  # (table, reason) → rows: one warning each
    off_gpu: dict[str, list] = {}  # table → [rows of device work on no GPU, the first one's name]
    for b in blocks:
        ok, found = _row_problems(b)
        for why, n in [*b.skipped.items(), *found.items()]:
            skipped[(b.table, why)] = skipped.get((b.table, why), 0) + n
        if found:
            b = _take(b, ok)
        b = _off_gpu(b, off_gpu)
        if len(b):
            kept.append(b)
    for (table, why), n in skipped.items():
        notes.append(f"{path.name}: skipped {n:,} {table} row(s) with {why}")
    for table, (n, name) in off_gpu.items():
        notes.append(
            f"{path.name}: not used by the analysis: {n:,} {table} row(s) on no GPU (a copy from host to host, or "
            f"on an agent the file lists as no GPU; first: {name})"
        )
    return kept


def assemble(
    path: Path,
    blocks: Sequence[Block],
    epoch_of_clock: int | None,
    notes: list[str],
    ranks: dict[int, int] | None = None,
) -> Assembled:
    """One Profile of the blocks (see the module's docstring). ``epoch_of_clock``: the epoch ns
    of the file clock's 0, when the file says it. ``ranks``: pid → rank, when the reader knows
    better (``ranks_of`` otherwise)."""
    kept = _usable_blocks(path, blocks, notes)
    rank_of = ranks if ranks is not None else ranks_of(kept)
    left_out: dict[int, int] = {}
    prof = Profile()
    strings = prof.strings
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("name", "kind", "start", "dur", "rank", "device", "track")}
    cols.update(corr=[], flops=[], cat=[], copy=[])
    for b in kept:
        rank = np.array([rank_of.get(p, -1) for p in b.pid.tolist()], np.int32) if len(b) else np.zeros(0, np.int32)
        mine = rank >= 0
        if not mine.all():
            for p in np.unique(b.pid[~mine]).tolist():
                left_out[p] = left_out.get(p, 0) + int((b.pid == p).sum())
            b, rank = _take(b, mine), rank[mine]
        n = len(b)
        if not n:
            continue
        unnamed = [0, 0, 0]
        cols["name"].append(_interned(strings, b.names, b.name, unnamed))
        if unnamed[0]:
            notes.append(
                f"{path.name}: {unnamed[0]:,} {b.table} row(s) name {unnamed[1]:,} string id(s) the file's string table "
                f"lacks: named by their id (#{unnamed[2]})"
            )
        cols["kind"].append(np.full(n, b.kind, np.int8))
        cols["start"].append(np.asarray(b.start, np.int64))
        cols["dur"].append(np.asarray(b.end, np.int64) - b.start)
        cols["rank"].append(rank)
        cols["device"].append(_col(b.device, n, -1) if b.kind in DEVICE_KINDS else np.full(n, -1, np.int64))
        cols["track"].append(np.asarray(b.track, np.int64))
        cols["corr"].append(_col(b.corr, n, -1))
        cols["flops"].append(_col(b.flops, n, -1))
        cols["copy"].append(_col(b.copy, n, 0))
        cols["cat"].append(np.full(n, strings.intern(b.cat or KINDS[b.kind]), np.int32))
    joined = {k: np.concatenate(v) if v else np.zeros(0, EVENT_SCHEMA[k]) for k, v in cols.items()}
    order = np.argsort(joined["start"], kind="stable")
    joined = {k: v[order] for k, v in joined.items()}
    t0 = int(joined["start"][0]) if len(order) else 0
    joined["start"] = joined["start"] - t0
    prof.events = Table(EVENT_SCHEMA, joined)
    prof.base_ns = (epoch_of_clock or 0) + t0
    shared = _shared_devices(kept, rank_of)
    if shared:
        notes.append(
            f"{path.name}: several processes ran on one device ({shared}): two runs in one place, or processes sharing a "
            "GPU? each process is a rank here"
        )
    if left_out:
        notes.append(
            f"{path.name}: left out {sum(left_out.values()):,} host row(s) of {len(left_out)} process(es) that ran no "
            f"device work (pids {', '.join(str(p) for p in sorted(left_out)[:8])})"
        )
    return Assembled(prof, rank_of, left_out)


def _shared_devices(blocks: Sequence[Block], rank_of: dict[int, int]) -> str:
    """ "GPU 0: pids 1000, 2000" for each device whose kernels and copies came from several
    processes that are ranks ("" when none)."""
    users: dict[int, set[int]] = {}
    for b in blocks:
        if b.kind in DEVICE_KINDS and b.device is not None and len(b):
            for d in np.unique(b.device).tolist():
                if d >= 0:
                    pids = np.unique(b.pid[b.device == d]).tolist()
                    users.setdefault(d, set()).update(p for p in pids if rank_of.get(p, -1) >= 0)
    many = [(d, sorted(p)) for d, p in sorted(users.items()) if len(p) > 1]
    return "; ".join(f"GPU {d}: pids {', '.join(map(str, p[:4]))}" for d, p in many[:4])


def _take(b: Block, mask: np.ndarray) -> Block:
    def t(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[mask]

    return Block(
        b.table,
        b.kind,
        b.names,
        b.name[mask],
        b.start[mask],
        b.end[mask],
        b.pid[mask],
        b.track[mask],
        t(b.device),
        t(b.corr),
        t(b.flops),
        b.cat,
        t(b.copy),
        b.skipped,
    )


def names_by_rank(rank_of: dict[int, int], names: dict[int, str]) -> dict[str, dict[str, str]]:
    """``run["process_names"]``: rank → {pid → name} for the processes that are ranks."""
    out: dict[str, dict[str, str]] = {}
    for pid, rank in rank_of.items():
        if pid in names:
            out.setdefault(str(rank), {})[str(pid)] = names[pid]
    return out


def threads_by_rank(rank_of: dict[int, int], names: dict[tuple[int, int], str]) -> dict[str, dict[str, str]]:
    """``run["thread_names"]``: rank → {"pid:tid" → name}."""
    out: dict[str, dict[str, str]] = {}
    for (pid, tid), name in names.items():
        if pid in rank_of:
            out.setdefault(str(rank_of[pid]), {})[f"{pid}:{tid}"] = name
    return out

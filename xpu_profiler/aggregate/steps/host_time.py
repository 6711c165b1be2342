"""The Summary's host time of each phase: its steps' exposed host time (``host``), by cause."""

from __future__ import annotations

import numpy as np

from ...core.profile import PHASES, Profile
from ...knowledge.host_causes import cause_of
from ...knowledge.runtime_api import neutral_call
from ...summary import HostCause, HostPath, HostTime
from ..engine_family import detect
from .host import KIND_NAMES, HostPieces

MAX_CAUSES = 8  # evidence rows kept per phase (the rest are summed in the phase's total)


def host_times(profile: Profile, pieces: HostPieces | None) -> dict[str, HostTime]:
    """Per phase name: its steps' exposed host time, by evidence, the largest first."""
    if pieces is None:
        return {}
    steps = profile.steps
    engine, _ = detect(profile)
    dur = (pieces.end - pieces.start).astype(np.int64)
    p_phase = steps["phase"][pieces.step] if len(pieces) else np.zeros(0, np.int8)
    out: dict[str, HostTime] = {}
    for p in np.unique(steps["phase"]).tolist():
        n_steps = int((steps["phase"] == p).sum())
        m = p_phase == p
        total = int(dur[m].sum())
        causes = _causes(profile, pieces, m, dur, n_steps, total, engine)
        out[PHASES[p]] = HostTime(steps=n_steps, exposed_per_step_ns=total / n_steps if n_steps else 0.0, causes=causes)
    return out


def _causes(
    profile: Profile, pieces: HostPieces, m: np.ndarray, dur: np.ndarray, n_steps: int, total: int, engine: str
):
    """One row per evidence (kind, name), summed over the phase's steps."""
    if not m.any():
        return []
    names = pieces.name[m].astype(np.int64)
    calls = pieces.kind[m] == KIND_NAMES.index("runtime")
    if calls.any():
        names[calls] = _one_per_call(profile, names[calls], dur[m][calls])
    (keys, inv) = np.unique(np.stack([pieces.kind[m].astype(np.int64), names], 1), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    t = np.bincount(inv, weights=dur[m]).astype(np.int64)
    pairs = np.unique(np.stack([inv, pieces.step[m]], 1), axis=0)
    in_steps = np.bincount(pairs[:, 0], minlength=len(keys))
    rows = []
    for i in np.argsort(-t, kind="stable")[:MAX_CAUSES].tolist():
        kind, name_id = KIND_NAMES[int(keys[i, 0])], int(keys[i, 1])
        name = profile.strings[name_id] if name_id >= 0 else ""
        c = cause_of(kind, name)
        rows.append(
            HostCause(
                cause=c.key,
                what=c.words,
                evidence=kind,
                name=name,
                per_step_ns=float(t[i]) / n_steps,
                share=float(t[i]) / total if total else 0.0,
                steps=int(in_steps[i]),
                fix=c.fix_for(engine),
            )
        )
    return rows


def _one_per_call(profile: Profile, ids: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Runtime calls that are one call on any vendor's runtime (``cudaLaunchKernel`` and the
    driver's ``cuLaunchKernel``; ``neutral_call``) as one cause, named by its largest: each
    call's name id → its group's. Else a run's causes would hold a call's names apart while
    another run's (its ROCm twin: ``hipLaunchKernel`` for both) holds them together."""
    uniq, inv = np.unique(ids, return_inverse=True)
    t = np.bincount(inv.reshape(-1), weights=dur, minlength=len(uniq))
    group: dict[str, int] = {}
    rep = uniq.copy()
    for i in np.argsort(-t, kind="stable").tolist():  # the largest first: it names its group
        nid = int(uniq[i])
        rep[i] = group.setdefault(neutral_call(profile.strings[nid]) if nid >= 0 else "", nid)
    return rep[inv.reshape(-1)]


#: stretches of the host path kept for the trace, at the most (the longest)
MAX_PATH = 20_000


def host_path(profile: Profile, pieces: HostPieces | None) -> HostPath:
    """The exposed host time as stretches for the trace: adjacent pieces of one rank with the
    same evidence merged, the longest ``MAX_PATH`` kept."""
    if pieces is None or not len(pieces):
        return HostPath()
    order = np.lexsort((pieces.start, pieces.rank))
    rank, start, end = pieces.rank[order], pieces.start[order], pieces.end[order]
    kind, name = pieces.kind[order], pieces.name[order]
    new = np.ones(len(order), bool)
    new[1:] = (rank[1:] != rank[:-1]) | (start[1:] != end[:-1]) | (kind[1:] != kind[:-1]) | (name[1:] != name[:-1])
    first = np.flatnonzero(new)
    last_end = np.maximum.reduceat(end, first)
    dur = last_end - start[first]
    keep = np.sort(np.argsort(-dur, kind="stable")[:MAX_PATH])
    rows = first[keep]
    labels = {}
    out = HostPath(cut=int(len(first) - len(keep)))
    for i, r in zip(keep.tolist(), rows.tolist()):
        key = (int(kind[r]), int(name[r]))
        if key not in labels:
            nm = profile.strings[key[1]] if key[1] >= 0 else ""
            labels[key] = (cause_of(KIND_NAMES[key[0]], nm).key, nm)
        out.rank.append(int(rank[r]))
        out.start_ns.append(int(start[r]))
        out.dur_ns.append(int(dur[i]))
        out.cause.append(labels[key][0])
        out.name.append(labels[key][1])
    return out

"""The units layers are found in: engine steps; without steps, the model's forward frames
(the outermost module frames that hold decoder layers or graph pieces); without those, each
rank's trace cut where a forward begins (an embedding after attention work). At most
``MAX_UNITS_PER_PHASE`` units of a phase are looked at, evenly spread: layers repeat.
"""

from __future__ import annotations

import numpy as np

from ...core.intervals import containing, top_level
from ...core.launches import thread_ids
from ...core.profile import P_UNKNOWN, Profile
from ...knowledge.fused_ops import FUSED_OPS
from .frames import Frames, frame_of, module_rows

#: steps looked at per phase (evenly spread): layers repeat, a sample of steps tells them
MAX_UNITS_PER_PHASE = 32
_EMBEDDING, _ATTENTION = FUSED_OPS.index("embedding"), FUSED_OPS.index("attention")


def units(profile: Profile, decoder: Frames, pieces: Frames, rows: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """Per basis row its unit, -1; units as (rank, step row, phase, kind)."""
    ev, steps = profile.events, profile.steps
    if len(steps):
        st = ev["step"][rows].astype(np.int64)
        return st, [(int(steps["rank"][i]), i, int(steps["phase"][i]), "step") for i in range(len(steps))]
    # no steps: the outermost module frames that hold decoder layers or graph pieces
    inner = np.concatenate([decoder.rows, pieces.rows])
    if len(inner):
        mods, _ = module_rows(profile)
        tid = thread_ids(profile)
        end = ev["start"] + ev["dur"]
        top = mods[top_level(tid[mods], ev["start"][mods], end[mods])]
        hit = containing(tid[top], ev["start"][top], end[top], tid[inner], ev["start"][inner], end[inner])
        fwd = np.unique(hit[hit >= 0])
        if len(fwd):
            fwd = top[fwd][np.argsort(ev["start"][top[fwd]], kind="stable")]
            f = Frames(fwd, [""] * len(fwd), "forward")
            return frame_of(profile, f, rows), [(int(ev["rank"][r]), -1, P_UNKNOWN, "forward") for r in fwd]
    return _forwards_by_embedding(profile, rows)


def _forwards_by_embedding(profile: Profile, rows: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """No steps and no model frames: each rank's trace cut where a forward pass begins (an
    embedding after attention work since the last cut); one unit per rank without any."""
    ev = profile.events
    unit = np.full(len(rows), -1, np.int64)
    found: list[tuple] = []
    for r in np.unique(ev["rank"][rows]).tolist():
        at = np.flatnonzero(ev["rank"][rows] == r)
        at = at[np.argsort(ev["start"][rows[at]], kind="stable")]
        f = ev["fused"][rows[at]]
        cuts = [0]
        seen_attn = False
        for i in np.flatnonzero((f == _EMBEDDING) | (f == _ATTENTION)).tolist():
            if f[i] == _ATTENTION:
                seen_attn = True
            elif seen_attn:
                cuts.append(i)
                seen_attn = False
        kind = "forward" if len(cuts) > 1 else "rank"
        for a, b in zip(cuts, cuts[1:] + [len(at)]):
            unit[at[a:b]] = len(found)
            found.append((int(r), -1, P_UNKNOWN, kind))
    return unit, found


def sample(units: list[tuple]) -> list[int]:
    """Unit indexes to look at: at most MAX_UNITS_PER_PHASE per phase, evenly spread."""
    by_phase: dict[int, list[int]] = {}
    for i, u in enumerate(units):
        by_phase.setdefault(u[2], []).append(i)
    out = []
    for idx in by_phase.values():
        if len(idx) > MAX_UNITS_PER_PHASE:
            idx = [idx[int(k)] for k in np.linspace(0, len(idx) - 1, MAX_UNITS_PER_PHASE).round().astype(int)]
        out += idx
    return sorted(out)

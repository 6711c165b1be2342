"""How op time was attributed, and what graph replays hold: two Summary sections."""

from __future__ import annotations

import msgspec
import numpy as np

from ..core.profile import Profile
from ..core.sources import KEYS, AttributionSource
from ..knowledge.fused_ops import OTHER
from ..summary import Attribution, Graphs


def attribution_section(profile: Profile, b_idx: np.ndarray) -> Attribution:
    """Op time (the basis events) per attribution source."""
    ev = profile.events
    dur = ev["dur"][b_idx].astype(np.int64)
    src = ev["source"][b_idx].astype(np.int64)
    if len(b_idx) and not src.any() and (ev["fused"][b_idx] != OTHER).any():
        return Attribution()  # attributed before sources were recorded (an older bundle): not known
    t = np.bincount(src, weights=dur, minlength=len(KEYS)).astype(np.int64) if len(b_idx) else np.zeros(len(KEYS))
    total = int(t.sum())
    by = {KEYS[i]: int(t[i]) for i in range(len(KEYS)) if t[i] > 0}
    share = {k: v / total for k, v in by.items()} if total else {}
    return Attribution(
        time_ns_by_source=by,
        share_by_source=share,
        name_share=share.get(KEYS[AttributionSource.NAME], 0.0),
        unattributed_share=share.get(KEYS[AttributionSource.NONE], 0.0),
        structure={k: int(v) for k, v in profile.derived.structure.items() if v},
    )


def graphs_section(profile: Profile) -> Graphs:
    """What ``aggregate.graphs.replays`` recorded of the graph replays and their matching."""
    info = profile.derived.graphs
    if not isinstance(info, dict):
        return Graphs()
    try:
        return msgspec.convert(info, Graphs)
    except msgspec.ValidationError:
        return Graphs()

"""The parallel layout in the Summary: per TP / PP / DP / EP / DCP group its collectives,
exposed communication and straggler; per pipeline stage its bubble time."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...core.profile import Profile
from ...summary import Parallel, ParallelGroup, PipelineStage
from .align import EngineView, step_engine
from .collectives import Collectives
from .layout import Layout, groups
from .overlap import overlap, step_spans


def parallel_section(
    profile: Profile, lay: Layout, c: Collectives, compute_idx: np.ndarray, view: EngineView
) -> Parallel:
    if not lay.coords:
        return Parallel()
    ranks = profile.ranks
    out = Parallel(sizes=lay.sizes(), source=lay.source)
    steps = profile.steps
    # each step row's time as the communication section takes it: the span of the work it
    # launched (on an asynchronous device far from its host range), else its host range
    span = step_spans(profile, np.concatenate([c.idx, compute_idx]))
    for dim, key, members in groups(lay, ranks):
        inside = [j for j, rs in enumerate(c.ranksets) if len(rs) > 1 and set(rs) <= set(members)]
        insts = np.flatnonzero(np.isin(c.i_rankset, inside)) if len(c.i_rankset) else np.zeros(0, np.int64)
        ev_sel = (c.inst >= 0) & np.isin(c.inst, insts)
        ov = overlap(profile, c.idx[ev_sel], c.work_end[ev_sel], compute_idx, members)
        step_ns = int(span[np.isin(steps["rank"], members)].sum())
        exposed = int(ov.exposed.sum())
        g = ParallelGroup(
            dim=dim,
            key=key,
            ranks=members,
            collectives=int(len(insts)),
            exposed_ns=exposed,
            exposed_share=(exposed / step_ns) if step_ns else None,
            wait_ns=int(c.wait[ev_sel].sum()),
        )
        if len(insts):
            ((r, n),) = Counter(c.i_last[insts].tolist()).most_common(1)
            g.straggler, g.straggler_share = int(r), n / len(insts)
        out.groups.append(g)
    if out.sizes.get("pp", 1) > 1 and len(steps):
        out.stages = _stages(profile, lay, view)
    return out


def _stages(profile: Profile, lay: Layout, view: EngineView) -> list[PipelineStage]:
    """Per stage: the engine steps' wall time (slowest rank) against the stage's busy time."""
    steps = profile.steps
    es = step_engine(profile)
    rows = []
    by_stage: dict[int, list[int]] = {}
    for r in profile.ranks:
        by_stage.setdefault(lay.of(r).get("pp", 0), []).append(r)
    for stage, members in sorted(by_stage.items()):
        m = np.isin(steps["rank"], members)
        busy = int(round(steps["busy"][m].sum() / len(members)))
        wall = int(view.wall[np.unique(es[m & (es >= 0)])].sum()) if (m & (es >= 0)).any() else 0
        bubble = max(wall - busy, 0)
        rows.append(
            PipelineStage(
                stage=stage,
                ranks=sorted(members),
                busy_ns=busy,
                wall_ns=wall,
                bubble_ns=bubble,
                bubble_share=(bubble / wall) if wall else None,
            )
        )
    return rows

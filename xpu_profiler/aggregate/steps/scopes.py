"""Engine steps from vLLM's model-runner scopes (``knowledge.nvtx_ranges.RUNNER_SCOPE``).

With ``VLLM_NVTX_SCOPES_FOR_PROFILING=1`` (an Nsight Systems profile) or
``VLLM_CUSTOM_SCOPES_FOR_PROFILING=1`` (torch.profiler) the model runner wraps each part of a
step in a range: preprocess, forward, postprocess, sample, bookkeep... A step opens with its
``preprocess`` scope (or with ``forward`` where no ``preprocess`` came since the last one) and
runs to the end of the last scope before the next step opens on that thread; a step without a
``forward`` is none. Phase unknown here (``steps.phases`` infers it).
"""

from __future__ import annotations

import numpy as np

from ...core.launches import thread_ids
from ...core.ordering import lexsort, number_per_rank
from ...core.profile import E_SCOPE, F_NONE, K_ANNOTATION, P_UNKNOWN, STEP_SCHEMA, Profile, Table
from ...knowledge.nvtx_ranges import FORWARD_SCOPE, OPENING_SCOPE, runner_scope


def scope_rows(profile: Profile) -> tuple[np.ndarray, list[str]]:
    """Rows of the runner scopes and each one's part (``forward``...)."""
    ev = profile.events
    ann = np.flatnonzero((ev["kind"] == K_ANNOTATION) & (ev["device"] < 0) & (ev["start"] >= 0))
    part = {nid: p for nid in np.unique(ev["name"][ann]).tolist() if (p := runner_scope(profile.strings[nid]))}
    # the one-word spelling of vLLM 0.11 (Forward, Sample) is vLLM's only beside its other parts
    if FORWARD_SCOPE not in part.values() or len(set(part.values())) < 2:
        return np.zeros(0, np.int64), []
    rows = ann[np.isin(ev["name"][ann], list(part))]
    return rows, [part[n] for n in ev["name"][rows].tolist()]


def steps_from_scopes(profile: Profile) -> Table:
    rows, parts = scope_rows(profile)
    if not len(rows):
        return Table(STEP_SCHEMA)
    ev = profile.events
    order = lexsort((ev["start"][rows], thread_ids(profile)[rows]))
    rows = rows[order]
    part = [parts[i] for i in order.tolist()]
    thread = thread_ids(profile)[rows]
    opens = np.zeros(len(rows), bool)
    forward_seen = False
    for i, p in enumerate(part):  # a step opens at a new thread, a preprocess, or a second forward
        if i == 0 or thread[i] != thread[i - 1] or p == OPENING_SCOPE or (p == FORWARD_SCOPE and forward_seen):
            opens[i], forward_seen = True, False
        forward_seen |= p == FORWARD_SCOPE
    first = np.flatnonzero(opens)
    start = ev["start"][rows]
    end = np.maximum.reduceat(start + ev["dur"][rows], first)
    is_fwd = np.array([p == FORWARD_SCOPE for p in part], bool)
    has_fwd = np.add.reduceat(is_fwd.astype(np.int64), first) > 0
    group = np.cumsum(opens) - 1
    fwd_name = np.full(len(first), -1, np.int64)
    fwd_name[group[is_fwd][::-1]] = ev["name"][rows][is_fwd][::-1]  # each step's first forward
    rank = ev["rank"][rows][first][has_fwd]
    st, en, name = start[first][has_fwd], end[has_fwd], fwd_name[has_fwd]
    o = lexsort((st, rank))
    n = len(o)
    return Table(
        STEP_SCHEMA,
        {
            "rank": rank[o],
            "step_id": number_per_rank(rank[o]),
            "name": name[o],
            "start": st[o],
            "dur": (en - st)[o],
            "phase": np.full(n, P_UNKNOWN, np.int8),
            "evidence": np.full(n, E_SCOPE, np.int8),
            "phase_from": np.full(n, F_NONE, np.int8),
        },
    )

"""One engine step, many ranks: steps aligned across ranks, and the ranks side by side.

An engine step is what the scheduler sent to the workers once; every tensor- and
pipeline-parallel rank of that engine runs it and writes its own step row. The rows of
one engine step are found by step id, not by clock (each host has its own clock origin):

- ids that count the engine's steps (our step hooks' scheduler step, ``ProfilerStep#N``)
  are used as recorded;
- vLLM's step annotations carry no id, and ``start_profile`` reaches each rank at a
  different step, so each rank's sequence of steps is matched on its content (phase,
  tokens and requests of each step, the same on every rank of an engine): a shift that
  puts the same steps at the same time (a clock the ranks share: within half a step) with
  their content agreeing wins; else the shift that makes most steps agree; ties go to the
  shift whose steps start closest in time, then to the smallest shift.

Data-parallel replicas are separate engines with steps of their own; they are never
matched with each other. ``align_steps`` fills ``profile.step_engine``; every count of
steps, phases and tokens then counts engine steps once (``engine_rows``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ...core.intervals import distinct_rows
from ...core.ordering import lexsort
from ...core.profile import PHASES, Profile, Table
from ...knowledge.taxonomy import FUSED_OPS
from ...summary import EngineSteps, Rank, RankAlignment
from .layout import Layout

#: step sources whose ids count the same engine step on every rank
STEP_ID_SOURCES = ("xpu_profiler_hooks", "profiler_step")
SEED_ROWS = 16  # a shift must line up one of the first rows of either sequence
MAX_SHIFTS = 4096  # candidate shifts tried per rank
MIN_MATCH_SHARE = 0.5  # below this the content does not say how ranks line up


@dataclass
class StepAlignment:
    method: str = "single_rank"
    shift_by_rank: dict[int, int] = field(default_factory=dict)
    match_share: float | None = None
    warnings: list[str] = field(default_factory=list)
    #: per engine step (in ``engine_step`` order): its engine and its id in that engine
    engines: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    step_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def align_steps(profile: Profile, lay: Layout) -> StepAlignment:
    """Fill ``profile.step_engine`` (dense, ordered by engine and aligned step id)."""
    steps = profile.steps
    out = StepAlignment()
    n = len(steps)
    if not n:
        return out
    rank = steps["rank"].astype(np.int64)
    engine = np.array([lay.engine(r) for r in rank.tolist()], np.int64)
    aligned = steps["step_id"].astype(np.int64).copy()
    ranks = np.unique(rank).tolist()
    by_id = profile.derived.step_source in STEP_ID_SOURCES
    if len(ranks) > 1:
        out.method = "step_id" if by_id else "content"
    matched = overlap = 0
    for e in np.unique(engine).tolist():
        rows = np.flatnonzero(engine == e)
        repeats = [
            r
            for r in np.unique(rank[rows]).tolist()
            if len(np.unique(aligned[rows[rank[rows] == r]])) < int(np.count_nonzero(rank[rows] == r))
        ]
        if repeats:  # one row per engine step and rank: ids that repeat say nothing, match by content
            out.warnings.append(
                f"rank {', '.join(map(str, repeats))} repeats step ids; steps aligned by content instead"
            )
            if len(ranks) > 1:
                out.method = "content"
        if repeats or (len(ranks) > 1 and not by_id):
            m, o = _align_engine(steps, rows, aligned, out)
            matched, overlap = matched + m, overlap + o
    if overlap:
        out.match_share = matched / overlap
    uniq, inv = distinct_rows(engine, aligned)
    profile.step_engine = inv.astype(np.int32)
    out.engines, out.step_ids = uniq[:, 0].copy(), uniq[:, 1].copy()
    if out.method == "content":  # number each engine's steps from 0
        for e in np.unique(out.engines).tolist():
            m = out.engines == e
            out.step_ids[m] -= out.step_ids[m].min()
    return out


def _signature(steps: Table, rows: np.ndarray) -> np.ndarray:
    return distinct_rows(
        *(
            steps[c][rows].astype(np.int64)
            for c in ("phase", "prefill_tokens", "decode_tokens", "prefill_reqs", "decode_reqs")
        )
    )[1]


def _align_engine(steps: Table, rows: np.ndarray, aligned: np.ndarray, out: StepAlignment) -> tuple[int, int]:
    """Shift each rank's step numbers onto the reference rank's (the one with most rows)."""
    rank = steps["rank"][rows]
    sig = _signature(steps, rows)
    per = {}
    for r in np.unique(rank).tolist():
        sel = np.flatnonzero(rank == r)
        sel = sel[lexsort((steps["start"][rows[sel]], steps["step_id"][rows[sel]]))]
        per[r] = sel
    ref = max(per, key=lambda r: (len(per[r]), -r))
    ref_sig, ref_start = sig[per[ref]], steps["start"][rows[per[ref]]]
    ref_dur = steps["dur"][rows[per[ref]]]
    aligned[rows[per[ref]]] = np.arange(len(per[ref]))
    out.shift_by_rank[int(ref)] = 0
    matched = overlap = 0
    for r, sel in per.items():
        if r == ref:
            continue
        s, m, o = _best_shift(ref_sig, ref_start, ref_dur, sig[sel], steps["start"][rows[sel]])
        if o and m < MIN_MATCH_SHARE * o:
            out.warnings.append(
                f"the steps of rank {r} do not match those of rank {ref} by content "
                f"({m} of {o} agree); aligned by order"
            )
            s, m, o = 0, m, o
        aligned[rows[sel]] = np.arange(len(sel)) + s
        out.shift_by_rank[int(r)] = int(s)
        matched, overlap = matched + m, overlap + o
    return matched, overlap


def _best_shift(ref_sig, ref_start, ref_dur, sig, start) -> tuple[int, int, int]:
    """(shift, matches, overlap): row j of ``sig`` is row j + shift of ``ref_sig``."""
    n_ref, n = len(ref_sig), len(sig)
    cands = {0}
    for j in range(min(n, SEED_ROWS)):
        cands.update((np.flatnonzero(ref_sig == sig[j]) - j).tolist())
    for i in range(min(n_ref, SEED_ROWS)):
        cands.update((i - np.flatnonzero(sig == ref_sig[i])).tolist())
    shifts = sorted(cands, key=lambda s: (abs(s), s))[:MAX_SHIFTS]
    step = float(np.median(ref_dur)) if len(ref_dur) else 0.0
    best, best_key = (0, 0, 0), None
    for s in shifts:
        lo, hi = max(0, -s), min(n, n_ref - s)
        if hi <= lo:
            continue
        matches = int(np.count_nonzero(sig[lo:hi] == ref_sig[lo + s : hi + s]))
        gap = float(np.median(np.abs(start[lo:hi] - ref_start[lo + s : hi + s])))
        near = gap <= 0.5 * step  # a clock both ranks share puts the same step at the same time
        # a shift that puts the same steps at the same time on a shared clock, its content
        # agreeing, wins over one that only lines up more steps: ranks whose profiles began at
        # different steps overlap in fewer steps at the true shift than at a false one
        timed = near and matches >= MIN_MATCH_SHARE * (hi - lo)
        key = (timed, matches, near, -gap if near else 0.0, hi - lo, -abs(s))
        if best_key is None or key > best_key:
            best, best_key = (s, matches, hi - lo), key
    return best


def step_engine(profile: Profile) -> np.ndarray:
    """Each step row's engine step (``align_steps``), -1 everywhere before alignment."""
    es = profile.step_engine
    if len(es) != len(profile.steps):
        return np.full(len(profile.steps), -1, np.int64)
    return es.astype(np.int64)


def engine_rows(profile: Profile) -> np.ndarray:
    """One row per engine step (its lowest rank's), in engine-step order; the rows that
    count steps, phases and tokens. Without alignment: the lowest rank's rows."""
    steps = profile.steps
    if not len(steps):
        return np.zeros(0, np.int64)
    es = step_engine(profile)
    if (es < 0).any():
        return np.flatnonzero(steps["rank"] == steps["rank"].min())
    order = lexsort((steps["rank"], es))
    first = np.concatenate(([True], es[order][1:] != es[order][:-1]))
    return order[first]


@dataclass
class EngineView:
    """Per engine step: its representative row, how many ranks ran it, the slowest rank's
    wall time and span (the time of the work it launched), and which rank that was."""

    rows: np.ndarray
    wall: np.ndarray
    wall_min: np.ndarray
    span: np.ndarray
    slowest: np.ndarray
    n_ranks: np.ndarray


def engine_view(profile: Profile, span: np.ndarray | None = None, work: np.ndarray | None = None) -> EngineView:
    """``span``: each step row's time (default: its wall); ``work``: the part of it that
    decides the slowest rank (default: the span; span − wait at collectives, when known)."""
    steps = profile.steps
    rows = engine_rows(profile)
    k = len(rows)
    dur = steps["dur"].astype(np.int64)
    span = dur if span is None else span
    work = span if work is None else work
    es = step_engine(profile)
    if not k or (es < 0).any():
        d, sp = dur[rows], span[rows]
        return EngineView(rows, d, d, sp, steps["rank"][rows].astype(np.int64), np.ones(k, np.int64))
    rank = steps["rank"].astype(np.int64)

    def reduce(fn, values, init):
        a = np.full(k, init, np.int64)
        fn.at(a, es, values)
        return a

    big = np.iinfo(np.int64).max
    wall, wall_min = reduce(np.maximum, dur, 0), reduce(np.minimum, dur, big)
    longest = reduce(np.maximum, span, 0)
    # slowest: the lowest rank among those with the most work
    most = reduce(np.maximum, work, np.iinfo(np.int64).min)
    slowest = reduce(np.minimum, np.where(work == most[es], rank, big), big)
    return EngineView(rows, wall, wall_min, longest, slowest, np.bincount(es, minlength=k))


def engine_steps_table(
    profile: Profile, align: StepAlignment, view: EngineView, clock_offsets: dict[int, int] | None
) -> EngineSteps:
    """The engine steps, with each one's start skew across ranks where the clock is aligned."""
    steps = profile.steps
    rows = view.rows
    if not len(rows) or len(align.step_ids) != len(rows):
        return EngineSteps()
    skew: list[int | None] = [None] * len(rows)
    es = step_engine(profile)
    if clock_offsets is not None and (es >= 0).all():
        off = np.array([clock_offsets.get(int(r), 0) for r in steps["rank"].tolist()], np.int64)
        t = steps["start"] - off
        lo = np.full(len(rows), np.iinfo(np.int64).max)
        hi = np.full(len(rows), np.iinfo(np.int64).min)
        np.minimum.at(lo, es, t)
        np.maximum.at(hi, es, t)
        skew = (hi - lo).tolist()
    return EngineSteps(
        engine=align.engines.tolist(),
        step_id=align.step_ids.tolist(),
        phase=[PHASES[p] for p in steps["phase"][rows].tolist()],
        prefill_tokens=steps["prefill_tokens"][rows].tolist(),
        decode_tokens=steps["decode_tokens"][rows].tolist(),
        ranks=view.n_ranks.tolist(),
        wall_ns=view.wall.tolist(),
        span_ns=view.span.tolist(),
        slowest_rank=view.slowest.tolist(),
        wall_min_ns=view.wall_min.tolist(),
        start_skew_ns=skew,
    )


def _positions(ranks: list[int], values: np.ndarray) -> np.ndarray:
    """Index into the sorted list ``ranks`` of each value (every value is in it)."""
    return np.searchsorted(np.asarray(ranks, np.int64), values.astype(np.int64))


def by_rank_fused(profile: Profile, b_idx: np.ndarray, ranks: list[int]) -> dict[int, dict[str, int]]:
    """Op time by fused op, per rank (``ranks``: every rank of the events, sorted)."""
    ev = profile.events
    t = np.zeros((len(ranks), len(FUSED_OPS)), np.int64)
    if len(b_idx):
        np.add.at(t, (_positions(ranks, ev["rank"][b_idx]), ev["fused"][b_idx].astype(np.int64)), ev["dur"][b_idx])
    return {r: {FUSED_OPS[f]: int(t[i, f]) for f in np.flatnonzero(t[i]).tolist()} for i, r in enumerate(ranks)}


def per_token(profile: Profile, b_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Op time per token by (fused op, phase) and by phase: each rank's time over the tokens
    of its own steps, then the mean and the max over the ranks that have tokens there
    (NaN where none has). Returns (mean[f, p], max[f, p], mean[p], max[p])."""
    ev, steps = profile.events, profile.steps
    ranks = sorted(set(ev["rank"][b_idx].tolist()) | set(steps["rank"].tolist()))
    nf, npz = len(FUSED_OPS), len(PHASES)
    t = np.zeros((len(ranks), nf, npz), np.float64)
    if len(b_idx):
        np.add.at(
            t,
            (
                _positions(ranks, ev["rank"][b_idx]),
                ev["fused"][b_idx].astype(np.int64),
                ev["phase"][b_idx].astype(np.int64),
            ),
            ev["dur"][b_idx],
        )
    tok = np.zeros((len(ranks), npz), np.float64)
    if len(steps):
        np.add.at(
            tok,
            (_positions(ranks, steps["rank"]), steps["phase"].astype(np.int64)),
            steps["prefill_tokens"] + steps["decode_tokens"],
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        f_cost = np.where(tok[:, None, :] > 0, t / tok[:, None, :], np.nan)
        p_cost = np.where(tok > 0, t.sum(axis=1) / tok, np.nan)
    has = tok > 0
    return _mean_max(f_cost, has[:, None, :]) + _mean_max(p_cost, has)


def _mean_max(cost: np.ndarray, has: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = has.sum(axis=0)
    total = np.where(has, cost, 0.0).sum(axis=0)
    mx = np.where(has, cost, -np.inf).max(axis=0) if len(cost) else np.zeros(cost.shape[1:])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan), np.where(n > 0, mx, np.nan)


def side_by_side(
    rows: list[Rank], profile: Profile, b_idx: np.ndarray, lay: Layout, view: EngineView, span: np.ndarray
) -> None:
    """Fill each rank row's place in the layout, op time by fused op, step wall time and
    span, and how often it was the slowest rank of an engine step."""
    steps = profile.steps
    fused = by_rank_fused(profile, b_idx, [r.rank for r in rows])
    slowest = Counter(view.slowest[view.n_ranks > 1].tolist()) if len(view.rows) else Counter()
    for row in rows:
        row.groups = dict(lay.of(row.rank))
        row.time_ns_by_fused = fused.get(row.rank, {})
        row.step_wall_ns = int(steps["dur"][steps["rank"] == row.rank].sum())
        row.step_span_ns = int(span[steps["rank"] == row.rank].sum())
        row.slowest_steps = int(slowest.get(row.rank, 0))


def alignment_section(
    align: StepAlignment, clock: str, offsets: dict[int, int], tolerance_ns: int, collectives: str
) -> RankAlignment:
    return RankAlignment(
        steps=align.method,
        step_shift_by_rank={str(r): s for r, s in sorted(align.shift_by_rank.items())},
        step_match_share=align.match_share,
        clock=clock,
        clock_offset_ns_by_rank={str(r): int(v) for r, v in sorted(offsets.items())},
        clock_tolerance_ns=tolerance_ns if clock not in ("single_rank",) else 0,
        collectives=collectives,
    )

"""The per-step and per-rank tables of the Summary."""

from __future__ import annotations

import numpy as np

from ..core.launches import device_mask
from ..core.profile import K_KERNEL, PHASE_FROM, PHASES, STEP_EVIDENCE, Profile
from ..summary import Rank, Steps
from .attribution import events_busy
from .ranks.align import step_engine
from .steps.device import DeviceTimeline


def steps_table(profile: Profile, span: np.ndarray, wait: np.ndarray, tl: DeviceTimeline | None = None) -> Steps:
    """The steps table, columnar: each step's busy and idle time (on the device's clock
    when there is device work, ``tl``, else wall − busy of the host window), the span of
    the work it launched and its wait at collectives."""
    steps = profile.steps
    if not len(steps):
        return Steps()
    wall, busy = steps["dur"], steps["busy"]
    idle = tl.idle if tl is not None else np.maximum(wall - busy, 0)
    kv = steps["kv_usage"].astype(np.float64)
    return Steps(
        rank=steps["rank"].tolist(),
        step_id=steps["step_id"].tolist(),
        engine_step=step_engine(profile).tolist(),
        phase=[PHASES[p] for p in steps["phase"].tolist()],
        start_ns=steps["start"].tolist(),
        wall_ns=wall.tolist(),
        step_ns=(tl.step_time if tl is not None else wall).tolist(),
        evidence=[STEP_EVIDENCE[k] for k in steps["evidence"].tolist()],
        phase_from=[PHASE_FROM[k] for k in steps["phase_from"].tolist()],
        busy_ns=busy.tolist(),
        idle_ns=idle.tolist(),
        span_ns=span.tolist(),
        wait_ns=wait.tolist(),
        prefill_tokens=steps["prefill_tokens"].tolist(),
        decode_tokens=steps["decode_tokens"].tolist(),
        prefill_reqs=steps["prefill_reqs"].tolist(),
        decode_reqs=steps["decode_reqs"].tolist(),
        running=steps["running"].tolist(),
        waiting=steps["waiting"].tolist(),
        kv_usage=[None if not np.isfinite(x) else float(x) for x in kv.tolist()],
    )


def rank_spans(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rank, first timed start, last timed end) of every rank."""
    ev = profile.events
    ranks = np.array(profile.ranks, np.int64)
    lo, hi = np.zeros(len(ranks), np.int64), np.zeros(len(ranks), np.int64)
    timed = ev["start"] >= 0
    for k, r in enumerate(ranks.tolist()):
        m = (ev["rank"] == r) & timed
        if m.any():
            lo[k], hi[k] = ev["start"][m].min(), (ev["start"] + ev["dur"])[m].max()
    return ranks, lo, hi


def ranks_table(profile: Profile, basis: np.ndarray, tl: DeviceTimeline | None = None) -> tuple[list[Rank], np.ndarray]:
    """One row per rank, and each rank's device busy time (union over its streams). The
    busy share is over the steps' device periods when there is device work (``tl``),
    over their wall time on the host basis, else over the rank's span."""
    ev, steps = profile.events, profile.steps
    kind, dur = ev["kind"], ev["dur"]
    ranks, lo, hi = rank_spans(profile)
    dev_busy = events_busy(profile, device_mask(kind), ranks, lo, hi)
    basis_busy = events_busy(profile, basis, ranks, lo, hi)
    rows = []
    for k, r in enumerate(ranks.tolist()):
        rm = ev["rank"] == r
        sm = steps["rank"] == r
        w = int(hi[k] - lo[k])
        step_wall = int(tl.period[sm].sum()) if tl is not None else int(steps["dur"][sm].sum())
        # busy inside the steps where there are steps, else over the rank's span
        share = (int(steps["busy"][sm].sum()) / step_wall) if step_wall else (int(basis_busy[k]) / w if w else None)
        rows.append(
            Rank(
                rank=int(r),
                op_time_ns=int(dur[basis & rm].sum()),
                device_kernel_ns=int(dur[rm & (kind == K_KERNEL)].sum()),
                device_busy_ns=int(dev_busy[k]),
                wall_ns=w,
                steps=int(sm.sum()),
                busy_share=share,
            )
        )
    return rows, dev_busy

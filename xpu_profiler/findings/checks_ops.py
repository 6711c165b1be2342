"""Checks of how the work ran: launches and graphs, device idle inside steps, tiny
kernels, the output head and sampler, MoE layers."""

from __future__ import annotations

import numpy as np

from ..summary import Summary
from .base import Context, Hit, Thresholds
from .inputs import (
    all_wall,
    dur,
    engine_of,
    engine_value,
    fused_time,
    graph_share,
    pct,
    phase_row,
    share_below,
    step_ids,
    step_view,
    time_below,
)
from .knobs import knob


def _decode_idle(s: Summary) -> tuple[float, float, np.ndarray]:
    """(decode idle ns, total step wall, decode mask) of one rank's steps."""
    v = step_view(s)
    dec = v.of("decode")
    return float(v.idle[dec].sum()), float(v.total_wall), dec


def graphs_off_decode(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    ph = phase_row(s, "decode")
    if ph is None or ph.steps < th["min_steps"]:
        return None
    eager = engine_value(s, "enforce_eager")
    k = ph.kernels
    evidence: dict = {"enforce_eager": eager, "decode_steps": ph.steps}
    if k is not None and k.unit == "kernel" and k.launches:
        graph_share = k.graph_kernels / k.count if k.count else 0.0
        evidence.update(
            kernels=k.count,
            launches=k.launches,
            kernels_per_launch=k.per_launch,
            graph_launches=k.graph_launches,
            graph_kernel_share=graph_share,
            kernels_per_step=k.per_step,
        )
        if (k.per_launch or 0) > th["max_kernels_per_launch"] or graph_share >= th["min_graph_share"]:
            return None
        what = "off" if not k.graph_launches else "ineffective"
        title = (
            f"Decode runs without graphs ({what}): {k.per_launch:.2f} kernels per launch, "
            f"{pct(graph_share)} of kernels from graph replays"
        )
        fix = knob("graphs_on" if eager is True or not k.graph_launches else "graphs_cover", engine_of(s))
    elif eager is True:
        evidence.update(units=k.unit if k else None, units_per_step=k.per_step if k else None)
        title = (
            f"Decode runs eagerly (enforce_eager=True): {k.per_step:.0f} ops launched one by one per step"
            if k is not None and k.per_step
            else "Decode runs eagerly (enforce_eager=True)"
        )
        fix = knob("graphs_on", engine_of(s))
    else:
        return None
    idle, wall, dec = _decode_idle(s)
    if not wall or not s.totals.op_time_ns:  # no op recorded (basic level): idle time is unknown
        return None
    evidence["decode_idle_ns"] = idle
    return Hit(
        at_stake=idle / wall, phase="decode", title=title, evidence=evidence, fix=fix, steps=step_ids(step_view(s), dec)
    )


def host_bound(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    """A phase whose device waited on the host (``Phase.device``, the verdicts' numbers)
    for at least ``idle_share`` of its device time; the fix follows how the phase ran:
    eager (graphs and compilation), graphs already replaying (the host work between
    replays), a prefill (compiled, graphed prefill)."""
    periods = sum(p.device.period_ns for p in s.phases if p.device is not None)
    if not periods:
        return None
    engine = engine_of(s)
    best = None
    for p in s.phases:
        d = p.device
        if d is None or p.steps < th["min_steps"] or not d.period_ns:
            continue
        share = d.waiting_on_host_ns / d.period_ns
        if share < th["idle_share"]:
            continue
        g = graph_share(p)
        replaying = g is not None and g >= 0.5
        topic = "host_between_replays" if replaying else "prefill_host" if p.phase == "prefill" else "graphs_on"
        cause = _named_cause(p)
        why = "a device that waits for launches runs at the host's speed, not its own"
        if s.step_search.frames or (s.run.extra or {}).get("python_frames"):
            why += (
                "; this trace was taken with python stacks (with_stack), which slow the host: confirm the gaps on "
                "a trace without them before tuning"
            )
        hit = Hit(
            at_stake=d.waiting_on_host_ns / periods,
            phase=p.phase,
            steps=[],
            title=_host_bound_title(p, share, g if replaying else None, cause),
            evidence={
                "steps": p.steps,
                "waiting_share": share,
                "period_ns": d.period_ns,
                "waiting_on_host_ns": d.waiting_on_host_ns,
                "host_wait_ns": d.host_wait_ns,
                "kernel_wait_ns": d.kernel_wait_ns,
                "other_ns": d.other_ns,
                "host_prep_ns": d.host_prep_ns,
                "queue_delay_ns": d.queue_delay_ns,
                "graph_kernel_share": g,
                "engine": engine,
                "gaps": [_gap(x) for x in p.bound_gaps],
                "host_causes": [_cause(c) for c in (p.host.causes[:3] if p.host is not None else [])],
            },
            fix=cause.fix if cause is not None and cause.fix else knob(topic, engine),
            why=why,
        )
        if best is None or hit.at_stake > best.at_stake:
            best = hit
    return best


def _host_bound_title(p, share: float, replayed: float | None, cause) -> str:
    """The finding's title: the phase, how long the device waited, its largest gap, how much
    graphs replay (``replayed``, when they do) and the cause the host's time went to."""
    d = p.device
    gap = p.bound_gaps[0] if p.bound_gaps else None
    return (
        (
            f"Steps (phase unknown) are host-bound: the device waited on the host {pct(share)} of their "
            if p.phase == "unknown"
            else f"{p.phase.capitalize()} is host-bound: the device waited on the host {pct(share)} of its "
        )
        + f"{dur(d.period_ns)} of step time"
        + (
            f" (largest gap {dur(gap.dur_ns)} before {gap.next_work[:50]})"
            if gap is not None and gap.host_wait_ns
            else ""
        )
        + (f"; graphs replay {pct(replayed)} of its kernels" if replayed is not None else "")
        + (
            f"; the host's time goes to {cause.what.split(' (')[0]}: {cause.name or cause.evidence}, "
            f"{dur(cause.per_step_ns)} a step ({pct(cause.share)} of its exposed host time)"
            if cause is not None
            else ""
        )
    )


def _cause(c) -> dict:
    return {"cause": c.cause, "evidence": c.evidence, "name": c.name, "per_step_ns": c.per_step_ns, "share": c.share}


#: causes too generic to name as the fix's target (their fix is the knob of how the phase ran)
_GENERIC_CAUSES = ("python", "host_op", "runtime", "untraced")


def _named_cause(p):
    """The phase's largest cause of exposed host time, when it holds at least a third of it
    and says something specific."""
    causes = p.host.causes if p.host is not None else []
    top = causes[0] if causes else None
    if top is None or top.cause in _GENERIC_CAUSES or top.share < 1 / 3:
        return None
    return top


def _gap(g) -> dict:
    return {
        "step_id": g.step_id,
        "dur_ns": g.dur_ns,
        "host_wait_ns": g.host_wait_ns,
        "next_work": g.next_work,
        "launched_by": g.launched_by,
    }


def small_kernel_storm(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    ph = phase_row(s, "decode")
    k = ph.kernels if ph is not None else None
    if k is None or not k.count:
        return None
    limit = th["kernel_us"] * 1000.0
    share = share_below(k.dur_pct_ns, limit)
    if share is None or share <= th["share"]:
        return None
    g = graph_share(ph)
    replaying = g is not None and g >= 0.5
    if replaying and engine_of(s) == "vllm":
        return None  # graphs replay them, and vLLM graphs replay a torch.compile'd model: both in effect
    wall = all_wall(s)
    small_ns = time_below(k.dur_pct_ns, k.count, limit)
    unit = "kernels" if k.unit == "kernel" else "host ops"
    return Hit(
        at_stake=small_ns / wall if wall else 0.0,
        phase="decode",
        title=(
            f"{pct(share)} of decode {unit} run under {th['kernel_us']:g} us "
            f"({k.per_step:.0f} per step, median {dur(k.dur_pct_ns[50])})"
            if k.per_step
            else f"{pct(share)} of decode {unit} run under {th['kernel_us']:g} us"
        ),
        evidence={
            "unit": k.unit,
            "count": k.count,
            "small_share": share,
            "per_step": k.per_step,
            "dur_p50_ns": k.dur_pct_ns[50],
            "small_time_ns": small_ns,
            "graph_kernel_share": g,
        },
        fix=knob("fusion" if replaying else "fusion_and_graphs", engine_of(s)),
        why=(
            "graphs already replay these kernels (no launch each), but each is still a pass over memory; fused, "
            "they cost one"
            if replaying
            else "each tiny kernel costs a launch and a pass over memory; fused, they cost one"
        ),
    )


def sampler_head_share(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    ph = phase_row(s, "decode")
    if ph is None or not ph.time_ns:
        return None
    # the Sampler module's time where module ranges tell it, else the "sampling" fused op
    sampling = ph.sampler_ns if ph.sampler_ns is not None else fused_time(s, "sampling", "decode")
    head = ph.output_head_ns
    total = sampling + (head or 0)
    share = total / ph.time_ns
    if share <= th["share"]:
        return None
    wall = all_wall(s)
    what = (
        "sampler + logits + lm_head"
        if head is not None
        else "sampler (the output head is not told apart: no module ranges)"
    )
    return Hit(
        at_stake=total / wall if wall else 0.0,
        phase="decode",
        title=f"{what} take {pct(share)} of decode op time ({dur(total)} of {dur(ph.time_ns)})",
        evidence={"sampling_ns": sampling, "output_head_ns": head, "decode_op_time_ns": ph.time_ns, "share": share},
        fix=knob("sampler", engine_of(s)),
    )


def moe_share(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    best = None
    for phase in ("decode", "prefill", "mixed"):
        ph = phase_row(s, phase)
        moe = fused_time(s, "moe", phase)
        if ph is None or not ph.time_ns or not moe:
            continue
        share = moe / ph.time_ns
        if share > th["share"] and (best is None or share > best[1]):
            best = (phase, share, moe, ph)
    if best is None:
        return None
    phase, share, moe, ph = best
    wall = all_wall(s)
    roof = next((r for r in s.roofline if r.phase == phase and r.component == "moe"), None)
    eff = (roof.bw_share if phase == "decode" else roof.flops_share) if roof is not None else None
    return Hit(
        at_stake=(moe / wall) * (1.0 - min(eff, 1.0)) if eff is not None and wall else (moe / wall if wall else 0.0),
        phase=phase,
        title=f"MoE layers take {pct(share)} of {phase} op time ({dur(moe)})"
        + (f", at {pct(eff)} of the device's peak" if eff is not None else ""),
        evidence={"moe_ns": moe, "phase_op_time_ns": ph.time_ns, "share": share, "peak_share": eff},
        fix=knob("moe_tune", engine_of(s)),
    )

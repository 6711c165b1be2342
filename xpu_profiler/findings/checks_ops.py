"""Checks of how the work ran: launches and graphs, device idle inside steps, tiny
kernels, the output head and sampler, MoE layers."""

from __future__ import annotations

import numpy as np

from ..summary import Summary
from .base import Context, Hit, Thresholds
from .inputs import (
    all_wall,
    dur,
    engine_value,
    fused_time,
    pct,
    phase_row,
    share_below,
    step_ids,
    step_view,
    time_below,
)


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
        if eager is True or not k.graph_launches:
            fix = (
                "drop --enforce-eager (enforce_eager=False) so vLLM captures CUDA/XPU graphs for the decode "
                "batch sizes (compilation_config.cudagraph_mode)"
            )
        else:
            fix = (
                "decode batches run outside the captured sizes: raise compilation_config."
                "max_cudagraph_capture_size (or cudagraph_capture_sizes) to cover the decode batch, "
                "cudagraph_mode=FULL_AND_PIECEWISE"
            )
    elif eager is True:
        evidence.update(units=k.unit if k else None, units_per_step=k.per_step if k else None)
        title = (
            f"Decode runs eagerly (enforce_eager=True): {k.per_step:.0f} ops launched one by one per step"
            if k is not None and k.per_step
            else "Decode runs eagerly (enforce_eager=True)"
        )
        fix = (
            "drop --enforce-eager (enforce_eager=False): vLLM runs the torch.compile'd model and, on GPUs/XPUs, "
            "replays captured graphs for decode"
        )
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
    """Device idle between a step's kernels: needs ``Summary.device_steps`` and ``idle``."""
    ds = s.device_steps
    if not ds.step_id or not s.steps.step_id:
        return None
    phase_of = {(r, i): p for r, i, p in zip(s.steps.rank, s.steps.step_id, s.steps.phase)}
    wall_of = {(r, i): w for r, i, w in zip(s.steps.rank, s.steps.step_id, s.steps.wall_ns)}
    best = None
    for phase in ("decode", "prefill"):
        rows = [k for k, key in enumerate(zip(ds.rank, ds.step_id)) if phase_of.get(key) == phase]
        if len(rows) < th["min_steps"]:
            continue
        idle = np.array([ds.device_idle_ns[k] for k in rows], np.float64)
        walls = np.array([wall_of[(ds.rank[k], ds.step_id[k])] for k in rows], np.float64)
        med_wall = float(np.median(walls))
        if not med_wall or np.median(idle) <= th["idle_share"] * med_wall:
            continue
        breakdown = {"host_wait_ns": 0, "kernel_wait_ns": 0, "other_ns": 0}
        for it in s.idle:
            if it.phase == phase:
                breakdown["host_wait_ns"] += it.host_wait_ns
                breakdown["kernel_wait_ns"] += it.kernel_wait_ns
                breakdown["other_ns"] += it.other_ns
        wall = float(sum(s.steps.wall_ns))
        hit = Hit(
            at_stake=float(idle.sum()) / wall if wall else 0.0,
            phase=phase,
            steps=sorted({int(ds.step_id[k]) for k in rows if ds.device_idle_ns[k] > th["idle_share"] * med_wall}),
            ranks=sorted({int(ds.rank[k]) for k in rows}),
            title=(
                f"{phase.capitalize()} is host-bound: the device idles {dur(np.median(idle))} between the kernels "
                f"of a median {dur(med_wall)} step ({pct(np.median(idle) / med_wall)})"
            ),
            evidence={
                "steps": len(rows),
                "device_idle_p50_ns": float(np.median(idle)),
                "step_p50_ns": med_wall,
                **breakdown,
            },
            fix=(
                "CUDA/XPU graphs for decode (drop --enforce-eager), async scheduling (--async-scheduling)"
                if phase == "decode"
                else "larger prefill chunks (max_num_batched_tokens) amortise the host work"
            ),
        )
        if best is None or hit.at_stake > best.at_stake:
            best = hit
    return best


def small_kernel_storm(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    ph = phase_row(s, "decode")
    k = ph.kernels if ph is not None else None
    if k is None or not k.count:
        return None
    limit = th["kernel_us"] * 1000.0
    share = share_below(k.dur_pct_ns, limit)
    if share is None or share <= th["share"]:
        return None
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
        },
        fix=(
            "let vLLM compile the model (enforce_eager=False: torch.compile fuses the element-wise ops) and "
            "replay graphs, so tiny kernels are neither launched one by one nor run unfused"
        ),
        why="each tiny kernel costs a launch and a pass over memory; fused, they cost one",
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
        fix=(
            "a larger decode batch amortises the lm_head's vocabulary GEMM; tensor_parallel_size shards the "
            "vocabulary; for the sampler: VLLM_USE_FLASHINFER_SAMPLER=1, and only the sampling parameters "
            "(top-k/top-p, penalties, logprobs) the requests need"
        ),
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
        fix=(
            "tune the fused-MoE kernel for this shape (vLLM's benchmarks/kernels/benchmark_moe.py --tune, "
            "VLLM_TUNED_CONFIG_FOLDER); at TP > 1 enable expert parallelism (--enable-expert-parallel); "
            "fp8 experts halve the expert-weight reads of decode"
        ),
    )

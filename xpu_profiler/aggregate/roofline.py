"""Achieved FLOP/s and bytes/s per phase, against the device's peaks (MFU and bandwidth).

FLOPs come from the trace where it has them (``with_flops``, or the recorded input shapes
of GEMM ops: comprehensive live runs record both), else from the analytic estimate of
``model_cost`` (model config × token counts); bytes only from the estimate. Per phase,
one row per component (GEMM, attention, MoE: FLOPs over that fused op's op time) and
one for the whole phase over its steps' time on the critical path ("step": MFU proper;
the host range would leave out the device work that ran after it). Decode is judged
against memory bandwidth, prefill and mixed steps against peak FLOP/s. A peak the device
spec does not have stays None ("unknown peak"), never a made-up figure; a share above
100% is no measurement (no device beats its peak): it is left None and ``over_peak`` says
which figure it was and why it cannot be right.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.profile import K_CPU_OP, P_DECODE, P_MIXED, P_PREFILL, PHASES, Profile
from ..core.run_info import tensor_parallel_size
from ..knowledge import devices
from ..knowledge.taxonomy import FUSED_OPS
from ..summary import DeviceSpec, Roofline
from .engine_family import detect as detect_engine
from .model_cost import PEAK_KEY, decode_context, model_config, model_shape, step_costs
from .steps.find import token_steps

COMPONENTS = ("gemm", "attention", "moe")
JUDGED = {P_PREFILL: "flops", P_MIXED: "flops", P_DECODE: "bandwidth"}
#: a share of a peak above this is no measurement but a wrong estimate (a little slack for
#: a peak quoted as rounded)
OVER_PEAK = 1.0


def run_spec(profile: Profile, specs: Mapping[str, devices.DeviceSpec] | None = None) -> dict[str, Any] | None:
    """The spec of the run's device, as a dict: from the device table by the key the run
    recorded (so a ``--device-spec`` given at analysis time wins), else the spec the run
    saved, else the device a trace describes (Kineto ``deviceProperties``: its name, or its
    properties when the name is empty or generic). Its memory size is the one the trace's
    device properties give (``totalGlobalMem``) where they give one: what the device
    reported, not a data sheet's rounded figure."""
    spec = _table_spec(profile, specs)
    mem = _trace_memory(profile.run)
    if spec is not None and mem is not None:
        spec = {**spec, "mem_bytes": mem}
    return spec


def _trace_memory(run) -> int | None:
    """The device memory the first device of the traces reported (bytes), None without."""
    for src in run.get("sources") or []:
        for p in (src.get("device_properties") or []) if isinstance(src, dict) else []:
            mem = p.get("totalGlobalMem") if isinstance(p, dict) else None
            if isinstance(mem, (int, float)) and not isinstance(mem, bool) and mem > 0:
                return int(mem)
    return None


def _table_spec(profile: Profile, specs: Mapping[str, devices.DeviceSpec] | None) -> dict[str, Any] | None:
    run = profile.run
    info = run.get("device_info")
    info = info if isinstance(info, dict) else {}
    table = specs if specs is not None else devices.specs()
    key = info.get("spec_key") or run.get("device")
    if isinstance(key, str) and key in table:
        return table[key].to_json()
    saved = run.get("device_spec")
    if isinstance(saved, dict):
        return saved
    for src in run.get("sources") or []:
        if not isinstance(src, dict):
            continue
        props = [p for p in src.get("device_properties") or [] if isinstance(p, dict)]
        props += [{"name": n} for n in src.get("devices") or [] if not props]
        for p in props:
            key = devices.spec_key_for_properties(p)
            if key is not None and key in table:
                return table[key].to_json()
            name = str(p.get("name") or "").strip().lower()  # a --device-spec entry for a part we do not know
            hit = next((v for k, v in table.items() if name and name in (k.lower(), v.name.lower())), None)
            if hit is not None:
                return hit.to_json()
    return None


def _peaks(spec: DeviceSpec | None, dtype: str | None) -> tuple[float | None, float | None, str]:
    notes = []
    if spec is None:
        return None, None, "unknown peak: no device spec (give one with --device-spec)"
    key = PEAK_KEY.get(str(dtype or "").replace("torch.", ""))
    flops = spec.peak_flops.get(key) if key else None
    if flops is None:
        notes.append(
            f"unknown peak FLOP/s for {key or 'this dtype'} on {spec.name or 'this device'}"
            if spec.peak_flops
            else f"unknown peak FLOP/s ({spec.source or spec.name})"
        )
    if spec.mem_bw_bytes_s is None:
        notes.append(f"unknown peak bandwidth on {spec.name or 'this device'}")
    return flops, spec.mem_bw_bytes_s, "; ".join(notes)


@dataclass
class _Context:
    """What every row of a profile's roofline shares: the traced FLOPs, the analytic costs per
    token step, the device's peaks and the notes on them."""

    traced: np.ndarray  # events whose FLOPs the trace records
    costs: dict | None  # component → (FLOPs, bytes) per token step, from the model config
    n_ranks: int
    peak_f: float | None
    peak_b: float | None
    peak_note: str
    ctx_note: str  # decode KV-cache reads that could not be counted


def roofline(profile: Profile, time: np.ndarray, wall: dict[int, int], spec: DeviceSpec | None) -> list[Roofline]:
    """Rows for prefill, decode and mixed; ``time`` is the (fused op × phase) op-time matrix,
    ``wall`` each phase's summed step time (over ranks: on the critical path where the device
    is asynchronous)."""
    ev, steps = profile.events, profile.steps
    if not len(steps):
        return []
    rows = token_steps(profile)
    ctx = _context(profile, rows, spec)
    out = []
    for p in (P_PREFILL, P_DECODE, P_MIXED):
        in_phase = steps["phase"][rows] == p
        if not in_phase.any():
            continue
        comp_rows, untimed = _components(ev, time, p, in_phase, ctx)
        w = int(wall.get(p, 0))
        if comp_rows or (untimed and w > 0):
            parts = [(r.source, r.flops, r.bytes) for r in comp_rows] + untimed
            out.append(_phase_row(p, w, parts, ctx))
            out.extend(comp_rows)
    return out


def _context(profile: Profile, rows: np.ndarray, spec: DeviceSpec | None) -> _Context:
    ev, steps, run = profile.events, profile.steps, profile.run
    engine = run.get("engine")
    engine = engine if isinstance(engine, dict) else {}
    n_ranks = max(1, len(profile.ranks))
    cfg = model_config(run)
    dtype = engine.get("dtype") or (cfg or {}).get("torch_dtype")  # the engine's, else the model's
    worlds = [src.get("world_size") for src in run.get("sources") or [] if isinstance(src, dict)]
    tp, tp_note = tensor_parallel_size(engine, worlds, n_ranks, detect_engine(profile)[0])
    shape = model_shape(cfg, dtype, tp) if cfg else None
    costs, ctx_note = None, ""
    if shape is not None and len(rows):
        ctx = decode_context(profile, rows)
        if ctx is None:
            ctx_note = "decode KV-cache reads not counted (no request table for context lengths)"
        costs = step_costs(
            shape, steps["prefill_tokens"][rows], steps["decode_tokens"][rows], steps["prefill_reqs"][rows], ctx
        )
    traced = (ev["flops"] >= 0) & (ev["kind"] == K_CPU_OP)
    peak_f, peak_b, peak_note = _peaks(spec, dtype)
    note = "; ".join(n for n in (peak_note, tp_note if shape is not None else "") if n)
    return _Context(traced, costs, n_ranks, peak_f, peak_b, note, ctx_note)


def _work(ev, p: int, comp: str, in_phase: np.ndarray, ctx: _Context) -> tuple[str, float | None, float | None]:
    """(source, FLOPs, bytes) of one component in one phase: traced FLOPs first, else the
    analytic ones; bytes only from the analytic estimate."""
    flops = bytes_ = None
    source = ""
    t_flops = ctx.traced & (ev["phase"] == p)
    if t_flops.any():
        m = t_flops & (ev["fused"] == FUSED_OPS.index(comp))
        if m.any():
            flops, source = float(ev["flops"][m].sum()), "trace"
    if ctx.costs is not None:
        f, b = ctx.costs[comp]
        if flops is None and f[in_phase].sum() > 0:
            flops, source = float(f[in_phase].sum()) * ctx.n_ranks, "analytic"
        if b[in_phase].sum() > 0:
            bytes_ = float(b[in_phase].sum()) * ctx.n_ranks
            source = source if source == "trace" else "analytic"
    return source, flops, bytes_


def _components(ev, time: np.ndarray, p: int, in_phase: np.ndarray, ctx: _Context) -> tuple[list[Roofline], list]:
    """The component rows of a phase, and the components with work but no op time (basic
    level): their work still counts for the whole phase."""
    comp_rows, untimed = [], []
    for comp in COMPONENTS:
        t = int(time[FUSED_OPS.index(comp), p])
        source, flops, bytes_ = _work(ev, p, comp, in_phase, ctx)
        if flops is None and bytes_ is None:
            continue
        if t <= 0:
            untimed.append((source, flops, bytes_))
            continue
        ctx_note = ctx.ctx_note if comp == "attention" and p != P_PREFILL else ""
        comp_rows.append(
            _row(PHASES[p], comp, source, t, flops, bytes_, ctx.peak_f, ctx.peak_b, JUDGED[p], ctx.peak_note, ctx_note)
        )
    return comp_rows, untimed


def _phase_row(p: int, wall: int, parts: list, ctx: _Context) -> Roofline:
    """The whole phase over its steps' time: MFU proper."""
    flops = sum(f for _, f, _ in parts if f is not None) or None
    bytes_ = sum(b for _, _, b in parts if b is not None) or None
    sources = sorted({src for src, _, _ in parts})
    ctx_note = ctx.ctx_note if p != P_PREFILL else ""
    return _row(
        PHASES[p],
        "step",
        "+".join(sources),
        wall,
        flops,
        bytes_,
        ctx.peak_f,
        ctx.peak_b,
        JUDGED[p],
        ctx.peak_note,
        ctx_note,
    )


def _row(
    phase: str,
    comp: str,
    source: str,
    t: int,
    flops: float | None,
    bytes_: float | None,
    peak_f: float | None,
    peak_b: float | None,
    judged: str,
    *notes: str,
) -> Roofline:
    sec = t / 1e9 if t > 0 else None
    flop_s = flops / sec if flops is not None and sec else None
    bytes_s = bytes_ / sec if bytes_ is not None and sec else None
    f_share = flop_s / peak_f if flop_s is not None and peak_f else None
    b_share = bytes_s / peak_b if bytes_s is not None and peak_b else None
    over = [
        f"{label} {100 * x:.1f}% of the peak"
        for label, x in (("FLOP/s", f_share), ("bandwidth", b_share))
        if x is not None and x > OVER_PEAK
    ]
    return Roofline(
        phase=phase,
        component=comp,
        source=source,
        time_ns=t,
        flops=flops,
        bytes=bytes_,
        flop_s=flop_s,
        bytes_s=bytes_s,
        peak_flop_s=peak_f,
        peak_bytes_s=peak_b,
        flops_share=f_share if f_share is None or f_share <= OVER_PEAK else None,
        bw_share=b_share if b_share is None or b_share <= OVER_PEAK else None,
        judged_by=judged,
        note="; ".join(n for n in notes if n),
        over_peak=(
            f"{phase} {comp}: {', '.join(over)}, which no device achieves: the estimate of its work "
            f"({source or 'unknown'}: model config, token counts, experts routed) or the device spec does "
            "not match this trace"
            if over
            else ""
        ),
    )


#: what the summary says once when MFU and bandwidth cannot be estimated for want of the model
NEEDS_MODEL = (
    "MFU and bandwidth need the model's shape: analyze with --model NAME (a built-in or known name such "
    "as qwen3-30b-a3b or glm-5, a directory or its config.json), or trace with FLOPs (with_flops)"
)


def roofline_missing(profile: Profile, rows: list[Roofline]) -> str:
    """``NEEDS_MODEL`` when steps counted tokens but no row could be estimated because neither
    the model's config nor traced FLOPs are there; "" otherwise."""
    steps = profile.steps
    if rows or not len(steps) or model_config(profile.run) is not None:
        return ""
    ev = profile.events
    if ((ev["flops"] >= 0) & (ev["kind"] == K_CPU_OP)).any():
        return ""
    tokens = steps["prefill_tokens"].astype(np.int64) + steps["decode_tokens"].astype(np.int64)
    return NEEDS_MODEL if (tokens > 0).any() else ""

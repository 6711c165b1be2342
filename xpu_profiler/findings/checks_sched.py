"""Checks of the scheduler's side: batch size, KV cache, the chunked-prefill budget,
one-off costs inside the window. Each reads the Summary's step table (one rank's rows)
and the run's engine configuration; none needs device events."""

from __future__ import annotations

import numpy as np

from ..summary import Summary
from .base import Context, Hit, Thresholds
from .inputs import StepView, dur, engine_int, engine_of, pct, step_ids, step_view
from .knobs import knob

DECODING = ("decode", "mixed")  # steps that run decode requests


def _decode_rows(v) -> np.ndarray:
    return np.isin(v.phase, DECODING) & (v.decode_reqs > 0)


def _saving(wall: np.ndarray, batch: np.ndarray, target: np.ndarray) -> float:
    """Step time saved if each step ran ``target`` requests for the time it ran ``batch``:
    decode steps whose time does not grow with the batch (memory-bound decode) would
    cost ``batch/target`` per token — an upper bound where step time grows with it."""
    t = np.maximum(target, np.maximum(batch, 1)).astype(np.float64)
    return float((wall * (1.0 - np.maximum(batch, 1) / t)).sum())


def small_batch_waiting(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    v = step_view(s)
    cap = engine_int(s, "max_num_seqs")
    rows = _decode_rows(v) & (v.waiting >= 0)
    if not cap or not rows.any() or not v.total_wall:
        return None
    small = rows & (v.decode_reqs < th["batch_share"] * cap) & (v.waiting > 0)
    if v.wall[small].sum() < th["min_share"] * v.wall[rows].sum():
        return None
    batch, waiting = v.decode_reqs[small], v.waiting[small]
    saved = _saving(v.wall[small], batch, np.minimum(cap, batch + waiting))
    kv = v.kv[small]
    kv_med = float(np.nanmedian(kv)) if np.isfinite(kv).any() else None
    budget = engine_int(s, "max_num_batched_tokens")
    tokens = v.prefill_tokens[small] + v.decode_tokens[small]
    budget_hit = float((tokens >= budget).mean()) if budget else None
    if kv_med is not None and kv_med >= th["kv_full"]:
        cause, fix = (
            "kv_cache",
            (
                "more KV-cache blocks: raise gpu_memory_utilization (CPU: VLLM_CPU_KVCACHE_SPACE), "
                "lower max_model_len, or kv_cache_dtype=fp8"
            ),
        )
        why = (
            f"the KV cache is {pct(kv_med)} full with only {int(np.median(batch))} requests: the scheduler "
            "cannot admit the waiting ones"
        )
    elif budget_hit is not None and budget_hit >= 0.5:
        cause, fix = "token_budget", "raise max_num_batched_tokens"
        why = "the steps use the whole token budget: waiting prompts do not fit into a step"
    else:
        cause, fix = "unknown", "check what keeps requests waiting (max_num_seqs, KV cache, token budget)"
        why = "requests wait while the batch is small"
    return Hit(
        at_stake=saved / v.total_wall,
        phase="decode",
        steps=step_ids(v, small),
        title=(
            f"Decode batch {int(np.median(batch))} (< {pct(th['batch_share'])} of max_num_seqs {cap}) "
            f"while {int(np.median(waiting))} requests wait, in {int(small.sum())} steps"
        ),
        evidence={
            "steps": int(small.sum()),
            "batch_p50": float(np.median(batch)),
            "max_num_seqs": cap,
            "waiting_p50": float(np.median(waiting)),
            "kv_usage_p50": kv_med,
            "budget_hit_share": budget_hit,
            "cause": cause,
        },
        fix=fix,
        why=why,
    )


def batch_capped(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    v = step_view(s)
    cap = engine_int(s, "max_num_seqs")
    rows = _decode_rows(v) & (v.waiting >= 0)
    if not cap or not rows.any() or not v.total_wall:
        return None
    capped = rows & (v.decode_reqs + v.prefill_reqs >= cap) & (v.waiting > 0)
    if v.wall[capped].sum() < th["min_share"] * v.wall[rows].sum():
        return None
    batch, waiting = v.decode_reqs[capped], v.waiting[capped]
    kv = v.kv[capped]
    kv_med = float(np.nanmedian(kv)) if np.isfinite(kv).any() else None
    return Hit(
        at_stake=_saving(v.wall[capped], batch, batch + waiting) / v.total_wall,
        phase="decode",
        steps=step_ids(v, capped),
        title=(
            f"Decode batch held at max_num_seqs {cap} while {int(np.median(waiting))} requests wait, "
            f"in {int(capped.sum())} steps"
        ),
        evidence={
            "steps": int(capped.sum()),
            "max_num_seqs": cap,
            "batch_p50": float(np.median(batch)),
            "waiting_p50": float(np.median(waiting)),
            "kv_usage_p50": kv_med,
        },
        fix=f"raise max_num_seqs (to about {int(np.median(batch + waiting))}) if the KV cache has room "
        f"(KV usage {pct(kv_med)})",
    )


def client_limited(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    v = step_view(s)
    cap = engine_int(s, "max_num_seqs")
    rows = _decode_rows(v) & (v.waiting >= 0)
    if not cap or not rows.any() or not v.total_wall:
        return None
    idle = rows & (v.decode_reqs < th["batch_share"] * cap) & (v.waiting == 0)
    if v.wall[idle].sum() < th["min_share"] * v.wall[rows].sum():
        return None
    batch = v.decode_reqs[idle]
    kv = v.kv[idle]
    kv_med = float(np.nanmedian(kv)) if np.isfinite(kv).any() else None
    # what the KV cache could hold at this usage (the batch the engine could run)
    room = np.full(len(batch), float(cap))
    if kv_med and kv_med > 0:
        room = np.minimum(
            room, np.maximum(batch, 1) * th["kv_full"] / np.where(np.isfinite(kv), np.maximum(kv, 1e-9), kv_med)
        )
    return Hit(
        at_stake=_saving(v.wall[idle], batch, np.floor(room)) / v.total_wall,
        phase="decode",
        steps=step_ids(v, idle),
        title=(
            f"Client-limited: decode batch {int(np.median(batch))} of max_num_seqs {cap} and no request "
            f"waiting, in {int(idle.sum())} steps"
        ),
        evidence={
            "steps": int(idle.sum()),
            "batch_p50": float(np.median(batch)),
            "max_num_seqs": cap,
            "kv_usage_p50": kv_med,
            "batch_the_kv_cache_holds": float(np.median(room)),
        },
        fix="send more concurrent requests (the engine had room for about "
        f"{int(np.median(room))}); throughput here is set by the offered load, not by the engine",
    )


def _returned_to_queue(v) -> tuple[int, np.ndarray]:
    """Requests put back into the queue between consecutive steps (running drops by k
    while waiting grows by k): vLLM's preemption, seen from the scheduler's counts."""
    ok = (v.running[:-1] >= 0) & (v.running[1:] >= 0) & (v.waiting[:-1] >= 0) & (v.waiting[1:] >= 0)
    d_run, d_wait = np.diff(v.running), np.diff(v.waiting)
    k = np.where(ok & (d_run < 0) & (d_wait == -d_run), -d_run, 0)
    return int(k.sum()), np.concatenate([[False], k > 0])


def kv_cache_pressure(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    v = step_view(s)
    if not v.total_wall:
        return None
    known = np.isfinite(v.kv)
    full = known & (v.kv >= th["usage"])
    full_share = float(v.wall[full].sum() / v.wall[known].sum()) if known.any() else 0.0
    preempted, preempt_at = _returned_to_queue(v)
    tp = s.throughput
    recomputed = max(0, (tp.prefill_tokens or 0) - tp.prompt_tokens) if tp.prompt_tokens is not None else 0
    if full_share <= th["window_share"] and not preempted and not recomputed:
        return None
    # at stake: the recomputation, and the steps that ran KV-full while requests waited
    per_tok = [p.per_token_ns for p in s.phases if p.phase in ("prefill", "mixed") and p.per_token_ns]
    recompute_ns = recomputed * (min(per_tok) if per_tok else 0.0)
    limited = full & (v.waiting > 0) & (v.decode_reqs > 0)
    saved = _saving(v.wall[limited], v.decode_reqs[limited], v.decode_reqs[limited] + v.waiting[limited])
    parts = []
    if full_share > th["window_share"]:
        parts.append(f"KV cache >= {pct(th['usage'])} full during {pct(full_share)} of the window")
    if preempted:
        parts.append(f"{preempted} requests preempted back to the queue")
    if recomputed:
        parts.append(f"{recomputed} prompt tokens computed again")
    return Hit(
        at_stake=min(1.0, (saved + recompute_ns) / v.total_wall),
        phase=None,
        steps=step_ids(v, full | preempt_at),
        title="; ".join(parts),
        evidence={
            "full_share": full_share,
            "kv_usage_max": float(np.nanmax(v.kv)) if known.any() else None,
            "preemptions": preempted,
            "recomputed_tokens": recomputed,
            "prefill_tokens": tp.prefill_tokens,
            "prompt_tokens": tp.prompt_tokens,
            "steps_kv_full_waiting": int(limited.sum()),
        },
    )


def chunked_prefill_budget(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    v = step_view(s)
    budget = engine_int(s, "max_num_batched_tokens")
    dec = v.of("decode")
    mixed = v.of("mixed")
    if not budget or not dec.any() or not mixed.any() or not v.total_wall:
        return None
    dec_p50 = float(np.median(v.wall[dec]))
    tokens = v.prefill_tokens + v.decode_tokens
    hit = mixed & (tokens >= th["budget_hit"] * budget)
    slow = hit & (v.wall > th["ratio"] * dec_p50)
    if slow.sum() < max(1.0, th["min_share"] * mixed.sum()):
        return None
    mixed_p50 = float(np.median(v.wall[slow]))
    stall = float(np.maximum(v.wall[slow] - th["ratio"] * dec_p50, 0).sum())
    suggest = max(16, int(budget * th["ratio"] * dec_p50 / mixed_p50) // 16 * 16)
    return Hit(
        at_stake=stall / v.total_wall,
        phase="mixed",
        steps=step_ids(v, slow),
        title=(
            f"Mixed steps {dur(mixed_p50)} = {mixed_p50 / dec_p50:.1f}x the decode step "
            f"({dur(dec_p50)}) while prefill fills max_num_batched_tokens {budget}, in {int(slow.sum())} steps"
        ),
        evidence={
            "steps": int(slow.sum()),
            "mixed_step_p50_ns": mixed_p50,
            "decode_step_p50_ns": dec_p50,
            "ratio": mixed_p50 / dec_p50,
            "max_num_batched_tokens": budget,
            "prefill_tokens_p50": float(np.median(v.prefill_tokens[slow])),
            "suggested_budget": suggest,
        },
        fix=f"lower max_num_batched_tokens (about {suggest}): smaller prefill chunks per step",
        why=(
            "every running decode waits for the whole chunk in a mixed step: a smaller budget bounds the "
            "inter-token latency (TPOT) at some cost to TTFT"
        ),
    )


def _far_off(v: StepView, th: Thresholds) -> tuple[np.ndarray, np.ndarray]:
    """(steps far slower than usual, what each step should have taken). A phase with
    ``min_steps`` steps: its median step. A phase with fewer (one prefill, say): time per token
    against the steps of no more tokens than it (a step's fixed cost is shared by its tokens, so
    fewer tokens cost no less each; a decode token is never held to a prefill token's cost), where
    at least ``min_steps`` such steps have their tokens recorded; else nothing says what is usual."""
    tokens = v.prefill_tokens + v.decode_tokens
    per_tok = v.wall / np.maximum(tokens, 1)
    out = np.zeros(len(v.wall), bool)
    expected = v.wall.astype(np.float64)  # what each step should have taken
    for ph in np.unique(v.phase).tolist():
        m = v.of(ph)
        if m.sum() >= th["min_steps"]:
            med = float(np.median(v.wall[m]))
            expected[m] = med
            out |= m & (v.wall > th["ratio"] * med)
            continue
        for i in np.flatnonzero(m & (tokens > 0)).tolist():
            like = (tokens > 0) & (tokens <= tokens[i])
            if like.sum() >= th["min_steps"]:
                usual = float(np.median(per_tok[like]))
                expected[i] = usual * tokens[i]
                out[i] = per_tok[i] > th["ratio"] * usual
    return out, expected


def warmup_in_window(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    """Steps far slower than the usual step of their kind (``_far_off``): a JIT compile of
    seconds stands out either way."""
    v = step_view(s)
    if not v.total_wall:
        return None
    out, expected = _far_off(v, th)
    if not out.any():
        return None
    excess = float((v.wall[out] - expected[out]).sum())
    worst = int(np.flatnonzero(out)[np.argmax(v.wall[out])])
    return Hit(
        at_stake=excess / v.total_wall,
        phase=str(v.phase[worst]),
        steps=step_ids(v, out),
        title=(
            f"{int(out.sum())} steps take over {th['ratio']:g}x what steps like them take; the "
            f"slowest, step {int(v.step_id[worst])}, {dur(v.wall[worst])} instead of about "
            f"{dur(expected[worst])}"
        ),
        evidence={
            "steps": int(out.sum()),
            "slowest_step": int(v.step_id[worst]),
            "slowest_wall_ns": int(v.wall[worst]),
            "expected_wall_ns": float(expected[worst]),
            "excess_ns": excess,
        },
        fix=knob("warmup", engine_of(s)),
    )

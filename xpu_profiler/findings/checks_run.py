"""The profiler's own cost: how much slower the profiled run went than an unprofiled
(``basic``: step hooks only) run of the same workload, and the step hooks' own time.

The tool knows it two ways, both measured, never guessed:

- a reference summary of a ``basic``-level run of the same model and workload
  (``xpu_profiler diff BASIC NEW`` gives it, and ``analyze --baseline FILE``): tokens/s
  of this run against that one;
- the live run's own record of the time spent inside its step hooks
  (``run.extra.hook_overhead``: the scheduler's hooks, plus the workers' counted once per
  engine as they run side by side; periodic record flushes and memory samples included)
  per step, against the mean step: the share of the run's step time the hooks took,
  which is what its tokens/s loses to them at most. (Against the median step, a short
  run's few long prefill steps and the hooks' periodic costs made it read several times
  what ``bench/bench_hook_overhead.py`` measures.)

The fix follows the level: a ``standard``/``comprehensive`` run reads its throughput
from a ``basic`` run; a ``basic`` run, which has only the hooks, sheds the metrics whose
samples cost the most.
"""

from __future__ import annotations

import numpy as np

from ..summary import Summary
from .base import Context, Hit, Thresholds
from .inputs import dur, pct, step_view

LEVELS_WITH_TORCH = ("standard", "comprehensive")


def tokens_per_s(s: Summary) -> tuple[float | None, str]:
    """The run's throughput, and which figure it is (the measured window's first)."""
    tp = s.throughput
    for name in ("window_output_tok_s", "output_tok_s", "window_total_tok_s", "decode_tok_s"):
        v = getattr(tp, name)
        if v:
            return float(v), name
    return None, ""


def same_workload(a: Summary, b: Summary) -> bool:
    """Same model and workload settings, where both runs recorded them."""
    if a.run.model and b.run.model and a.run.model != b.run.model:
        return False
    wa, wb = a.run.workload or {}, b.run.workload or {}
    return all(wa.get(k) == wb.get(k) for k in set(wa) & set(wb) if k != "prompts_file")


def profiler_overhead(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    level = s.run.detail_level
    ref = ctx.reference
    evidence: dict = {"detail_level": level}
    drop = None
    if ref is not None and level in LEVELS_WITH_TORCH and ref.run.detail_level == "basic" and same_workload(s, ref):
        mine, name = tokens_per_s(s)
        base, base_name = tokens_per_s(ref)
        if mine and base and name == base_name:
            drop = 1.0 - mine / base
            evidence.update(tok_s=mine, basic_tok_s=base, figure=name, drop=drop)
    hooks = s.run.extra.get("hook_overhead") if isinstance(s.run.extra, dict) else None
    v = step_view(s)
    hook_share = None
    if isinstance(hooks, dict) and hooks.get("per_step_ns") and len(v.wall) and float(np.mean(v.wall)) > 0:
        hook_share = float(hooks["per_step_ns"]) / float(np.mean(v.wall))
        evidence.update(
            hook_ns_per_step=float(hooks["per_step_ns"]),
            hook_share=hook_share,
            mean_step_ns=float(np.mean(v.wall)),
            measured="time inside the step hooks per step (scheduler + one worker per engine, periodic record "
            "flushes and memory samples included) over the mean step",
        )
    fired_drop = drop is not None and drop > th["drop"]
    fired_hooks = hook_share is not None and hook_share > th["hook_share"]
    if not (fired_drop or fired_hooks):
        return None
    if fired_drop:
        assert drop is not None  # fired_drop: measured
        title = (
            f"Profiling at '{level}' cut throughput by {pct(drop)} ({evidence['tok_s']:,.0f} vs "
            f"{evidence['basic_tok_s']:,.0f} tok/s at 'basic'): tune against the basic run's numbers"
        )
        at_stake = drop
    else:
        assert isinstance(hooks, dict) and hook_share is not None  # fired_hooks: measured
        title = (
            f"The step hooks took {dur(hooks['per_step_ns'])} per step, {pct(hook_share)} of the mean step "
            f"({dur(evidence['mean_step_ns'])})"
        )
        at_stake = hook_share
    if level in LEVELS_WITH_TORCH or fired_drop:
        fix = (
            "read throughput and latency from a --detail-level basic run; use standard/comprehensive for the "
            "breakdown only, over a short window (--profile-steps N)"
        )
        why = "torch.profiler's per-op and per-kernel records slow the host: absolute times here include its cost"
    else:
        fix = (
            "this is a basic run already (the hooks alone): for the least overhead leave out the metrics whose "
            "samples cost the most (--metrics execution_time,throughput drops the memory samples), and compare "
            "tokens/s with an unprofiled run of the same workload"
        )
        why = "the hooks run inside the engine's step loop: their time is in every step time measured here"
    return Hit(at_stake=at_stake, title=title, evidence=evidence, fix=fix, why=why)

"""The step hooks' own cost as ``profiler_overhead`` reads it: per step as the engine pays it
(the scheduler's hooks, the workers' counted once per engine), over the mean step; and a
fix that fits the level the run was taken at."""

from __future__ import annotations

from xpu_profiler.findings.base import Context
from xpu_profiler.findings.checks_run import profiler_overhead
from xpu_profiler.findings.config import DEFAULT
from xpu_profiler.readers.records.assemble import hook_overhead
from xpu_profiler.summary import Run, Steps, Summary


def test_parallel_workers_are_counted_once_per_engine():
    # one engine: its EngineCore 100 µs in all; two TP workers side by side, 50 and 70 µs
    h = hook_overhead({("engine", 1): 100_000, ("worker", 2): 50_000, ("worker", 3): 70_000}, steps=10, engines=1)
    assert h["total_ns"] == 100_000 + (50_000 + 70_000) / 2
    assert h["per_step_ns"] == h["total_ns"] / 10 and h["all_processes_ns"] == 220_000
    # two data-parallel engines, one worker each: every worker counts
    h = hook_overhead({("engine", 1): 0, ("worker", 2): 50_000, ("worker", 3): 70_000}, steps=10, engines=2)
    assert h["total_ns"] == 120_000


def summary(level: str, per_step_ns: float, steps_ns: list[int]) -> Summary:
    n = len(steps_ns)
    return Summary(
        run=Run(detail_level=level, extra={"hook_overhead": {"per_step_ns": per_step_ns, "steps": n}}),
        steps=Steps(
            rank=[0] * n,
            step_id=list(range(n)),
            phase=["decode"] * n,
            wall_ns=steps_ns,
            step_ns=steps_ns,
            busy_ns=[0] * n,
            idle_ns=[0] * n,
            prefill_tokens=[0] * n,
            decode_tokens=[1] * n,
            prefill_reqs=[0] * n,
            decode_reqs=[1] * n,
            running=[-1] * n,
            waiting=[-1] * n,
            kv_usage=[None] * n,
        ),
    )


TH = DEFAULT.for_rule("profiler_overhead")


def test_hook_time_is_read_against_the_mean_step():
    # nine 1 ms decode steps and a 31 ms prefill: mean 4 ms, median 1 ms; hooks 300 µs a step
    steps = [1_000_000] * 9 + [31_000_000]
    hit = profiler_overhead(summary("basic", 300_000, steps), TH, Context())
    assert hit is None  # 300 µs of a 4 ms mean step is 7.5%: under 10% (of the median it would be 30%)
    hit = profiler_overhead(summary("basic", 500_000, steps), TH, Context())
    assert hit is not None and hit.at_stake == 500_000 / 4_000_000
    assert hit.evidence["mean_step_ns"] == 4_000_000


def test_the_fix_fits_the_level():
    steps = [1_000_000] * 4
    basic = profiler_overhead(summary("basic", 200_000, steps), TH, Context())
    assert "basic run already" in basic.fix and "read throughput" not in basic.fix
    standard = profiler_overhead(summary("standard", 200_000, steps), TH, Context())
    assert "--detail-level basic run" in standard.fix

"""The Summary's step table and run metadata as the rules read them (stateless helpers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import fmt
from ..core.run_info import tensor_parallel_size
from ..summary import Phase, Summary


@dataclass
class StepView:
    """One rank's step rows as numpy arrays (every TP rank runs the same batch)."""

    step_id: np.ndarray
    phase: np.ndarray  # str
    wall: np.ndarray
    busy: np.ndarray
    idle: np.ndarray
    prefill_tokens: np.ndarray
    decode_tokens: np.ndarray
    prefill_reqs: np.ndarray
    decode_reqs: np.ndarray
    running: np.ndarray  # -1 unknown
    waiting: np.ndarray  # -1 unknown
    kv: np.ndarray  # NaN unknown

    @property
    def total_wall(self) -> int:
        return int(self.wall.sum())

    def of(self, phase: str) -> np.ndarray:
        return self.phase == phase

    def median_wall(self, phase: str) -> float | None:
        m = self.of(phase)
        return float(np.median(self.wall[m])) if m.any() else None


def step_times(summary: Summary) -> list[int]:
    """Each step row's time on the critical path (its device range on an asynchronous
    device), or its host range in a summary that does not have it."""
    st = summary.steps
    return st.step_ns if len(st.step_ns) == len(st.wall_ns) else st.wall_ns


def step_view(summary: Summary) -> StepView:
    st = summary.steps
    rank = np.asarray(st.rank, np.int64)
    keep = rank == rank.min() if len(rank) else np.zeros(0, bool)

    def col(values: list, dtype: Any) -> np.ndarray:
        return np.asarray(values, dtype=dtype)[keep] if len(values) == len(rank) else np.zeros(int(keep.sum()), dtype)

    kv = (
        np.array([np.nan if v is None else float(v) for v in st.kv_usage], np.float64)[keep]
        if len(st.kv_usage) == len(rank)
        else np.full(int(keep.sum()), np.nan)
    )
    return StepView(
        step_id=col(st.step_id, np.int64),
        phase=col(st.phase, object).astype(str),
        wall=col(step_times(summary), np.int64),
        busy=col(st.busy_ns, np.int64),
        idle=col(st.idle_ns, np.int64),
        prefill_tokens=col(st.prefill_tokens, np.int64),
        decode_tokens=col(st.decode_tokens, np.int64),
        prefill_reqs=col(st.prefill_reqs, np.int64),
        decode_reqs=col(st.decode_reqs, np.int64),
        running=col(st.running, np.int64),
        waiting=col(st.waiting, np.int64),
        kv=kv,
    )


def all_wall(summary: Summary) -> float:
    """Step time summed over every rank's rows: the basis for shares of op time, which is
    summed over ranks too. The steps' wall time, or the op time inside them when that is
    longer (a device running behind the host's step ranges)."""
    stepped = sum(p.time_ns for p in summary.phases if p.phase != "unknown" or p.steps)
    return float(max(sum(step_times(summary)), stepped))


def engine_of(summary: Summary) -> str:
    """The engine the run comes from (vllm, sglang, other), as the analysis found it from
    the trace's evidence; a summary without that section: vllm when the live hooks (or an
    engine configuration they recorded) made it, else other."""
    e = summary.step_search.engine
    if e:
        return e
    if summary.run.step_source == "xpu_profiler_hooks" or summary.run.engine:
        return "vllm"
    return "other"


def graph_share(phase: Phase | None) -> float | None:
    """Share of a phase's kernels that ran inside graph replays; None without kernels."""
    k = phase.kernels if phase is not None else None
    if k is None or k.unit != "kernel" or not k.count:
        return None
    return k.graph_kernels / k.count


def engine_value(summary: Summary, key: str) -> Any:
    """A value of the run's engine configuration (None when not recorded)."""
    return summary.run.engine.get(key) if isinstance(summary.run.engine, dict) else None


def engine_int(summary: Summary, key: str) -> int | None:
    v = engine_value(summary, key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def tensor_parallel(summary: Summary) -> int:
    """TP size as the roofline takes it: the engine's, else an inference engine's traces' world
    size, else the number of ranks in the trace."""
    worlds = [src.details.get("world_size") for src in summary.run.sources]
    return tensor_parallel_size(summary.run.engine, worlds, summary.totals.ranks, engine_of(summary))[0]


def phase_row(summary: Summary, name: str) -> Phase | None:
    return next((p for p in summary.phases if p.phase == name), None)


def fused_time(summary: Summary, fused: str, phase: str) -> int:
    f = next((f for f in summary.fused_ops if f.fused_op == fused), None)
    return int(f.time_ns_by_phase.get(phase, 0)) if f is not None else 0


def share_below(pct_ns: list[float], limit_ns: float) -> float | None:
    """Share of durations under ``limit_ns`` from the 0..100 percentiles (1% resolution):
    interpolated between the last percentile under the limit and the first at or above it, so
    that durations equal to the limit (integer-us traces tie there) count as not under it."""
    if len(pct_ns) != 101:
        return None
    p = np.asarray(pct_ns, np.float64)
    i = int(np.searchsorted(p, limit_ns, side="left"))  # the first percentile at or above the limit
    if i == 0 or i > 100:
        return 0.0 if i == 0 else 1.0
    lo, hi = p[i - 1], p[i]  # lo < limit <= hi
    return float((i - 1 + (limit_ns - lo) / (hi - lo)) / 100.0)


def time_below(pct_ns: list[float], count: int, limit_ns: float) -> float:
    """Approximate summed duration of the units under ``limit_ns`` (from the percentiles)."""
    if len(pct_ns) != 101 or not count:
        return 0.0
    p = np.asarray(pct_ns, np.float64)
    mids = (p[:-1] + p[1:]) / 2  # one per 1% slice
    return float(mids[mids < limit_ns].sum() * count / 100.0)


def step_ids(view: StepView, mask: np.ndarray, limit: int = 200) -> list[int]:
    return [int(x) for x in view.step_id[mask][:limit].tolist()]


def pct(x: float | None) -> str:
    """A share in a finding's title (terminal style: titles are plain text)."""
    return fmt.pct(x, fmt.TERMINAL)


def dur(ns: float | None) -> str:
    return fmt.ns(ns, fmt.TERMINAL)

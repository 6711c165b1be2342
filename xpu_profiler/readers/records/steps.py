"""Engine steps from the scheduler and worker step hooks (see ``vllm/hooks_scheduler``).

Scheduler records (EngineCore) give each step's time range, phase, tokens,
requests and KV usage; worker records (one per rank) say which ranks ran the
step. They are joined by the step id the scheduler hook tags onto the
SchedulerOutput, within one engine: data-parallel engines count their own steps, so
the key is (DP rank, step id). One row per engine step per rank, the rank being the
worker's global rank (unique across engines); ``step_id`` stays the engine's own.
"""

from __future__ import annotations

import numpy as np

from ...core.profile import P_DECODE, P_MIXED, P_PREFILL, P_UNKNOWN, STEP_SCHEMA, StringTable, Table
from ...core.records import S_IDX, worker_keys


def step_name(pr: int, pt: int, dr: int, dt: int) -> str:
    """The label vLLM's own profiler uses for a step (readable, and parsed by the aggregator)."""
    return f"execute_context_{pr}({pt})_generation_{dr}({dt})"


def phase_of(pt: int, dt: int) -> int:
    if pt and dt:
        return P_MIXED
    if pt:
        return P_PREFILL
    if dt:
        return P_DECODE
    return P_UNKNOWN


def unique_sched(records: list) -> list:
    """Scheduler records in step order, one per (dp rank, step id)."""
    seen: dict = {}
    for r in records:
        seen[(r[S_IDX["dp_rank"]], r[S_IDX["step"]])] = r
    return [seen[k] for k in sorted(seen)]


def worker_ranks(worker: list) -> dict[tuple[int, int], set]:
    """(DP rank, step id) → global ranks that executed it."""
    out: dict[tuple[int, int], set] = {}
    for w in worker:
        dp, step, rank = worker_keys(w)
        out.setdefault((dp, step), set()).add(rank)
    return out


def engine_ranks(by_step: dict[tuple[int, int], set]) -> dict[int, list]:
    """DP rank → every global rank seen in that engine (the ranks of a step no worker
    row reached, e.g. cut by the window's end)."""
    out: dict[int, set] = {}
    for (dp, _), ranks in by_step.items():
        out.setdefault(dp, set()).update(ranks)
    return {dp: sorted(r) for dp, r in out.items()}


def steps_table(
    sched: list, worker: list, strings: StringTable, base_ns: int, engine_rank: dict[int, int] | None = None
) -> Table:
    """``engine_rank``: DP rank → the global rank of its first worker (the row of an engine
    none of whose workers reported; rank 0 when not known either)."""
    sched = unique_sched(sched)
    by_step = worker_ranks(worker)
    by_engine = engine_ranks(by_step)
    first = engine_rank or {}
    cols: dict[str, list] = {k: [] for k in STEP_SCHEMA if k not in ("busy", "evidence", "phase_from")}
    for r in sched:
        sid = int(r[S_IDX["step"]])
        dp = int(r[S_IDX["dp_rank"]])
        pt, dt = int(r[S_IDX["prefill_tokens"]]), int(r[S_IDX["decode_tokens"]])
        pr, dr = int(r[S_IDX["prefill_reqs"]]), int(r[S_IDX["decode_reqs"]])
        name = strings.intern(step_name(pr, pt, dr, dt))
        t0, t1 = int(r[S_IDX["t_sched"]]), int(r[S_IDX["t_end"]])
        kv = r[S_IDX["kv_usage"]]
        for rank in sorted(by_step.get((dp, sid), by_engine.get(dp, [first.get(dp, 0)]))):
            cols["rank"].append(rank)
            cols["step_id"].append(sid)
            cols["name"].append(name)
            cols["start"].append(t0 - base_ns)
            cols["dur"].append(max(0, t1 - t0))
            cols["phase"].append(phase_of(pt, dt))
            cols["prefill_tokens"].append(pt)
            cols["decode_tokens"].append(dt)
            cols["prefill_reqs"].append(pr)
            cols["decode_reqs"].append(dr)
            cols["running"].append(int(r[S_IDX["running"]]))
            cols["waiting"].append(int(r[S_IDX["waiting"]]))
            cols["kv_usage"].append(np.nan if kv is None else float(kv))
    n = len(cols["rank"])
    return Table(STEP_SCHEMA, {k: np.asarray(v, dtype=STEP_SCHEMA[k]) for k, v in cols.items()}, n=n)

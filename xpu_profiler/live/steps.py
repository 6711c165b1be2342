"""Engine steps from the scheduler and worker step hooks (see ``vllm/hooks_scheduler``).

Scheduler records (EngineCore) give each step's time range, phase, tokens,
requests and KV usage; worker records (one per rank) say which ranks ran the
step. They are joined by the step id the scheduler hook tags onto the
SchedulerOutput. One row per engine step per rank.
"""

from __future__ import annotations

import numpy as np

from ..profile import P_DECODE, P_MIXED, P_PREFILL, P_UNKNOWN, STEP_SCHEMA, StringTable, Table
from .vllm.records import S_IDX, W_IDX


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


def worker_ranks(worker: list) -> dict[int, set]:
    """step id → ranks that executed it."""
    out: dict[int, set] = {}
    for w in worker:
        out.setdefault(int(w[W_IDX["step"]]), set()).add(int(w[W_IDX["rank"]]))
    return out


def steps_table(sched: list, worker: list, strings: StringTable, base_ns: int) -> Table:
    sched = unique_sched(sched)
    by_step = worker_ranks(worker)
    all_ranks = sorted({r for rs in by_step.values() for r in rs}) or [0]
    cols: dict[str, list] = {k: [] for k in STEP_SCHEMA if k != "busy"}
    for r in sched:
        sid = int(r[S_IDX["step"]])
        pt, dt = int(r[S_IDX["prefill_tokens"]]), int(r[S_IDX["decode_tokens"]])
        pr, dr = int(r[S_IDX["prefill_reqs"]]), int(r[S_IDX["decode_reqs"]])
        name = strings.intern(step_name(pr, pt, dr, dt))
        t0, t1 = int(r[S_IDX["t_sched"]]), int(r[S_IDX["t_end"]])
        kv = r[S_IDX["kv_usage"]]
        for rank in sorted(by_step.get(sid, all_ranks)):
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

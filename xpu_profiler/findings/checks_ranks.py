"""Checks across ranks: exposed communication, a straggler rank, MoE load imbalance,
and Kunlun ranks whose kernels only the device logs saw."""

from __future__ import annotations

from ..summary import Summary
from .base import Context, Hit, Thresholds
from .inputs import all_wall, dur, engine_of, pct, step_times, tensor_parallel
from .knobs import knob

#: torch.distributed's host collective ops, which run over gloo in a run without device work
GLOO_OPS = ("c10d::", "gloo:")


def _all_phases(s: Summary) -> list:
    """Each rank's communication row over every phase."""
    return [r for r in s.comm.ranks if r.phase == "all"]


def exposed_comm(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    """Communication not hidden behind compute, from each rank's row over all phases of
    ``Summary.comm.ranks`` (exposed communication over its steps' wall time)."""
    ranks = _all_phases(s)
    if tensor_parallel(s) < th["min_tp"] or not ranks:
        return None
    exposed = sum(r.exposed_ns for r in ranks)
    wall = sum(r.step_ns for r in ranks)
    if not wall or exposed / wall <= th["share"]:
        return None
    worst = max(ranks, key=lambda r: r.exposed_ns)
    gloo = s.comm.basis == "host" and any(c.name.startswith(GLOO_OPS) for c in s.comm.collectives)
    return Hit(
        at_stake=exposed / wall,
        ranks=[r.rank for r in ranks],
        title=(
            f"Exposed communication: {pct(exposed / wall)} of step time at TP {tensor_parallel(s)} "
            f"(rank {worst.rank}: {dur(worst.exposed_ns)} exposed of {dur(worst.comm_ns)})"
        ),
        evidence={
            "exposed_ns": exposed,
            "step_wall_ns": wall,
            "share": exposed / wall,
            "by_rank": {str(r.rank): r.exposed_ns for r in ranks},
            "backend": "gloo" if gloo else None,
        },
        fix=(
            (
                "the collectives run over gloo (torch.distributed): vLLM's shared-memory all-reduce "
                "(_C::shm_allreduce) needs neither gloo's threads nor its queue and comes with its AVX-512 CPU kernels "
                "(a CPU with AVX-512); "
                "else trade TP for data parallelism (fewer tensor_parallel_size ranks, more replicas)"
            )
            if gloo
            else knob("comm_exposed", engine_of(s))
        ),
        why=(
            "an all-reduce nothing overlaps adds its whole latency to every layer"
            + (
                "; this trace holds one rank: its collective time includes waiting for peers it cannot see "
                "(a late peer looks like slow communication here)"
                if len(s.ranks) == 1
                else ""
            )
        ),
    )


def straggler_rank(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    """One rank that arrives last at most collectives (``Summary.comm.ranks``, all phases)."""
    ranks = [r for r in _all_phases(s) if r.arrived_last_share is not None]
    if len(ranks) < 2:
        return None
    worst = max(ranks, key=lambda r: r.arrived_last_share or 0.0)
    if (worst.arrived_last_share or 0.0) <= th["arrived_last"]:
        return None
    wait = sum(r.wait_ns for r in ranks if r.rank != worst.rank)
    wall = sum(step_times(s))
    return Hit(
        at_stake=wait / wall if wall else 0.0,
        ranks=[worst.rank],
        title=(
            f"Rank {worst.rank} arrives last at {pct(worst.arrived_last_share)} of collectives; "
            f"the other ranks wait {dur(wait)} for it"
        ),
        evidence={"rank": worst.rank, "arrived_last_share": worst.arrived_last_share, "others_wait_ns": wait},
        fix=(
            f"look at rank {worst.rank}'s host and device: CPU binding (VLLM_CPU_OMP_THREADS_BIND, NUMA), "
            "a busy or throttled device, its share of MoE experts (--enable-eplb)"
            if engine_of(s) == "vllm"
            else f"look at rank {worst.rank}'s host and device: CPU binding (NUMA), a busy or throttled device, "
            "its share of MoE experts"
        ),
    )


def moe_imbalance(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    moe = {r.rank: r.time_ns_by_fused.get("moe", 0) for r in s.ranks}
    if len(moe) < 2 or not any(moe.values()):
        return None
    mean = sum(moe.values()) / len(moe)
    hot = max(moe, key=moe.__getitem__)
    ratio = moe[hot] / mean if mean else 0.0
    if ratio <= th["max_over_mean"]:
        return None
    wall = all_wall(s) / len(moe)  # one rank's step time
    return Hit(
        at_stake=(moe[hot] - mean) / wall if wall else 0.0,
        ranks=[hot],
        title=f"MoE time is uneven across ranks: rank {hot} {dur(moe[hot])}, {ratio:.2f}x the mean {dur(mean)}",
        evidence={"moe_ns_by_rank": {str(r): v for r, v in moe.items()}, "max_over_mean": ratio, "rank": hot},
        fix=knob("moe_balance", engine_of(s)),
        why="every rank waits at the next collective for the one with the hottest experts",
    )


def kunlun_no_kernels(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    logs = s.run.device_logs
    if not isinstance(logs, dict) or not logs.get("kernel_lines"):
        return None
    by_rank = {int(r): int(v) for r, v in (logs.get("kernel_ns_by_rank") or {}).items() if int(v) > 0}
    if tensor_parallel(s) < th["min_tp"] and len(by_rank) < th["min_tp"]:
        return None
    traced = {r.rank: r.device_kernel_ns for r in s.ranks}
    if logs.get("used"):  # torch.profiler saw no kernel on any rank: the logs stood in
        missing = sorted(by_rank)
    else:
        missing = sorted(r for r in by_rank if not traced.get(r))
    if not missing:
        return None
    total = sum(by_rank.values())
    return Hit(
        at_stake=sum(by_rank[r] for r in missing) / total if total else 0.0,
        ranks=missing,
        title=(
            f"torch.profiler saw no XPU kernels on rank(s) {', '.join(map(str, missing))} although their "
            f"[XPURT_PROF] logs hold {logs.get('kernel_lines')} kernel lines (TP {tensor_parallel(s)})"
        ),
        evidence={
            "ranks_without_traced_kernels": missing,
            "log_kernel_ns_by_rank": {str(k): v for k, v in by_rank.items()},
            "kernel_lines": logs.get("kernel_lines"),
            "logs_used": bool(logs.get("used")),
        },
        fix=(
            "set XPU_CUPTI_ENABLE_DEVICE to each worker's own local device index (per rank, not once for the "
            "job); xpu_profiler --device-logs does this in every worker"
        ),
        why="vllm-kunlun's profiler backend traces only the device XPU_CUPTI_ENABLE_DEVICE names",
    )

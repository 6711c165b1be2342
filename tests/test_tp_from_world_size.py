"""One rank's trace of a tensor-parallel job: the findings take the tensor-parallel size from
the trace's ``distributedInfo.world_size`` when no engine configuration says it, as the
roofline does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpu_profiler.analysis import analyze
from xpu_profiler.findings.rules import RULES

TH = next(r for r in RULES if r.id == "exposed_comm").thresholds
WORLD = 4
#: one decode step's kernels on one stream, in order (name, µs): two all-reduces per layer
LAYER = [("gemm_qkv", 20), ("flash_attn", 15), ("gemm_o", 10), ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 40)]
LAYER += [("gemm_up", 30), ("gemm_down", 25), ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 40)]


def rank0_trace(path: Path, steps: int = 6) -> list[list[tuple[str, int, int]]]:
    """Rank 0 of a TP job of ``WORLD`` ranks; per step its kernels as (name, start, end) in ns."""
    ev, corr, t, out = [], 1, 0, []
    for _ in range(steps):
        start, ks, k_t = t, [], t + 5
        for name, us in LAYER * 4:
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t + 1, "dur": 2, "args": {"correlation": corr}})  # fmt: skip
            k_t = max(k_t, t + 4)
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": k_t, "dur": us,
                       "args": {"correlation": corr, "device": 0, "stream": 7}})  # fmt: skip
            ks.append((name, k_t * 1000, (k_t + us) * 1000))
            k_t += us + 1
            t += 3
            corr += 1
        ev.append({"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_8(8)", "pid": 1,
                   "tid": 1, "ts": start, "dur": k_t + 2 - start, "args": {}})  # fmt: skip
        t = k_t + 20
        out.append(ks)
    dist = {"backend": "nccl", "rank": 0, "world_size": WORLD}
    path.write_text(json.dumps({"traceEvents": ev, "distributedInfo": dist}))
    return out


def test_exposed_communication_on_one_rank_of_a_tp_job(tmp_path):
    steps = rank0_trace(tmp_path / "rank0.json")
    # one stream: nothing overlaps an all-reduce, all of it is exposed; a step's time is the
    # span of the work it launched
    exposed = sum(e - b for ks in steps for n, b, e in ks if n.startswith("nccl"))
    span = sum(max(e for _, _, e in ks) - min(b for _, b, _ in ks) for ks in steps)
    assert exposed / span > TH["share"] and WORLD >= TH["min_tp"]
    _, s = analyze([tmp_path / "rank0.json"])
    assert s.totals.ranks == 1 and not s.run.engine
    f = {f.rule: f for f in s.findings}["exposed_comm"]
    assert f"at TP {WORLD} " in f.title
    assert f.evidence["exposed_ns"] == exposed and f.evidence["step_wall_ns"] == span
    assert f.evidence["share"] == pytest.approx(exposed / span)

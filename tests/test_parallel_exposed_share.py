"""A parallel group's exposed communication is a share of its ranks' step time as the
communication section takes it (the span of the work each step launched), not of the steps'
host ranges: under graph replay a step's host range is a sliver of its device time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpu_profiler.analysis import analyze

TP = 2
#: one step's kernels on one stream, in order (name, µs), replayed by one graph launch
STEP = [("gemm_qkv", 20), ("flash_attn", 15), ("gemm_o", 10), ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 20)]
STEP += [("gemm_up", 30), ("gemm_down", 25), ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 20)]
STEP *= 4


def rank_trace(path: Path, rank: int, steps: int = 6) -> list[dict]:
    """One rank's trace; per step its host range and its kernels (name, start, end) in ns."""
    ev, t, out = [], 1000, []
    for corr in range(1, steps + 1):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": t + 5,
                   "dur": 10, "args": {"correlation": corr}})  # fmt: skip
        ev.append({"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_8(8)", "pid": 1,
                   "tid": 1, "ts": t, "dur": 20, "args": {}})  # fmt: skip
        k_t, ks = t + 30, []
        for name, us in STEP:
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": k_t, "dur": us,
                       "args": {"correlation": corr, "device": 0, "stream": 7, "graph node id": 1}})  # fmt: skip
            ks.append((name, k_t * 1000, (k_t + us) * 1000))
            k_t += us + 1
        out.append({"host": (t * 1000, (t + 20) * 1000), "kernels": ks})
        t = k_t + 10  # the host waits for the step's work before the next
    dist = {"backend": "nccl", "rank": rank, "world_size": TP}
    path.write_text(json.dumps({"traceEvents": ev, "distributedInfo": dist}))
    return out


def test_exposed_share_of_a_graph_replayed_tp_group(tmp_path):
    d = tmp_path / "tp2"
    d.mkdir()
    ranks = [rank_trace(d / f"dp0_pp0_tp{r}_dcp0_ep0_rank{r}.pt.trace.json", r) for r in range(TP)]
    # one stream: nothing overlaps an all-reduce; a step's time is the span of its kernels
    exposed = sum(e - b for st in ranks for s in st for n, b, e in s["kernels"] if n.startswith("nccl"))
    span = sum(s["kernels"][-1][2] - s["kernels"][0][1] for st in ranks for s in st)
    host = sum(s["host"][1] - s["host"][0] for st in ranks for s in st)
    assert exposed > host  # the host ranges alone would put the share above 100%
    _, s = analyze([d])
    (g,) = s.parallel.groups
    assert (g.dim, g.ranks) == ("tp", list(range(TP)))
    assert g.exposed_ns == exposed
    assert g.exposed_share == pytest.approx(exposed / span)
    rows = [r for r in s.comm.ranks if r.phase == "all"]
    assert sum(r.step_ns for r in rows) == span  # the same step time as the communication section's

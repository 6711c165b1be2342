"""A real tensor-parallel run: vLLM 0.32 on the CPU at TP=2 (two worker processes, one
core each), traced by vLLM's own torch profiler. Its traces are read by
``xpu_profiler analyze`` and checked against the scheduler's record of the run and
against the all-reduce numbers worked out here from the raw JSON."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

from xpu_profiler import analysis
from xpu_profiler.exporters import chrome_trace

pytestmark = pytest.mark.vllm

COMM_OPS = {"_C::shm_allreduce": "all_reduce", "_C::shm_all_gather": "all_gather"}


@pytest.fixture(scope="module")
def tp2(vllm_tp2_trace):
    profile, summary = analysis.analyze([vllm_tp2_trace.trace_dir])
    return vllm_tp2_trace, profile, summary


def raw(path) -> dict:
    """The raw trace: its step annotations and communication ops (µs as written)."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in ev if e["name"].startswith("execute_context_")), key=lambda e: e["ts"])
    comm = sorted((e for e in ev if e["name"] in COMM_OPS), key=lambda e: e["ts"])
    return {"rank": doc["distributedInfo"]["rank"], "steps": steps, "comm": comm, "base": doc["baseTimeNanoseconds"]}


def test_engine_steps_once_with_both_ranks_in_each(tp2):
    t, _, s = tp2
    assert s.totals.steps == t.num_steps == len([x for x in t.steps if x["total"]])
    assert s.totals.step_rows == 2 * t.num_steps and set(s.engine_steps.ranks) == {2}
    assert s.totals.prefill_tokens == t.prefill_tokens and s.totals.decode_tokens == t.decode_tokens
    assert {p.phase: p.steps for p in s.phases if p.steps} == {k: v for k, v in t.phases.items() if v}
    assert s.alignment.steps == "content" and s.alignment.step_match_share == 1.0
    # the engine step's tokens are the scheduler's, step by step
    ran = [x for x in t.steps if x["total"]]
    assert s.engine_steps.prefill_tokens == [x["prefill_tokens"] for x in ran]
    assert s.engine_steps.decode_tokens == [x["decode_tokens"] for x in ran]


def test_ranks_and_their_place_from_vllm_process_names(tp2):
    _, profile, s = tp2
    assert [(r.rank, r.groups) for r in s.ranks] == [(0, {"tp": 0}), (1, {"tp": 1})]
    assert s.parallel.sizes == {"tp": 2} and s.parallel.source == "process names"
    meta, _ = chrome_trace.build(profile, s)
    names = [m["args"]["name"] for m in meta if m["name"] == "process_name"]
    assert names == ["rank 0 (tp0)", "rank 1 (tp1)"]


def test_shm_all_reduce_waits_match_the_raw_trace(tp2):
    t, _, s = tp2
    ranks = [raw(p) for p in t.trace_files]
    assert ranks[0]["base"] == ranks[1]["base"]  # one host: one clock, the times compare as written
    assert s.alignment.clock == "shared" and s.comm.basis == "host"
    # the k-th op of a kind within each engine step, on each rank
    keyed: dict[tuple, dict[int, dict]] = defaultdict(dict)
    for rk in ranks:
        seen: dict[tuple, int] = defaultdict(int)
        for c in rk["comm"]:
            step = [i for i, st in enumerate(rk["steps"]) if st["ts"] <= c["ts"] <= st["ts"] + st["dur"]]
            if not step:
                continue
            key = (COMM_OPS[c["name"]], step[0])
            keyed[key + (seen[key],)][rk["rank"]] = c
            seen[key] += 1
    wait = {0: 0.0, 1: 0.0}
    count = defaultdict(int)
    for (kind, _, _), by in keyed.items():
        assert len(by) == 2  # every collective of one rank has its twin on the other
        latest = max(c["ts"] for c in by.values())
        for r, c in by.items():
            wait[r] += (latest - c["ts"]) * 1000
        count[kind] += 1
    got = {c.kind: 0 for c in s.comm.collectives}
    for c in s.comm.collectives:
        got[c.kind] += c.count
        assert c.group == "host" and c.ranks == 2 and c.start_skew_mean_ns > 0
    assert got == dict(count) and count["all_reduce"] > count["all_gather"] > 0
    assert s.comm.matched_events == s.comm.events == 2 * sum(count.values())
    mine = {r.rank: r for r in s.comm.ranks if r.phase == "all"}
    for r in (0, 1):
        assert mine[r].wait_ns == pytest.approx(wait[r], abs=2 * sum(count.values()))
        assert mine[r].arrived_last_share + mine[r].arrived_first_share == pytest.approx(1.0)
    comm = next(f for f in s.fused_ops if f.fused_op == "communication")
    assert sum(mine[r].comm_ns for r in (0, 1)) == comm.time_ns  # top-level host ops: the union is the sum


def test_overlap_on_the_cpu(tp2):
    _, _, s = tp2
    for r in (x for x in s.comm.ranks if x.phase == "all"):
        # one thread does both: nothing hides the all-reduce
        assert r.comm_ns > 0 and r.overlapped_ns == 0 and r.exposed_ns == r.comm_ns
        assert 0 < r.exposed_share < 1 and r.step_ns > r.comm_ns
    phases = {x.phase for x in s.comm.ranks}
    assert {"prefill", "decode", "mixed", "all"} <= phases

"""A real tensor-parallel run: vLLM 0.32 on the CPU at TP=2 (two worker processes, one
core each), traced by vLLM's own torch profiler. Its traces are read by
``xpu_profiler analyze`` and checked against the scheduler's record of the run and
against the all-reduce numbers worked out here from the raw JSON."""

from __future__ import annotations

import pytest
from cpu_comm import check_against_raw, check_no_overlap

from xpu_profiler import analysis
from xpu_profiler.exporters import chrome_trace

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def tp2(vllm_tp2_trace):
    profile, summary = analysis.analyze([vllm_tp2_trace.trace_dir])
    return vllm_tp2_trace, profile, summary


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


def test_cpu_all_reduce_waits_match_the_raw_trace(tp2):
    t, _, s = tp2
    check_against_raw(s, t.trace_files)


def test_overlap_on_the_cpu(tp2):
    check_no_overlap(tp2[2])

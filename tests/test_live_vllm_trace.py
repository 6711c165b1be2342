"""The vLLM-profiler trace fixture itself: the trace vLLM wrote agrees with the live scheduler."""

from __future__ import annotations

import gzip
import json
import re

import pytest

pytestmark = pytest.mark.vllm

ANN = re.compile(r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$")


def test_trace_has_one_annotation_per_engine_step(vllm_profiler_trace):
    t = vllm_profiler_trace
    assert len(t.trace_files) == 1 and t.trace_files[0].name.endswith(".pt.trace.json.gz")
    with gzip.open(t.trace_files[0], "rt") as f:
        events = json.load(f)["traceEvents"]
    anns = [e for e in events if e.get("cat") == "user_annotation" and ANN.match(e.get("name", ""))]
    anns.sort(key=lambda e: e["ts"])
    assert len(anns) == t.num_steps
    ctx = [int(ANN.match(e["name"]).group(2)) for e in anns]
    gen = [int(ANN.match(e["name"]).group(4)) for e in anns]
    assert ctx == [s["prefill_tokens"] for s in t.steps if s["total"]]
    assert gen == [s["decode_tokens"] for s in t.steps if s["total"]]
    # the workload forces all three kinds of step
    assert all(t.phases[p] >= 1 for p in ("prefill", "decode", "mixed")), t.phases
    e = t.expected
    assert t.prefill_tokens == sum(e["prompt_lens"])
    assert t.decode_tokens == len(e["prompt_lens"]) * (e["output_len"] - 1)
    # cpu ops were recorded inside the steps
    assert sum(1 for x in events if x.get("cat") == "cpu_op") > 1000

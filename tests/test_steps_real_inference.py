"""Steps, phases, tokens, step time, busy share and verdicts on the real GPU inference traces
(vLLM and SGLang, NVIDIA and AMD). For each trace a rule written here finds its steps in
the raw JSON (``raw_steps``: nothing of xpu_profiler), and the analysis must agree."""

from __future__ import annotations

import re

import pytest
from raw_steps import (
    GRAPH_LAUNCH,
    build_steps,
    busy_share,
    copies_tokens,
    events,
    step_p50,
    verdict,
)
from real_data import REAL

from xpu_profiler.analysis import analyze

GPU = REAL / "gpu-inference"
TL = REAL / "tracelens"
H100 = GPU / "vllm-llama-tp4-h100-rank0.pt.trace.json.gz"
B200 = GPU / "vllm-gptoss-tp8-b200-rank0-eager.json.gz"
SG30 = GPU / "sglang-qwen3-30b-a3b-mi300-decode.trace.json.gz"
SG8_DECODE = TL / "sglang-qwen3-8b-decode.json.gz"
SG8_PREFILL = TL / "sglang-qwen3-8b-prefilldecode.json.gz"
GPTOSS_FULL = TL / "vllm-gptoss-mi300-decode-full"
GPTOSS_PIECEWISE = TL / "vllm-gptoss-mi300-prefilldecode-piecewise"

needs = pytest.mark.skipif(not GPU.is_dir() or not TL.is_dir(), reason=f"the shared real traces are not at {REAL}")


def phase(summary, name):
    return next(p for p in summary.phases if p.phase == name)


def fixes(summary) -> str:
    return " ".join(f.fix for f in summary.findings)


@needs
def test_vllm_llama_h100_steps_from_execute_model_frames():
    """No step annotation: one ``vllm/v1/worker/gpu_worker.py(N): execute_model`` frame per
    step; the model runner's nested ``execute_model`` is the same step. A frame whose runtime
    calls launched no device work is an empty step. The phase comes from the input copies
    (input_ids 4T and positions 8T bytes, then query_start_loc 4(R+1) and seq_lens 4R)."""
    frames = sorted(
        (
            e
            for e in events(H100)
            if e.cat == "python_function" and re.search(r"/gpu_worker\.py\(\d+\): execute_model$", e.name)
        ),
        key=lambda e: e.start,
    )
    steps = build_steps(H100, [(f.start, f.end) for f in frames])
    real = [s for s in steps if s.has_work]
    empty = len(steps) - len(real)
    tokens = [copies_tokens(s.h2d_sizes()) for s in real]
    phases = ["decode" if t == r else "prefill" if r == 1 and t > 1 else "unknown" for t, r in tokens]
    assert len(frames) == 11 and len(real) == 10 and empty == 1  # the 11 frames
    assert phases == ["prefill"] + ["decode"] * 9 and tokens[0] == (1049, 1)

    _, s = analyze([H100])
    assert s.totals.steps == 10 and s.step_search.found_by == {"frame": 10} and s.step_search.empty_steps == 1
    assert s.run.step_source == "python_frames" and s.step_search.engine == "vllm" and s.step_search.vendor == "nvidia"
    assert s.steps.evidence == ["frame"] * 10 and s.steps.phase_from == ["copies"] * 10
    assert s.steps.phase == phases
    assert s.steps.prefill_tokens == [t if p == "prefill" else 0 for (t, _), p in zip(tokens, phases)]
    assert s.steps.decode_tokens == [t if p == "decode" else 0 for (t, _), p in zip(tokens, phases)]
    assert s.steps.step_ns == [x.step_time for x in real]
    for name in ("prefill", "decode"):
        mine = [x for x, p in zip(real, phases) if p == name]
        ph = phase(s, name)
        assert ph.inferred_from and ph.steps == len(mine)
        assert ph.step_p50_ns == step_p50(mine)
        assert ph.bound == verdict(mine) == "device"
        assert ph.kernels.graph_launches == sum(x.graph_launches() for x in mine)
    # decode replays CUDA graphs (81 pieces a step), prefill runs eagerly
    assert [x.graph_launches() for x in real] == [0] + [81] * 9
    # busy over the steps' device time (the issue's 89%), not over the trace window (65%)
    assert s.ranks[0].busy_share == pytest.approx(busy_share(real), rel=1e-9)
    assert 0.88 < s.ranks[0].busy_share < 0.90
    # a single rank: its collective time may hold waits for the other three
    assert "peers this trace cannot see" in phase(s, "prefill").bound_evidence
    # graphs already replay a compiled model: no advice to turn them on
    assert "enforce" not in fixes(s) and "graphs_off_decode" not in {f.rule for f in s.findings}


@needs
def test_vllm_gptoss_b200_eager_prefill_is_host_bound():
    """One step, annotated ``execute_context_1(888_788544)_generation_0(0)``: one context
    request of 888 tokens (788544 = 888², the quadratic aggregate that follows)."""
    (ann,) = [e for e in events(B200) if e.cat == "user_annotation" and e.name.startswith("execute_")]
    m = re.fullmatch(r"execute_context_(\d+)\((\d+)_(\d+)\)_generation_(\d+)\((\d+)\)", ann.name)
    reqs, toks, square, gen_reqs = int(m[1]), int(m[2]), int(m[3]), int(m[4])
    assert (reqs, toks, gen_reqs) == (1, 888, 0) and toks**2 == square
    (st,) = build_steps(B200, [(ann.start, ann.end)])
    assert st.graph_launches() == 0  # eager

    _, s = analyze([B200])
    assert s.totals.steps == 1 and s.steps.phase == ["prefill"] and s.steps.prefill_tokens == [toks]
    assert s.step_search.found_by == {"annotation": 1} and s.step_search.engine == "vllm"
    ph = phase(s, "prefill")
    assert ph.step_p50_ns == st.step_time and ph.device.period_ns == st.period
    assert s.ranks[0].busy_share == pytest.approx(busy_share([st]), rel=1e-9) and busy_share([st]) < 0.15
    assert ph.bound == verdict([st]) == "host"
    assert ph.device.waiting_on_host_ns == st.waiting and ph.device.host_wait_ns == st.host_wait
    # the largest gaps are named with the work after each
    assert ph.bound_gaps and ph.bound_gaps[0].host_wait_ns >= max(g.host_wait_ns for g in ph.bound_gaps)
    f = {x.rule: x for x in s.findings}["host_bound"]
    assert f.phase == "prefill" and "--enforce-eager" in f.fix and "with_stack" in f.why


@needs
def test_sglang_qwen3_30b_mi300_decode_step_runs_on_the_device():
    """The outer ``execute_16_…_generation_16(sq16…)`` range (16 decode requests, 16 tokens)
    holds SGLang's ``step[DECODE bs=16]``: one step. Its host range is ~3 ms; the graph it
    launched runs ~12 ms on the device: the step time is the device's."""
    anns = [e for e in events(SG30) if e.cat == "user_annotation"]
    (outer,) = [e for e in anns if e.name.startswith("execute_")]
    (inner,) = [e for e in anns if e.name.startswith("step[")]
    assert outer.start <= inner.start and inner.end <= outer.end and inner.name == "step[DECODE bs=16]"
    m = re.fullmatch(r"execute_(\d+)_context_0\(.*\)_generation_(\d+)\(sq(\d+)sk.*\)", outer.name)
    assert int(m[2]) == int(m[3]) == 16
    (st,) = build_steps(SG30, [(outer.start, outer.end)])
    assert st.graph_launches() == 1 and st.device_range > 3 * (outer.end - outer.start)

    _, s = analyze([SG30])
    assert s.totals.steps == 1 and s.steps.phase == ["decode"] and s.steps.decode_tokens == [16]
    assert s.step_search.engine == "sglang" and s.step_search.vendor == "amd"
    ph = phase(s, "decode")
    assert ph.step_p50_ns == st.step_time == st.device_range and ph.host_p50_ns == outer.end - outer.start
    assert ph.bound == verdict([st]) == "device"
    assert s.ranks[0].busy_share == pytest.approx(busy_share([st]), rel=1e-9)
    # one engine step of 16 tokens over its critical path
    assert ph.step_per_token_ns == pytest.approx(st.step_time / 16)
    # SGLang's knobs, never vLLM's
    text = fixes(s)
    assert "SGLang" in text or "--" in text
    for vllm_only in ("benchmark_moe.py", "--enable-expert-parallel", "enforce_eager", "--enforce-eager"):
        assert vllm_only not in text
    # SGLang does not compile by default: the fusion advice names its switch
    storm = {f.rule: f for f in s.findings}.get("small_kernel_storm")
    assert storm is None or "--enable-torch-compile" in storm.fix


@needs
@pytest.mark.parametrize("path, tokens, phase_name", [(SG8_PREFILL, 15360, "prefill"), (SG8_DECODE, 32, "decode")])
def test_sglang_qwen3_8b_steps_trim_the_wait_on_earlier_work(path, tokens, phase_name):
    """Each file holds one ``execute_{T}_…`` step (SGLang with the TraceLens patch); its first
    stream-3 kernel waited ~0.5 s on work of the previous step that is not in the file."""
    (ann,) = [e for e in events(path) if e.cat == "user_annotation" and e.name.startswith("execute_")]
    total = int(re.match(r"execute_(\d+)_", ann.name)[1])
    (st,) = build_steps(path, [(ann.start, ann.end)])
    assert total == tokens and st.eff - st.d_start > 400e6

    _, s = analyze([path])
    assert s.steps.phase == [phase_name] and s.totals.prefill_tokens + s.totals.decode_tokens == tokens
    assert s.step_search.engine == "sglang"
    d = s.device_steps
    assert d.effective_start_ns[0] - d.device_start_ns[0] == st.eff - st.d_start
    ph = phase(s, phase_name)
    assert ph.step_p50_ns == st.step_time == st.device_range
    assert ph.bound == verdict([st]) == "device"
    assert s.ranks[0].busy_share == pytest.approx(busy_share([st]), rel=1e-9) and busy_share([st]) > 0.9


@needs
@pytest.mark.parametrize(
    "run, tokens, phase_name, graphs",
    [(GPTOSS_FULL, (0, 32), "decode", 1), (GPTOSS_PIECEWISE, (8155, 37), "mixed", 25)],
)
def test_vllm_gptoss_mi300_graph_steps(run, tokens, phase_name, graphs):
    """vLLM's detailed annotation ``execute_{T}_context_{n}(sq{p}…)_generation_{m}(sq{d}…)``;
    the step's work queued behind the previous step's (async scheduling): the device starts
    long after the host issued the first copy."""
    path = run / "graph_execution.json.gz"
    (ann,) = [e for e in events(path) if e.cat == "user_annotation" and e.name.startswith("execute_")]
    m = re.fullmatch(r"execute_(\d+)_context_(\d+)\(sq(\d+)sk.*\)_generation_(\d+)\(sq(\d+)sk.*\)", ann.name)
    assert (int(m[3]), int(m[5])) == tokens and int(m[1]) == sum(tokens)
    (st,) = build_steps(path, [(ann.start, ann.end)])
    assert st.graph_launches() == graphs and sum(1 for e in st.launches.values() if GRAPH_LAUNCH.match(e.name))

    _, s = analyze([run])
    assert s.steps.phase == [phase_name]
    assert (s.steps.prefill_tokens[0], s.steps.decode_tokens[0]) == tokens
    assert s.step_search.engine == "vllm" and s.step_search.vendor == "amd"
    ph = phase(s, phase_name)
    assert ph.step_p50_ns == st.step_time and ph.bound == verdict([st]) == "device"
    assert ph.kernels.graph_launches == graphs

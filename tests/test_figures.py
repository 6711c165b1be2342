"""Figures on the right denominator, checked against the raw events of the real vLLM Llama
TP=4 H100 trace (one prefill of 1,049 tokens, nine decode steps of one token): throughput per
phase over its steps' time, unknown never printed as zero, MFU and bandwidth over the step
time with the model named by a known name, a figure above its peak flagged instead of printed,
MoE weight reads from the experts the tokens can reach, device memory as the trace gives it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import invoke
from raw_steps import vllm_frame_steps
from real_data import REAL

from xpu_profiler.aggregate.model_cost import model_shape, routed_experts, step_costs
from xpu_profiler.analysis import analyze
from xpu_profiler.cli.model_config import local_model_config
from xpu_profiler.knowledge.devices import DeviceSpec
from xpu_profiler.knowledge.model_configs import MODEL_CONFIGS
from xpu_profiler.terminal.summary import render

H100 = REAL / "gpu-inference" / "vllm-llama-tp4-h100-rank0.pt.trace.json.gz"
SG30 = REAL / "gpu-inference" / "sglang-qwen3-30b-a3b-mi300-decode.trace.json.gz"
B200 = REAL / "gpu-inference" / "vllm-gptoss-tp8-b200-rank0-eager.json.gz"
RANK0 = REAL / "two-ranks" / "rank-0.json.gz"
needs = pytest.mark.skipif(not H100.is_file(), reason=f"the shared real traces are not at {REAL}")


def raw_doc(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


@pytest.fixture(scope="module")
def h100():
    if not H100.is_file():
        pytest.skip("no shared traces")
    steps = vllm_frame_steps(H100)
    return steps, analyze([H100], model_config=local_model_config("llama-3.1-70b"))[1]


@needs
def test_throughput_is_each_phases_tokens_over_its_steps_time(h100):
    steps, s = h100
    prefill, decode = steps[0], steps[1:]
    tp = s.throughput
    assert tp.prefill_tok_s == pytest.approx(1049 / prefill.step_time * 1e9, rel=1e-12)
    assert tp.decode_tok_s == pytest.approx(9 / sum(x.step_time for x in decode) * 1e9, rel=1e-12)
    assert 50 < tp.decode_tok_s < 56  # the 53 tok/s, not the window's 34
    # the window's figure, beside it: all tokens from the first step's start to the last's end
    assert tp.span_tok_s == pytest.approx((1049 + 9) / tp.duration_ns * 1e9, rel=1e-12)
    want = f"prefill {tp.prefill_tok_s:,.1f} tok/s, decode {tp.decode_tok_s:,.1f} tok/s (over each phase's steps)"
    assert want in render(s) and f"{tp.span_tok_s:,.1f} tok/s over the" in render(s)


def test_unknown_phases_have_unknown_throughput_not_zero(tmp_path):
    """A training trace's steps (ProfilerStep) carry no phase and no tokens: no rate, said so."""
    _, s = analyze([RANK0])
    assert {p.phase for p in s.phases} == {"unknown"} and s.totals.steps
    assert s.throughput.prefill_tok_s is None and s.throughput.decode_tok_s is None
    res = invoke("analyze", RANK0, "-o", tmp_path / "o", "--format", "json")
    assert "prefill unknown, decode unknown" in res.output and "0.0 tok/s" not in res.output


@needs
def test_mfu_and_bandwidth_are_over_the_step_time(h100):
    """With ``--model llama-3.1-70b`` (the trace's shape; one rank of TP4, as its world size
    says): each phase's step row divides its work by its steps' time on the critical path."""
    steps, s = h100
    rows = {(r.phase, r.component): r for r in s.roofline}
    assert rows[("prefill", "step")].time_ns == steps[0].step_time
    assert rows[("decode", "step")].time_ns == sum(x.step_time for x in steps[1:])
    # the weights a decode step reads: a quarter of the model (TP4) per step, of bf16
    cfg = MODEL_CONFIGS["meta-llama/Llama-3.1-70B-Instruct"]
    shape = model_shape(cfg, "bfloat16", 4)
    one = step_costs(shape, np.array([0]), np.array([1]), np.array([0]), None)
    assert rows[("decode", "gemm")].bytes == pytest.approx(9 * one["gemm"][1][0])
    d = rows[("decode", "step")]
    assert 0.3 < d.bw_share < 1.0 and not d.over_peak
    assert "world size (4)" in d.note


def test_a_figure_above_its_peak_is_flagged_not_printed():
    """gpt-oss-120b's eager prefill on B200 against a device spec with a thousandth of the
    B200's bandwidth: the GEMMs' bytes over their time exceed it; the share is left unknown and
    the summary says why."""
    slow = DeviceSpec("NVIDIA B200", {"bf16": 2.25e15}, 8.0e9, 180 << 30, "a thousandth of the bandwidth")
    _, s = analyze([B200], model_config=local_model_config("gpt-oss-120b"), specs={"cuda:B200": slow})
    gemm = next(r for r in s.roofline if (r.phase, r.component) == ("prefill", "gemm"))
    achieved = gemm.bytes / (gemm.time_ns / 1e9)
    assert achieved > slow.mem_bw_bytes_s  # the rule: above the peak
    share = f"{100 * achieved / slow.mem_bw_bytes_s:.1f}%"
    assert gemm.bw_share is None and f"bandwidth {share} of the peak" in gemm.over_peak
    text = render(s)
    assert "over peak (wrong)" in text and share not in text.split("over peak:")[0]


def test_moe_weight_reads_are_bounded_by_the_experts_the_tokens_reach():
    """A decode step of one token reads its top-k experts' weights, not all of them; many
    tokens reach at most every expert."""
    k, e = 8, 128
    t = np.array([1, 2, 16, 10_000])
    got = routed_experts(t, k, e)
    assert got[0] == pytest.approx(8) and np.all(got <= np.minimum(t * k, e) + 1e-9)
    assert got[1] == pytest.approx(e * (1 - (1 - k / e) ** 2)) and got[3] == pytest.approx(e)
    cfg = MODEL_CONFIGS["Qwen/Qwen3-30B-A3B"]
    shape = model_shape(cfg, "bfloat16", 1)
    one = step_costs(shape, np.array([0]), np.array([1]), np.array([0]), None)["moe"][1][0]
    weights = 3 * 2048 * 768 * 2 * 48  # one expert's gate, up and down projections, all layers
    assert weights * 8 < one < weights * 9  # eight experts' weights and the activations


@pytest.mark.skipif(not SG30.is_file(), reason="no shared traces")
def test_device_memory_is_what_the_trace_reports(tmp_path):
    (props,) = raw_doc(SG30)["deviceProperties"][:1]
    _, s = analyze([SG30])
    assert s.device.mem_bytes == props["totalGlobalMem"]
    invoke("analyze", SG30, "-o", tmp_path, "--format", "html", "-q")
    html = (tmp_path / "report.html").read_text()
    assert f"{props['totalGlobalMem'] / 2**30:.0f} GiB" in html


@pytest.mark.skipif(not SG30.is_file(), reason="no shared traces")
def test_analyze_takes_a_known_model_name_and_says_once_when_it_needs_one(tmp_path):
    """SGLang Qwen3-30B-A3B decode on MI300X: ``--model qwen3-30b-a3b`` gives the layer count
    (48, the config's) and the MFU / bandwidth rows; without it, one line says what is missing."""
    res = invoke("analyze", SG30, "-o", tmp_path / "m", "--format", "json", "--model", "qwen3-30b-a3b")
    assert res.exit_code == 0, res.output
    _, s = analyze([SG30], model_config=local_model_config("qwen3-30b-a3b"))
    assert s.layers.phases[0].layers == 48 and s.roofline and not s.roofline_missing
    assert "MFU and bandwidth (against the device's peak)" in res.output
    res = invoke("analyze", SG30, "-o", tmp_path / "n", "--format", "json")
    assert res.output.count("MFU and bandwidth need the model's shape: analyze with --model NAME") == 1

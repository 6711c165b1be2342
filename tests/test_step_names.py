"""Step and capture annotation names of vLLM, its forks, SGLang and ATOM → counts."""

from __future__ import annotations

import gzip
import json

import pytest
import real_data

from xpu_profiler.knowledge.step_grammar import StepName, parse_step_name, parse_step_names, step_family

CASES = {
    # vLLM simple (worker annotate_profile without detailed_trace_annotation)
    "execute_context_2(14721)_generation_0(0)": ("vllm", 2, 14721, 0, 0, 14721, "prefill"),
    "execute_context_0(0)_generation_64(64)": ("vllm", 0, 0, 64, 64, 64, "decode"),
    "execute_context_2(6144)_generation_3(3)": ("vllm", 2, 6144, 3, 3, 6147, "mixed"),
    # speculative decoding: 4 generation requests verify 4 tokens each
    "execute_context_0(0)_generation_4(16)": ("vllm", 0, 0, 4, 16, 16, "decode"),
    # vLLM detailed (detailed_trace_annotation): total first, sq = scheduled tokens
    "execute_14721_context_2(sq14721sk14721sqsq108745533sqsk108745533)_generation_0(sq0sk0sqsq0sqsk0)": (
        "vllm_detailed",
        2,
        14721,
        0,
        0,
        14721,
        "prefill",
    ),
    "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)": (
        "vllm_detailed",
        0,
        0,
        32,
        32,
        32,
        "decode",
    ),
    "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)": (
        "vllm_detailed",
        2,
        6144,
        3,
        3,
        6147,
        "mixed",
    ),
    "execute_48_context_0(sq0sk0sqsq0sqsk0)_generation_12(sq48sk9000sqsq192sqsk36000)": (
        "vllm_detailed",
        0,
        0,
        12,
        48,
        48,
        "decode",
    ),  # speculative: 4 tokens per request
    # forks: total first around the simple contents
    "execute_40_context_1(32)_generation_8(8)": ("vllm_total", 1, 32, 8, 8, 40, "mixed"),
    # older vLLM: request counts only
    "execute_new_2_cached_5": ("vllm_old", 2, 0, 5, 0, 0, "mixed"),
    # SGLang
    "step[DECODE bs=32]": ("sglang", 0, 0, 32, 32, 32, "decode"),
    "step[EXTEND bs=15 toks=15360]": ("sglang", 15, 15360, 0, 0, 15360, "prefill"),
    "step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144 g_sk=131072]": ("sglang", 0, 0, 64, 128, 128, "decode"),
    "step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]": (
        "sglang",
        1,
        5,
        1,
        1,
        6,
        "mixed",
    ),
    # ATOM (with CUDA-graph padding in bs, and speculative decode)
    "decode[bs=117/128 tok=117 d=117]": ("atom", 0, 0, 117, 117, 117, "decode"),
    "decode[bs=32 tok=128 d=32 spec=3 sqsq=512 sqsk=262144 sk=65536]": ("atom", 0, 0, 32, 128, 128, "decode"),
    "prefill[bs=2 tok=14721 ctx=[7803, 6918]]": ("atom", 2, 14721, 0, 0, 14721, "prefill"),
}


@pytest.mark.parametrize("name,want", sorted(CASES.items()))
def test_forms(name: str, want: tuple) -> None:
    s = parse_step_name(name)
    assert s is not None
    assert (s.form, s.prefill_reqs, s.prefill_tokens, s.decode_reqs, s.decode_tokens, s.total_tokens, s.phase) == want


def test_inferred_splits_say_so() -> None:
    raw = parse_step_name("execute_120_context_2(x)_generation_3(y)")
    assert raw.form == "vllm_total_raw" and not raw.exact
    assert (raw.prefill_tokens, raw.decode_tokens) == (117, 3)
    assert parse_step_name("execute_9_context_0(x)_generation_3(y)").decode_tokens == 9
    assert not parse_step_name("execute_new_2_cached_5").exact
    assert not parse_step_name("step[DECODE bs=8]").exact
    assert parse_step_name("execute_context_0(0)_generation_4(16)").tokens_per_decode_req == 4.0


def test_capture_and_profiler_step() -> None:
    c = parse_step_name("capture_512_PIECEWISE")
    assert (c.family, c.total_tokens, c.capture_mode) == ("capture", 512, "PIECEWISE")
    assert parse_step_name("capture_32_DECODE").capture_mode == "DECODE"
    assert parse_step_name("capture_1_FULL").total_tokens == 1
    assert parse_step_name("ProfilerStep#134") == StepName("profiler_step", "profiler", step=134)
    for other in (
        "execute_model",
        "capture_graphs",
        "step",
        "decode",
        "gpu_model_runner: forward",
        "execute_context_1(2)_generation_3",
        "ProfilerStep#x",
        "",
    ):
        assert parse_step_name(other) is None, other


def test_family_priority() -> None:
    names = [
        "step[DECODE bs=32]",
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)",
        "capture_32_FULL",
        "ProfilerStep#1",
        "aten::mm",
    ]
    parsed = parse_step_names(names)
    assert set(parsed) == set(names[:4])
    assert step_family(parsed.values()) == "vllm"
    assert step_family([parsed["step[DECODE bs=32]"], parsed["ProfilerStep#1"]]) == "sglang"
    assert step_family([parsed["capture_32_FULL"]]) is None


def test_every_step_annotation_of_the_real_traces_parses() -> None:
    files = [f for f in real_data.files("tracelens/*.json.gz")]
    assert files
    for f in files:
        doc = json.loads(gzip.decompress(f.read_bytes()))
        anns = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "user_annotation"}
        parsed = parse_step_names(anns)
        assert parsed and set(parsed) == anns, f.name
        if "capture" in f.name:
            assert {p.family for p in parsed.values()} == {"capture", "profiler"}
        else:
            assert step_family(parsed.values()) == "vllm"


def test_the_quadratic_variant_reads_tokens_before_their_square_sum() -> None:
    """``execute_context_1(888_788544)_generation_0(0)`` (a real vLLM gpt-oss B200 trace): the
    first number of a group is its tokens, the second their square sum (888² = 788544)."""
    s = parse_step_name("execute_context_1(888_788544)_generation_0(0)")
    assert s is not None and s.form == "vllm_quad" and s.family == "vllm"
    assert (s.prefill_reqs, s.prefill_tokens, s.decode_reqs, s.decode_tokens) == (1, 888, 0, 0)
    assert s.phase == "prefill" and s.total_tokens == 888 == 788544**0.5
    mixed = parse_step_name("execute_context_2(30_468)_generation_5(5_5)")
    assert mixed is not None and (mixed.prefill_tokens, mixed.decode_reqs, mixed.decode_tokens) == (30, 5, 5)
    assert mixed.phase == "mixed"

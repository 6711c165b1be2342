"""Edge cases of step/phase attribution and busy time, each with numbers worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpu_profiler.analysis import analyze


def X(name, cat, ts, dur, pid=1, tid=1, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def launch(t0: float, corr: int, k_start: float, k_dur: float, name: str = "gemm_kernel") -> list[dict]:
    return [
        X("cudaLaunchKernel", "cuda_runtime", t0, 10, correlation=corr),
        X(name, "kernel", k_start, k_dur, pid=0, tid=7, correlation=corr, device=0),
    ]


def step_trace(rank: int | None = None) -> dict:
    ev = []
    for i, (name, t0) in enumerate(
        (("execute_context_1(100)_generation_0(0)", 0), ("execute_context_0(0)_generation_4(4)", 1000))
    ):
        ev += [X(name, "user_annotation", t0, 1000)] + launch(t0 + 20, i + 1, t0 + 40, 400)
    doc = {"schemaVersion": 1, "traceEvents": ev}
    if rank is not None:
        doc["distributedInfo"] = {"rank": rank, "world_size": 2}
    return doc


def write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_tensor_parallel_ranks_do_not_multiply_tokens(tmp_path: Path) -> None:
    write(tmp_path / "tp" / "a.pt.trace.json", step_trace(rank=0))
    write(tmp_path / "tp" / "b.pt.trace.json", step_trace(rank=1))
    _, s2 = analyze([tmp_path / "tp"])
    _, s1 = analyze([tmp_path / "tp" / "a.pt.trace.json"])
    assert s2.totals.prefill_tokens == s1.totals.prefill_tokens == 100
    assert s2.totals.decode_tokens == 4
    assert s2.throughput.prefill_tok_s == pytest.approx(s1.throughput.prefill_tok_s)
    # the prefill step's 100 tokens over its time: its 1 ms host range (its kernel, 40–440 µs,
    # ran inside it); the window's rate, over both steps' 2 ms, beside it
    assert s2.throughput.prefill_tok_s == pytest.approx(100 / 1000e-6)
    assert s2.throughput.span_tok_s == s1.throughput.span_tok_s == pytest.approx(104 / 2000e-6)
    assert [r.rank for r in s2.ranks] == [0, 1]
    assert s2.totals.steps == 2 and s2.totals.step_rows == 4  # engine steps once, a row per rank


def test_token_rates_run_until_the_device_finishes_the_last_step(tmp_path: Path) -> None:
    # two decode steps of 4 tokens, host ranges 0–1000 and 1000–2000 µs; the second
    # step's kernel is queued behind the first and runs 1900–3000 µs, past its host range
    ev = [
        X("execute_context_0(0)_generation_4(4)", "user_annotation", 0, 1000),
        X("execute_context_0(0)_generation_4(4)", "user_annotation", 1000, 1000),
    ]
    ev += launch(100, 1, 150, 1700) + launch(1100, 2, 1900, 1100)
    _, s = analyze([write(tmp_path / "t.json", {"traceEvents": ev})])
    assert s.throughput.duration_ns == 3_000_000  # first host start to the last device end
    assert s.throughput.span_tok_s == pytest.approx(8 / 3000e-6)
    # per phase: the tokens over the steps' time on the critical path, the longer of each
    # step's host range and device range: 150–1850 µs (1.7 ms), then 1900–3000 µs (1.1 ms)
    assert s.throughput.decode_tok_s == pytest.approx(8 / 2800e-6)


def test_device_work_running_after_the_host_range_counts_for_its_step(tmp_path: Path) -> None:
    ev = [
        X("execute_context_0(0)_generation_4(4)", "user_annotation", 0, 1000),
        X("execute_context_0(0)_generation_4(4)", "user_annotation", 1000, 1000),
    ]
    ev += launch(900, 1, 950, 450)  # launched in step 0, runs 950–1400 (past its host range)
    ev += launch(1500, 2, 1500, 100)  # step 1's own kernel, launched after the device drained
    profile, s = analyze([write(tmp_path / "t.json", {"traceEvents": ev})])
    # busy is the step's own device work, wherever it ran; idle is inside its device span
    assert s.steps.busy_ns == [450_000, 100_000]
    assert s.steps.idle_ns == [0, 0]
    d = s.device_steps
    assert d.device_start_ns == [950_000, 1_500_000] and d.device_end_ns == [1_400_000, 1_600_000]
    # the device drained at 1400 µs and the next launch came at 1500 µs: 100 µs starved,
    # all of it host wait
    assert d.starved_ns == [0, 100_000] and d.host_wait_ns == [0, 100_000]
    assert d.waiting_on_host_ns == [0, 100_000]
    assert d.bound == ["device", "host"]  # 100 of 200 µs waiting on the host
    # the spilled kernel still counts for the step that launched it
    assert profile.events["step"][profile.events["kind"] == 1].tolist() == [0, 1]


def test_nested_steps_outer_catches_what_inner_misses(tmp_path: Path) -> None:
    ev = [
        X("execute_context_1(10)_generation_0(0)", "user_annotation", 0, 2000),
        X("execute_context_0(0)_generation_2(2)", "user_annotation", 500, 500),
    ]
    ev += launch(100, 1, 150, 100) + launch(600, 2, 650, 100) + launch(1500, 3, 1550, 100)
    profile, s = analyze([write(tmp_path / "t.json", {"traceEvents": ev})])
    assert s.totals.unstepped_share == 0
    assert profile.events["step"][profile.events["kind"] == 1].tolist() == [0, 1, 0]


def test_device_busy_is_a_union_over_streams(tmp_path: Path) -> None:
    ev = [
        X("gemm_a", "kernel", 0, 500, pid=0, tid=7),
        X("gemm_b", "kernel", 0, 500, pid=0, tid=8),
        X("gemm_c", "kernel", 999, 1, pid=0, tid=7),
    ]
    _, s = analyze([write(tmp_path / "t.json", {"traceEvents": ev})])
    assert s.totals.device_busy_ns == 501_000
    assert s.totals.device_kernel_ns == 1_001_000
    assert s.ranks[0].busy_share == pytest.approx(0.501)


@pytest.mark.parametrize(
    "name, phase, tokens",
    [
        ("execute_context_3(63)_generation_1(1)", "mixed", (63, 1)),
        # detailed_trace_annotation, with the total in front (as vLLM 0.32 writes it)
        ("execute_61_context_2(sq58sk58sqsq3364sqsk3364)_generation_3(sq3sk40sqsq3sqsk40)", "mixed", (58, 3)),
        # speculative decoding: 2 generation requests scheduling 4 tokens each
        ("execute_8_context_0(sq0sk0sqsq0sqsk0)_generation_2(sq8sk90sqsq32sqsk360)", "decode", (0, 8)),
        # the detailed form without the leading total
        ("execute_context_1(sq15sk15sqsq225sqsk225)_generation_0(sq0sk0sqsq0sqsk0)", "prefill", (15, 0)),
        # older vLLM: request counts only
        ("execute_new_2_cached_5", "mixed", (0, 0)),
    ],
)
def test_every_step_annotation_form(tmp_path: Path, name, phase, tokens) -> None:
    ev = [X(name, "user_annotation", 0, 100), X("aten::mm", "cpu_op", 1, 50)]
    _, s = analyze([write(tmp_path / "t.json", {"traceEvents": ev})])
    assert s.steps.phase == [phase]
    assert (s.steps.prefill_tokens[0], s.steps.decode_tokens[0]) == tokens
    assert s.run.step_source == "vllm_annotation"


def test_steps_that_schedule_nothing_are_counted_not_kept(tmp_path: Path) -> None:
    ev = [
        X("execute_context_0(0)_generation_0(0)", "user_annotation", 0, 100),
        X("execute_context_0(0)_generation_2(2)", "user_annotation", 200, 100),
        X("aten::mm", "cpu_op", 210, 50),
    ]
    _, s = analyze([write(tmp_path / "t.json", {"traceEvents": ev})])
    assert s.steps.phase == ["decode"] and s.steps.step_id == [0]
    assert s.step_search.empty_steps == 1 and "empty_steps" not in s.run.extra  # (its one place)


def test_rank_from_file_name_and_clashing_ranks(tmp_path: Path) -> None:
    from xpu_profiler.analysis import export
    from xpu_profiler.exporters.validate import validate_file

    a = step_trace()
    b = step_trace()
    for e in b["traceEvents"]:  # the second file's run is shifted by 500 µs
        e["ts"] += 500
    write(tmp_path / "named" / "rank0.pt.trace.json", a)
    write(tmp_path / "named" / "rank1.pt.trace.json", b)
    profile, s = analyze([tmp_path / "named"])
    assert [r.rank for r in s.ranks] == [0, 1]
    assert not s.warnings
    # no rank anywhere: the second file becomes another rank, with a warning, not a silent merge
    write(tmp_path / "anon" / "x.json", a)
    write(tmp_path / "anon" / "y.json", b)
    profile, s = analyze([tmp_path / "anon"])
    assert [r.rank for r in s.ranks] == [0, 1]
    assert any("rank 0 also comes from another file; shown as rank 1" in w for w in s.warnings)
    assert s.steps.busy_ns == [400_000] * 4  # correlation ids did not cross-link
    out = export(profile, s, tmp_path / "out", ["perfetto"])
    assert validate_file(out["perfetto"]) == []

"""The step evidence layers, phase inference, engine detection and the verdicts on small
traces built here, each with its numbers worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpu_profiler.aggregate.steps.phases import token_counts
from xpu_profiler.analysis import analyze
from xpu_profiler.knowledge.step_grammar import frame_engine, parse_step_name

WORKER = "vllm/v1/worker/gpu_worker.py(263): execute_model"
RUNNER = "vllm/v1/worker/gpu_model_runner.py(1002): execute_model"


def X(name, cat, ts, dur, pid=1, tid=1, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def launch(t0, corr, k_start, k_dur, name="gemm_kernel", api="cudaLaunchKernel"):
    return [
        X(api, "cuda_runtime", t0, 5, correlation=corr),
        X(name, "kernel", k_start, k_dur, pid=0, tid=7, correlation=corr, device=0),
    ]


def copy(t0, corr, nbytes):
    return [
        X("cudaMemcpyAsync", "cuda_runtime", t0, 2, correlation=corr),
        X("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", t0 + 3, 1, pid=0, tid=7, correlation=corr, bytes=nbytes),
    ]


def write(path: Path, ev: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


# -- the grammar ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, phase, reqs, tokens",
    [
        ("step[TARGET_VERIFY bs=4 g_sq=16]", "decode", (0, 4), (0, 16)),
        ("step[DRAFT_EXTEND bs=4]", "decode", (0, 4), (0, 4)),
        ("step[DRAFT_EXTEND_V2 bs=8 toks=8]", "decode", (0, 8), (0, 8)),
        ("step[SPLIT_PREFILL bs=2 toks=4096]", "prefill", (2, 0), (4096, 0)),
        ("step[DLLM_EXTEND bs=1 toks=32 c_sq=32 c_sqsq=1024 c_sqsk=1024 c_sk=32]", "prefill", (1, 0), (32, 0)),
        ("step[PREBUILT bs=3]", "prefill", (3, 0), (0, 0)),
        ("step[MIXED bs=3 c=1 g=2 c_sq=100 g_sq=2]", "mixed", (1, 2), (100, 2)),
        # the vLLM family, whatever its bodies hold: keys added after sq are read past
        ("execute_10_context_1(sq8sk8sqsq64sqsk64sk2x9)_generation_2(sq2sk9)", "mixed", (1, 2), (8, 2)),
        ("execute_context_2(30_450_9)_generation_0(0)", "prefill", (2, 0), (30, 0)),
    ],
)
def test_every_step_form_of_the_families(name, phase, reqs, tokens):
    s = parse_step_name(name)
    assert s is not None and s.phase == phase
    assert (s.prefill_reqs, s.decode_reqs) == reqs and (s.prefill_tokens, s.decode_tokens) == tokens


def test_names_that_are_no_step():
    assert parse_step_name("step[IDLE bs=0]").phase == "unknown"  # a DP rank with nothing to run
    for other in ("step[SOMETHING_NEW bs=2]", "execute_context_1(x)_generation_0(y)", "step[decode bs=2]"):
        assert parse_step_name(other) is None, other


def test_which_engine_a_frame_belongs_to():
    assert frame_engine(WORKER) == "vllm"
    assert frame_engine("/usr/lib/python3/site-packages/sglang/srt/managers/tp_worker.py(447): x") == "sglang"
    assert frame_engine("/opt/vllm_ascend/worker/worker.py(3): execute_model") == "vllm"
    assert frame_engine("torch/nn/modules/module.py(1751): _call_impl") is None


# -- frames -------------------------------------------------------------------------------


def test_execute_model_frames_are_steps(tmp_path):
    """Worker frames hold the runner's: one step each; a frame inside _dummy_run is no step;
    one that launches nothing is empty; the split-out sample_tokens joins its step."""
    ev = [
        # step 0: 0–1000 µs, its runner frame nested, a kernel
        X(WORKER, "python_function", 0, 1000),
        X(RUNNER, "python_function", 10, 980),
        *launch(100, 1, 150, 600),
        # a dummy run (graph capture): no step, though it launches
        X("vllm/v1/worker/gpu_model_runner.py(2400): _dummy_run", "python_function", 1100, 300),
        X(RUNNER, "python_function", 1110, 280),
        *launch(1120, 2, 1130, 50),
        # step 1: 1500–2000 µs, then its sampling 2000–2300 µs (split out of execute_model)
        X(WORKER, "python_function", 1500, 500),
        *launch(1600, 3, 1650, 200),
        X("vllm/v1/worker/gpu_worker.py(300): sample_tokens", "python_function", 2010, 290),
        *launch(2050, 4, 2100, 100, name="argmax_kernel"),
        # an execute_model with nothing scheduled: launches nothing
        X(WORKER, "python_function", 3000, 50),
    ]
    p, s = analyze([write(tmp_path / "t.json", ev)])
    assert s.totals.steps == 2 and s.step_search.found_by == {"frame": 2} and s.step_search.empty_steps == 1
    assert s.steps.start_ns == [0, 1_500_000]
    assert s.steps.wall_ns == [1_000_000, 800_000]  # step 1 ends with its sampling
    assert s.step_search.extended_by_sampling == 1
    assert p.events["step"][p.events["kind"] == 1].tolist() == [0, -1, 1, 1]  # the dummy run's kernel in none
    assert s.step_search.engine == "vllm"


# -- phase inference ----------------------------------------------------------------------


def test_tokens_and_requests_from_the_input_copies():
    # block table, input_ids (4T), positions (8T), query_start_loc 4(R+1), seq_lens 4R, slot mapping
    assert token_counts([32768, 4196, 8392, 8, 4, 4196]) == (1049, 1)
    assert token_counts([32768, 4, 8, 8, 4, 4]) == (1, 1)
    assert token_counts([128, 256, 36, 32]) == (32, 8)
    # full-buffer metadata copies before the token pair say nothing of the requests
    assert token_counts([2052, 2048, 3552, 7104, 8]) == (888, None)
    # requests may not outnumber tokens
    assert token_counts([16, 32, 4100, 4096]) == (4, None)
    assert token_counts([]) == (None, None)


def test_phases_inferred_from_copies_and_graph_launches(tmp_path):
    ev = []
    corr = 1
    # step 0: prefill of 100 tokens, 1 request (copies), eager
    ev.append(X(WORKER, "python_function", 0, 1000))
    for nbytes in (400, 800, 8, 4):
        ev += copy(10 + corr * 5, corr, nbytes)
        corr += 1
    ev += launch(100, corr, 150, 500)
    corr += 1
    # step 1: decode, 4 tokens for 4 requests (copies)
    ev.append(X(WORKER, "python_function", 2000, 1000))
    for nbytes in (16, 32, 20, 16):
        ev += copy(2010 + corr * 5, corr, nbytes)
        corr += 1
    ev += launch(2100, corr, 2150, 300)
    corr += 1
    # step 2: no copies; one graph launch runs the whole step: a full-graph decode
    ev.append(X(WORKER, "python_function", 4000, 1000))
    ev += launch(4100, corr, 4150, 300, api="cudaGraphLaunch") + [
        X("other_kernel", "kernel", 4460, 100, pid=0, tid=7, correlation=corr, device=0)
    ]
    corr += 1
    # step 3: eager, 50 tokens and no request count: unknown
    ev.append(X(WORKER, "python_function", 6000, 1000))
    for nbytes in (200, 400):
        ev += copy(6010 + corr * 5, corr, nbytes)
        corr += 1
    ev += launch(6100, corr, 6150, 300)
    _, s = analyze([write(tmp_path / "t.json", ev)])
    assert s.steps.phase == ["prefill", "decode", "decode", "unknown"]
    assert s.steps.phase_from == ["copies", "copies", "graph_launches", "none"]
    assert s.steps.prefill_tokens == [100, 0, 0, 0] and s.steps.decode_tokens == [0, 4, 0, 0]
    by = {p.phase: p for p in s.phases}
    assert "input copies" in by["prefill"].inferred_from and "graph launch" in by["decode"].inferred_from
    assert by["unknown"].inferred_from is None


def test_no_phase_is_inferred_outside_an_inference_engine(tmp_path):
    """A training loop's ProfilerStep with the same copy sizes is no vLLM step."""
    ev = [X("ProfilerStep#1", "user_annotation", 0, 1000)]
    for i, nbytes in enumerate((400, 800, 8, 4)):
        ev += copy(10 + i * 5, i + 1, nbytes)
    ev += launch(100, 9, 150, 500)
    _, s = analyze([write(tmp_path / "t.json", ev)])
    assert s.steps.phase == ["unknown"] and s.step_search.engine == "other"


# -- device bursts --------------------------------------------------------------------------


def test_bursts_of_device_work_are_inferred_steps(tmp_path):
    """No marker: 3 bursts of 10 kernels (1 µs apart) separated by 2 ms of idle."""
    ev, corr = [], 1
    for b in range(3):
        t = b * 5000
        for k in range(10):
            ev += launch(t + k * 20, corr, t + 300 + k * 11, 10)
            corr += 1
    _, s = analyze([write(tmp_path / "t.json", ev)])
    assert s.totals.steps == 3 and s.step_search.found_by == {"device_segment": 3} and s.step_search.inferred
    assert s.run.step_source == "device_segments" and s.steps.evidence == ["device_segment"] * 3
    # each burst's host range is its launches (0..180 µs), its device range 300..410 µs:
    # the step time is the longer of the two
    assert s.steps.wall_ns == [180_000] * 3
    assert [e - b for b, e in zip(s.device_steps.effective_start_ns, s.device_steps.device_end_ns)] == [109_000] * 3
    assert s.steps.step_ns == [180_000] * 3


def test_too_few_bursts_are_no_steps(tmp_path):
    ev = []
    for k in range(10):
        ev += launch(k * 20, k + 1, 300 + k * 11, 10)
    _, s = analyze([write(tmp_path / "t.json", ev)])
    assert s.totals.steps == 0 and s.step_search.message.startswith("No engine step found")


# -- verdicts -------------------------------------------------------------------------------


def test_a_communication_bound_step(tmp_path):
    """Two steps of 1000 µs device time each, back to back: 600 µs of all-reduce nothing
    overlaps, the launches queued ahead (no host wait): communication-bound; a single rank,
    said so."""
    ev = []
    corr = 1
    for t in (0, 1000):
        ev.append(X(f"execute_context_0(0)_generation_{4}(4)", "user_annotation", t, 100))
        ev += launch(t + 5, corr, t + 200, 400)
        ev += launch(t + 10, corr + 1, t + 600, 600, name="ncclDevKernel_AllReduce_Sum_bf16_RING_LL")
        corr += 2
    _, s = analyze([write(tmp_path / "t.json", ev)])
    d = s.device_steps
    assert d.comm_ns == [600_000, 600_000] and d.exposed_comm_ns == [600_000, 600_000]
    (ph,) = s.phases
    assert ph.bound == "communication" and d.bound == ["communication", "communication"]
    assert ph.device.exposed_comm_ns == 1_200_000 and "peers this trace cannot see" in ph.bound_evidence


def test_a_graph_replayed_decode_waiting_on_the_host(tmp_path):
    """The issue's MI300X decode: each 44.5 ms step replays its graph after ~25 ms of host
    work, ~17.8 ms of kernels: host-bound, and since graphs already replay, the fix is the
    host work between replays (vLLM's async scheduling), not "turn graphs on"."""
    ev, corr = [], 1
    for i in range(3):
        t = i * 44_500
        ev.append(X("execute_context_0(0)_generation_1(1)", "user_annotation", t, 44_400))
        ev += launch(t + 10, corr, t + 20, 30, name="copy_inputs_kernel")  # a small eager kernel first
        corr += 1
        ev.append(X("cudaGraphLaunch", "cuda_runtime", t + 25_000, 20, correlation=corr))
        ev += [
            X(f"graph_kernel_{k}", "kernel", t + 25_030 + k * 223, 222.5, pid=0, tid=7, correlation=corr, device=0)
            for k in range(80)
        ]
        corr += 1
    _, s = analyze([write(tmp_path / "t.json", ev)])
    (ph,) = s.phases
    d = ph.device
    assert ph.bound == "host" and d.waiting_on_host_ns / d.period_ns > 0.5
    assert ph.kernels.graph_launches == 3 and ph.kernels.graph_kernels == 240
    f = {x.rule: x for x in s.findings}["host_bound"]
    assert "--async-scheduling" in f.fix and "graphs already replay" in f.fix and "--enforce-eager" not in f.fix
    assert ph.bound_gaps[0].host_wait_ns > 24_000_000 and ph.bound_gaps[0].next_work == "graph_kernel_0"

"""The device-side truth on real accelerator traces: SGLang Qwen3-8B on MI300X (the shared
TraceLens traces: a graph-replayed decode step with its capture trace, an eager prefill
step) and vLLM gpt-oss (MoE, Triton matmul_ogs mxfp4 expert GEMMs) under FULL and
PIECEWISE graph replay with their capture traces (tests/data/tracelens). Each step's
device numbers are recomputed here from the raw JSON, independently of the readers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import real_data
from test_device_steps import union

from xpu_profiler.aggregate.steps.verdicts import HOST_BOUND_SHARE
from xpu_profiler.analysis import analyze
from xpu_profiler.knowledge.taxonomy import FUSED_OPS

DECODE = real_data.path("tracelens/sglang-qwen3-8b-decode.json.gz")
CAPTURE = real_data.path("tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz")
PREFILL = real_data.path("tracelens/sglang-qwen3-8b-prefilldecode.json.gz")
GPTOSS = Path(__file__).resolve().parent / "data" / "tracelens"

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def raw_step(path: Path) -> dict:
    """The step's device numbers from the raw JSON: its device work is what the runtime
    calls inside its host range launched (correlation id); busy is the union of that work.
    Its effective range starts after a leading wait on earlier work: the longest idle gap
    of the device inside the span, when the work that ends it sat launched (its launch
    call had returned: queued, not waiting on the host) for over 1 ms of it, and under 5% of the step's busy time ran
    before it. Idle is the time in the effective range with no device
    work at all. Times in ns as Perfetto and the readers convert them (ts and dur apart)."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    ev = doc["traceEvents"]
    (step,) = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("execute_")]
    a, b = step["ts"], step["ts"] + step["dur"]
    launch_ns = {
        e["args"]["correlation"]: round(e["ts"] * 1000) + round(e["dur"] * 1000)
        for e in ev
        if e.get("cat") == "cuda_runtime" and a <= e["ts"] <= b
    }
    dev = [
        (round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000), e["args"].get("correlation"))
        for e in ev
        if e.get("cat") in DEVICE_CATS
    ]
    own = [(s, t, c) for s, t, c in dev if c in launch_ns]
    s0, s1 = min(s for s, _, _ in own), max(t for _, t, _ in own)
    busy = sum(t - s for s, t in union([(s, t) for s, t, _ in own]))
    every = union([(s, t) for s, t, _ in dev])
    gaps = [(p[1], n[0]) for p, n in zip(every, every[1:]) if s0 <= p[1] and n[0] <= s1]
    eff = s0
    if gaps:
        g0, g1 = max(gaps, key=lambda g: g[1] - g[0])
        after = min((s, c) for s, _, c in own if s >= g1)
        ran = sum(min(t, g0) - s for s, t in union([(s, t) for s, t, _ in own if s < g0]))
        if g1 - max(g0, launch_ns[after[1]]) > 1_000_000 and ran < 0.05 * busy:
            eff = g1
    covered = sum(max(0, min(t, s1) - max(s, eff)) for s, t in every)
    return {
        "offset": s0 - round(step["ts"] * 1000),
        "span": s1 - s0,
        "effective": s1 - eff,
        "busy": busy,
        "idle": (s1 - eff) - covered,
    }


def shares(summary) -> dict[str, float]:
    return {f.fused_op: f.share for f in summary.fused_ops}


def check_device_step(summary, raw: dict) -> None:
    d = summary.device_steps
    assert d.device_start_ns[0] - summary.steps.start_ns[0] == raw["offset"]
    assert d.device_end_ns[0] - d.device_start_ns[0] == raw["span"]
    assert d.device_end_ns[0] - d.effective_start_ns[0] == raw["effective"] == summary.steps.step_ns[0]
    assert d.device_busy_ns[0] == summary.steps.busy_ns[0] == raw["busy"]
    assert d.device_idle_ns[0] == summary.steps.idle_ns[0] == raw["idle"]


def test_sglang_decode_replay_is_device_bound_and_attributed_through_its_capture(capsys) -> None:
    real_data.need("tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz")
    _, by_name = analyze([DECODE])
    _, s = analyze([DECODE], capture=[CAPTURE])
    g = s.graphs
    assert g.replays == g.launches == 1 and g.share > 0.95
    assert g.matched_share >= 0.95 and g.matched_events == g.replayed_events == 544
    assert g.capture_files == [str(CAPTURE)]
    assert by_name.graphs.matched_share is None  # nothing to match against
    # the capture's shares agree with the name-only ones within a few points; little "other"
    sc, sn = shares(s), shares(by_name)
    for op in set(sc) | set(sn):
        assert abs(sc.get(op, 0) - sn.get(op, 0)) < 0.05, op
    assert s.totals.other_share < 0.03 and by_name.totals.other_share < 0.03
    # how op time was attributed: almost all through the capture trace
    a = s.attribution
    assert a.share_by_source["capture"] == pytest.approx(g.share) and a.name_share < 0.02
    assert sum(a.share_by_source.values()) == pytest.approx(1.0)
    assert by_name.attribution.share_by_source.get("capture", 0) == 0
    for f in s.fused_ops:
        assert sum(f.time_ns_by_source.values()) == f.time_ns
    # the host range is 465 ms because a synchronous device-to-host copy blocks it; the
    # stream waited ~463 ms on an event with the step's first kernels already queued, then
    # ran the replay back to back: the host was ahead, the step is device-bound
    assert s.steps.wall_ns[0] > 460e6
    check_device_step(s, raw_step(DECODE))
    d = s.device_steps
    assert d.bound == ["device"]
    # the ~463 ms wait on earlier work is trimmed off the step's front: its time is the ~10 ms
    # replay; the device waited on the host only while the graph launch call was still
    # issuing the replay (host time), far below the host-bound line
    assert d.effective_start_ns[0] - d.device_start_ns[0] > 460e6
    doc = json.loads(gzip.decompress(DECODE.read_bytes()))
    (launch,) = [e for e in doc["traceEvents"] if e["name"].endswith("GraphLaunch")]
    assert 0 < d.waiting_on_host_ns[0] <= launch["dur"] * 1000
    assert d.waiting_on_host_ns[0] < HOST_BOUND_SHARE * (d.device_end_ns[0] - d.effective_start_ns[0])
    (phase,) = s.phases
    assert phase.bound == "device" and "device-bound" in phase.bound_evidence
    with capsys.disabled():
        print("\nSGLang decode, attribution sources of device time:")
        for k, v in sorted(a.share_by_source.items(), key=lambda kv: -kv[1]):
            print(f"  {k:9s} {v:7.2%}  {a.time_ns_by_source[k] / 1e6:8.3f} ms")
        print(f"  {g.matched_events}/{g.replayed_events} replayed kernels matched; {phase.bound_evidence}")


def test_sglang_eager_prefill_is_device_bound() -> None:
    real_data.need("tracelens/sglang-qwen3-8b-prefilldecode.json.gz")
    _, s = analyze([PREFILL])
    assert s.graphs.replays == 0 and s.attribution.share_by_source["op_chain"] > 0.99
    check_device_step(s, raw_step(PREFILL))
    assert s.device_steps.bound == ["device"] and s.phases[0].phase == "prefill"
    # the kernels ran up to ~465 ms after the host range had ended
    assert s.device_steps.device_end_ns[0] - (s.steps.start_ns[0] + s.steps.wall_ns[0]) > 400e6


def test_a_capture_trace_among_the_inputs_is_no_rank() -> None:
    real_data.need("tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz")
    # named on the command line beside the run, it says nothing by its place: its content
    # (capture ranges, no engine step) tells it apart
    _, s = analyze([DECODE, CAPTURE])
    assert [r.rank for r in s.ranks] == [0] and s.graphs.capture_files == [str(CAPTURE)]
    assert s.graphs.matched_share == 1.0 and not [w for w in s.warnings if "also comes from" in w]


def moe_checks(profile, s) -> None:
    """``moe`` holds the expert GEMMs and the routing; quantization and activation hold no
    GEMM; "other" stays small."""
    ev, strings = profile.events, profile.strings
    dev = np.flatnonzero(ev["device"] >= 0)
    fused = {}
    for i in dev.tolist():
        fused.setdefault(strings[int(ev["name"][i])], set()).add(FUSED_OPS[int(ev["fused"][i])])
    experts = [n for n in fused if n.startswith("_matmul_ogs")]
    routing = [
        n
        for n in fused
        if n
        in (
            "_topk_forward",
            "_combined_routing_compute",
            "_combined_routing_memset",
            "_sum_bitmatrix_rows",
            "_finalize_matmul_scatter_bf16",
        )
    ]
    assert len(experts) == 2 and len(routing) == 5
    for n in experts + routing:
        assert fused[n] == {"moe"}, n
    gemmish = [n for n in fused if any(w in n.lower() for w in ("matmul", "gemm", "cijk"))]
    assert all(not fused[n] & {"quantization", "activation"} for n in gemmish)
    sh = shares(s)
    assert sh["moe"] > 0.6 and "quantization" not in sh and "activation" not in sh
    assert s.totals.other_share < 0.03


def test_vllm_gptoss_full_graph_decode() -> None:
    run = GPTOSS / "vllm_decode_full"
    profile_n, by_name = analyze([run / "graph_execution.json.gz"])
    # the profiler directory: the capture trace in capture_traces/ is picked up, not a rank
    profile, s = analyze([run])
    assert len(s.ranks) == 1 and len(s.graphs.capture_files) == 1
    g = s.graphs
    assert g.replays == 1 and g.replayed_events == 421 and g.matched_share >= 0.95 and g.share > 0.9
    for p, summ in ((profile_n, by_name), (profile, s)):
        moe_checks(p, summ)
    sc, sn = shares(s), shares(by_name)
    for op in set(sc) | set(sn):
        assert abs(sc.get(op, 0) - sn.get(op, 0)) < 0.05, op
    assert s.attribution.share_by_source["capture"] > 0.9 and by_name.attribution.name_share > 0.9
    check_device_step(s, raw_step(run / "graph_execution.json.gz"))
    assert s.device_steps.bound == ["device"] and s.phases[0].bound == "device"


def test_vllm_gptoss_piecewise_graphs() -> None:
    run = GPTOSS / "vllm_prefilldecode_piecewise"
    profile, s = analyze([run])
    g = s.graphs
    # 25 pieces, each its own graph launch; attention runs eagerly between them
    assert g.replays == g.launches == 25 and g.captured_graphs == 25 and g.matched_share >= 0.95
    moe_checks(profile, s)
    assert s.steps.phase == ["mixed"] and s.steps.prefill_tokens == [8155] and s.steps.decode_tokens == [37]
    check_device_step(s, raw_step(run / "graph_execution.json.gz"))
    assert s.device_steps.bound == ["device"]

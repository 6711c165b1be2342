"""Layers where the trace says little: graph replays with no module frames (the kernel
stream alone), a model config, odd streams. Each trace is written here as torch.profiler
writes one, with a known layer structure, and read by the real reader."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from xpu_profiler import analysis
from xpu_profiler.aggregate.layers import stream as ls
from xpu_profiler.aggregate.layers.kinds import config_layers
from xpu_profiler.readers import load

STEP = "execute_context_0(0)_generation_8(8)"

PRE = [
    "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_qkv",
    "void vllm::rotary_embedding_kernel<c10::BFloat16>",
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>",
]
FULL_ATTN = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>"
SLIDING_ATTN = "fmhaSm100aKernel_QkvE4m3OBfloat16HQk64PagedKvSlidingOrChunkedCausalP64"
POST = ["nvjet_tst_64x8_64x16_4x1_v_bz_TNN_oproj", "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>"]
DENSE_MLP = [
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_gate_up",
    "void vllm::act_and_mul_kernel<c10::BFloat16>",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_down",
]
MOE_MLP = [
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_router",
    "void vllm::moe::topkGatingSoftmax<8>",
    "void vllm::moe::moe_align_block_size_kernel<int>",
    "fused_moe_kernel",
    "fused_moe_kernel",
    "void vllm::moe::moe_sum_kernel<c10::BFloat16, 2>",
]
HEAD = ["void at::native::indexSelectLargeIndex_embedding<c10::BFloat16>"]
TAIL = [
    "void vllm::rms_norm_kernel<c10::BFloat16, 8>",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_lm_head",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)",
]


def layer(mlp: list[str], attn: str = FULL_ATTN) -> list[str]:
    return [*PRE, attn, *POST, *mlp]


def X(name: str, cat: str, ts: float, dur: float, pid: int = 100, tid: int = 1, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def replay_trace(path: Path, kernels: list[str], step: str = STEP, durs: list[float] | None = None) -> Path:
    """One engine step whose whole forward is one graph replay: no op, no module frame."""
    ev = [X(step, "user_annotation", 0, 50), X("cudaGraphLaunch", "cuda_runtime", 5, 20, correlation=1)]
    t = 100.0
    for i, k in enumerate(kernels):
        d = durs[i] if durs else 5.0
        ev.append(X(k, "kernel", t, d, pid=0, tid=7, correlation=1, stream=7, device=0))
        t += d + 1
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return path


def summarize(path: Path, model_config: dict | None = None):
    prof = load([path])
    if model_config is not None:
        prof.run["model_config"] = model_config
    return analysis.summarize(prof)


def kinds(phase) -> dict[str, int]:
    return {k.kind: k.layers for k in phase.kinds}


def test_dense_first_then_moe_layers_inferred_with_their_kinds(tmp_path: Path) -> None:
    kernels = HEAD + [k for i in range(15) for k in layer(DENSE_MLP if i < 3 else MOE_MLP)] + TAIL
    s = summarize(replay_trace(tmp_path / "t.json", kernels))
    (ph,) = s.layers.phases
    assert (ph.evidence, ph.inferred, ph.layers) == ("period", True, 15)
    assert kinds(ph) == {"attention/dense": 3, "attention/moe": 12}
    assert [r.mlp for r in ph.rows] == ["dense"] * 3 + ["moe"] * 12
    # every layer from its norm to its MLP: 4 + 1 + 2 + 3 (dense) or 6 (MoE) kernels
    assert [r.kernels_per_step for r in ph.rows] == [10.0] * 3 + [13.0] * 12
    assert ph.head_fused_ns == {"embedding": 5000}
    assert set(ph.tail_fused_ns) == {"norm", "gemm", "sampling"}
    assert ph.layers_ns + ph.head_ns + ph.tail_ns + ph.other_ns == ph.op_time_ns == s.totals.op_time_ns


def test_a_draft_forward_after_sampling_is_counted_apart(tmp_path: Path) -> None:
    target = HEAD + [k for _ in range(8) for k in layer(DENSE_MLP)] + TAIL
    draft = HEAD + layer(DENSE_MLP) + TAIL
    s = summarize(replay_trace(tmp_path / "t.json", target + draft))
    (ph,) = s.layers.phases
    assert (ph.layers, ph.draft_layers) == (8, 1)
    assert kinds(ph) == {"attention/dense": 8, "draft attention/dense": 1}
    assert ph.rows[-1].role == "draft"


def test_the_tail_after_the_last_layer_is_no_layers_time(tmp_path: Path) -> None:
    """A dense draft (MTP) layer after MoE target layers: measured by the target's layer
    length it would run on into the draft's final norm, vocabulary projection and sampling;
    those are the tail, whatever the lengths: the last layer of each forward runs what a
    layer runs (4 + 1 + 2 + 3 kernels dense, 6 for MoE), and its time stays comparable."""
    target = HEAD + [k for _ in range(8) for k in layer(MOE_MLP)] + TAIL
    draft = HEAD + layer(DENSE_MLP) + TAIL
    durs = [5.0] * len(target + draft)
    for i, k in enumerate(target + draft):
        if k == TAIL[1]:
            durs[i] = 400.0  # the vocabulary projection: many layers' worth
    s = summarize(replay_trace(tmp_path / "t.json", target + draft, durs=durs))
    (ph,) = s.layers.phases
    assert (ph.layers, ph.draft_layers) == (8, 1)
    assert [r.kernels_per_step for r in ph.rows] == [13.0] * 8 + [10.0]
    assert [r.per_step_ns for r in ph.rows] == [13 * 5000.0] * 8 + [10 * 5000.0]
    # the draft's tail after the last layer, whole; the target's, between the forwards, with
    # the draft's embedding
    assert ph.tail_fused_ns == {"norm": 5000, "gemm": 400_000, "sampling": 5000}
    assert ph.other_ns == (5000 + 400_000 + 5000) + 5000
    assert ph.layers_ns + ph.head_ns + ph.tail_ns + ph.other_ns == ph.op_time_ns


def test_no_regular_period_no_layers(tmp_path: Path) -> None:
    rng = random.Random(3)
    kernels = HEAD + [k for _ in range(12) for k in layer(rng.choice([DENSE_MLP, MOE_MLP, MOE_MLP + DENSE_MLP, []]))]
    s = summarize(replay_trace(tmp_path / "t.json", kernels))
    assert s.layers is not None and s.layers.phases == []
    assert s.layers.refused == {"the attention runs do not repeat regularly": 1}


def test_too_few_runs_to_infer_but_the_config_says(tmp_path: Path) -> None:
    kernels = HEAD + [k for _ in range(2) for k in layer(MOE_MLP)] + TAIL
    path = replay_trace(tmp_path / "t.json", kernels)
    assert summarize(path).layers.refused == {"too few attention runs to infer layers": 1}
    cfg = {"num_hidden_layers": 2, "num_experts": 8, "decoder_sparse_step": 1, "intermediate_size": 512}
    (ph,) = summarize(path, cfg).layers.phases
    assert (ph.evidence, ph.inferred, ph.layers, ph.confidence) == ("config", False, 2, 1.0)
    assert kinds(ph) == {"full/moe": 2}  # a config without any window key: full attention
    assert ph.kind_sources == ["config", "kernels"]


def test_layer_types_from_the_config_and_window_from_kernel_names(tmp_path: Path) -> None:
    # gpt-oss: sliding and full layers alternate; here both run the same kernel
    types = ["sliding_attention", "full_attention"] * 6
    cfg = {"num_hidden_layers": 12, "layer_types": types, "num_local_experts": 32, "sliding_window": 128}
    kernels = HEAD + [k for _ in range(12) for k in layer(MOE_MLP)] + TAIL
    (ph,) = summarize(replay_trace(tmp_path / "a.json", kernels), cfg).layers.phases
    assert ph.evidence == "config" and [r.attention for r in ph.rows] == ["sliding", "full"] * 6
    # without a config, the kernel names say which layers slide: the others are full
    kernels = HEAD + [k for i in range(12) for k in layer(MOE_MLP, SLIDING_ATTN if i % 2 else FULL_ATTN)] + TAIL
    (ph,) = summarize(replay_trace(tmp_path / "b.json", kernels)).layers.phases
    assert ph.inferred and kinds(ph) == {"full/moe": 6, "sliding/moe": 6}
    assert [r.attention for r in ph.rows] == ["full", "sliding"] * 6


def test_a_config_that_disagrees_lowers_the_confidence(tmp_path: Path) -> None:
    kernels = HEAD + [k for _ in range(12) for k in layer(DENSE_MLP)] + TAIL
    path = replay_trace(tmp_path / "t.json", kernels)
    (alone,) = summarize(path).layers.phases
    (other,) = summarize(path, {"num_hidden_layers": 24}).layers.phases  # e.g. 2 pipeline stages
    assert alone.inferred and other.inferred and other.layers == alone.layers == 12
    assert other.confidence == alone.confidence / 2 and "config says 24" in other.detail


def test_twice_the_attention_runs_of_the_config_are_grouped(tmp_path: Path) -> None:
    # a layer that runs attention twice (prefill and decode parts), a GEMM between them
    twice = [*PRE, FULL_ATTN, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_merge", FULL_ATTN, *POST, *DENSE_MLP]
    kernels = HEAD + [k for _ in range(6) for k in twice] + TAIL
    (ph,) = summarize(replay_trace(tmp_path / "t.json", kernels), {"num_hidden_layers": 6}).layers.phases
    assert (ph.evidence, ph.layers) == ("config", 6)
    assert [r.kernels_per_step for r in ph.rows] == [float(len(twice))] * 6


def test_a_once_per_forward_attention_helper_is_no_layer(tmp_path: Path) -> None:
    kernels = HEAD + ["attn_plan_prepare_kernel"] + [k for _ in range(10) for k in layer(DENSE_MLP)] + TAIL
    (ph,) = summarize(replay_trace(tmp_path / "t.json", kernels)).layers.phases
    assert ph.layers == 10 and "helpers" in ph.detail


def test_periodicity_and_confidence() -> None:
    import numpy as np

    assert ls.periodicity(np.array([17, 18] * 10)) == (2, 1.0, 0)
    assert ls.periodicity(np.array([14] * 9 + [20])) == (1, 0.9, 0)
    assert ls.periodicity(np.array([10, 10, 10] + [13] * 9)) == (1, 9 / 11, 1)  # the fewest left out
    assert ls.periodicity(np.array([3, 9, 4, 11, 5, 2, 8, 7])).share < ls.REGULAR_SHARE
    assert ls.confidence(ls.Period(1, 1.0, 0), 3, 4) == 0.5
    assert ls.confidence(ls.Period(1, 1.0, 3), 12, 13) == 0.75


def test_config_layers() -> None:
    ds = config_layers(
        {"num_hidden_layers": 6, "first_k_dense_replace": 2, "n_routed_experts": 64, "moe_layer_freq": 1}
    )
    assert ds.mlp == ["dense"] * 2 + ["moe"] * 4 and ds.attention == ["full"] * 6
    gemma = config_layers({"num_hidden_layers": 6, "sliding_window": 4096, "sliding_window_pattern": 3})
    assert gemma.attention == ["sliding", "sliding", "full"] * 2
    qwen_next = config_layers(
        {"text_config": {"num_hidden_layers": 4, "layer_types": ["linear_attention"] * 3 + ["full_attention"]}}
    )
    assert qwen_next.attention == ["linear"] * 3 + ["full"]
    assert config_layers({"hidden_size": 8}) is None and config_layers(None) is None


def eager_trace(path: Path, layer_class: str, layers: int) -> Path:
    """An eager step with module frames (``with_stack``): each layer a frame of
    ``layer_class`` holding an ``Attention`` frame, kernels launched from inside them."""
    ev = [X(STEP, "user_annotation", 0, 10_000)]
    t, corr, dev_t = 10.0, 1, 20_000.0

    def launch(name: str) -> None:
        nonlocal t, corr, dev_t
        ev.append(X("cudaLaunchKernel", "cuda_runtime", t, 2, correlation=corr))
        ev.append(X(name, "kernel", dev_t, 4, pid=0, tid=7, correlation=corr, stream=7, device=0))
        t, corr, dev_t = t + 3, corr + 1, dev_t + 5

    launch(HEAD[0])
    for i in range(layers):
        start = t
        for k in PRE:
            launch(k)
        a0 = t
        launch(FULL_ATTN)
        ev.append(X(f"nn.Module: Attention_{i}", "python_function", a0 - 0.5, t - a0))
        for k in POST + DENSE_MLP:
            launch(k)
        ev.append(X(f"nn.Module: {layer_class}_{i}", "python_function", start - 0.5, t - start + 0.2))
        t += 1
    for k in TAIL:
        launch(k)
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return path


def test_module_frames_by_name_or_by_structure(tmp_path: Path) -> None:
    for cls, how in (("LlamaDecoderLayer", ""), ("ResidualUnit", "structure")):
        s = summarize(eager_trace(tmp_path / f"{cls}.json", cls, 5))
        (ph,) = s.layers.phases
        assert (ph.evidence, ph.layers, ph.inferred) == ("module", 5, False)
        assert {r.module for r in ph.rows} == {cls} and (how in ph.detail)
        assert [r.kernels_per_step for r in ph.rows] == [10.0] * 5
        assert ph.head_fused_ns == {"embedding": 4000} and ph.other_ns == 0


def test_the_terminal_shows_kinds_and_slowest_layers_with_names_escaped(tmp_path: Path) -> None:
    from xpu_profiler.terminal.summary import render

    s = summarize(eager_trace(tmp_path / "t.json", "Evil\x1b[2JUnit", 5))
    text = render(s)
    assert "Layers [decode]: 5 per step, from decoder-layer module frames; 1 step(s)" in text
    assert "Evil\\x1b[2JUnit x5" in text and "\x1b" not in text
    assert re.search(r"attention/dense +5 +40\.00 us", text) and "every layer within 2% of the mean" in text
    kernels = HEAD + [k for _ in range(12) for k in layer(DENSE_MLP)] + TAIL
    text = render(summarize(replay_trace(tmp_path / "r.json", kernels)))
    assert "from the kernel stream's repeating period (inferred), confidence 1.00" in text


def test_the_report_lays_out_layers_and_kinds(tmp_path: Path) -> None:
    from xpu_profiler.exporters.html.page import render
    from xpu_profiler.exporters.html.report import build_report

    kernels = HEAD + [k for i in range(12) for k in layer(MOE_MLP, SLIDING_ATTN if i % 2 else FULL_ATTN)] + TAIL
    report = build_report(summarize(replay_trace(tmp_path / "r.json", kernels)))
    (ph,) = report["layers"]["phases"]
    assert ph["inferred"] and [k["kind"] for k in ph["kinds"]] == ["full/moe", "sliding/moe"]
    per_layer, kinds = (report["figures"][f] for f in ph["figures"])
    assert {t["name"] for t in per_layer["data"]} >= {"moe", "attention", "gemm"}
    assert all(len(t["x"]) == 12 and t["customdata"][1] == "sliding/moe" for t in per_layer["data"])
    assert all(t["x"] == ["full/moe", "sliding/moe"] for t in kinds["data"])
    assert {"id": "layers", "title": "Time by layer"} in report["nav"]
    page = render(build_report(summarize(eager_trace(tmp_path / "e.json", "<b>Evil</b>Unit", 3))))
    assert "Time by layer" in page and "&lt;b&gt;Evil&lt;/b&gt;Unit x3" in page and "<b>Evil" not in page


def test_the_perfetto_trace_has_a_layer_track(tmp_path: Path) -> None:
    from xpu_profiler.exporters import chrome_trace
    from xpu_profiler.exporters.validate import validate_bytes

    prof = load([eager_trace(tmp_path / "e.json", "LlamaDecoderLayer", 4)])
    s = analysis.summarize(prof)
    data = chrome_trace.to_bytes(prof, s)
    assert validate_bytes(data) == []
    ev = json.loads(data)["traceEvents"]
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "layers" in names
    track = next(e["tid"] for e in ev if e["ph"] == "M" and e.get("args", {}).get("name") == "layers")
    slices = sorted((e for e in ev if e["ph"] == "X" and e["tid"] == track), key=lambda e: e["ts"])
    assert [e["name"] for e in slices] == [f"layer {i} · attention/dense" for i in range(4)]
    # each layer from its first kernel's start to its last one's end (10 kernels, 5 us apart)
    assert all(abs(e["dur"] - 49.0) < 1e-6 for e in slices)
    assert all(a["ts"] + a["dur"] <= b["ts"] for a, b in zip(slices, slices[1:]))


def test_diff_compares_one_layer_of_each_kind(tmp_path: Path) -> None:
    from xpu_profiler.diff import compare
    from xpu_profiler.terminal.diff import render

    kernels = HEAD + [k for _ in range(12) for k in layer(MOE_MLP)] + TAIL
    slow = [15.0 if k == "fused_moe_kernel" else 5.0 for k in kernels]  # the expert GEMMs 3x slower
    base = summarize(replay_trace(tmp_path / "a.json", kernels))
    new = summarize(replay_trace(tmp_path / "b.json", kernels, durs=slow))
    report = compare(base, new, "a", "b")
    rows = {r.kind: r for r in report.layers}
    assert set(rows) == {"all layers", "attention/moe"}
    k = rows["attention/moe"]
    # a layer: 13 kernels of 5 us (BASE); NEW adds 2 x 10 us; 8 decode tokens per step
    assert (k.per, k.base_layers, k.new_layers, k.status) == ("token", 12, 12, "changed")
    assert k.base_per_layer_ns == 13 * 5000 / 8 and k.new_per_layer_ns == (13 * 5000 + 20_000) / 8
    assert k.top_change == "moe +2,500.0 ns"
    assert any("inferred from the kernel period" in n for n in report.notes)
    text = render(report)
    assert "Layers by kind" in text and "attention/moe" in text and "+30.8%" in text
    # a run whose windowed layers its kernels name, against one that cannot tell: the mean
    # layer compares, the kinds are each side's own
    named = HEAD + [k for i in range(12) for k in layer(MOE_MLP, SLIDING_ATTN if i % 2 else FULL_ATTN)] + TAIL
    other = compare(base, summarize(replay_trace(tmp_path / "c.json", named)))
    assert {(r.kind, r.status) for r in other.layers} == {
        ("all layers", "unchanged"),
        ("attention/moe", "removed"),
        ("full/moe", "added"),
        ("sliding/moe", "added"),
    }


def test_the_stream_that_runs_attention_is_the_main_one(tmp_path: Path) -> None:
    kernels = HEAD + [k for _ in range(12) for k in layer(DENSE_MLP)] + TAIL
    path = replay_trace(tmp_path / "t.json", kernels)
    doc = json.loads(path.read_text())
    # a communication stream busier than the compute stream, its kernel starting in layer 3
    at = 100 + 6 * (len(HEAD) + 3 * len(layer(DENSE_MLP)) + 2)
    comm = X("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "kernel", at, 5000, pid=0, tid=9, correlation=1, stream=9)
    doc["traceEvents"].append(comm)
    path.write_text(json.dumps(doc))
    (ph,) = summarize(path).layers.phases
    assert (ph.layers, ph.evidence) == (12, "period")
    assert ph.rows[3].fused_ns["communication"] == 5_000_000  # the layer running when it started
    assert ph.layers_ns + ph.head_ns + ph.tail_ns + ph.other_ns == ph.op_time_ns

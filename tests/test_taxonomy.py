"""The fused-op table on names from CUDA, ROCm, vLLM's CPU build and Kunlun, and attribution rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpu_profiler.analysis import analyze
from xpu_profiler.core.errors import XpuProfilerError
from xpu_profiler.knowledge.op_flops import flops_from_shapes
from xpu_profiler.knowledge.taxonomy import FUSED_OPS, Taxonomy, module_class

NAMES = {
    # CUDA / ROCm kernels
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas": "gemm",
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)": "gemm",
    "Cijk_Ailk_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0": "gemm",
    "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>>": "attention",
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, 0>": "kv_cache",
    "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*)": "norm",
    "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>": "norm",
    "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>": "activation",
    "void vllm::rotary_embedding_kernel<c10::BFloat16, true>": "rope",
    "void vllm::moe::topkGatingSoftmax<8, 64, 4, 16>": "moe",
    "fused_moe_kernel": "moe",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)": "communication",
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>": "communication",
    "triton_poi_fused_add_cos_sin_0": "rope",  # Inductor tokens cos+sin: RoPE computed in the kernel
    "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0": "norm",
    "Memcpy HtoD (Pinned -> Device)": "memcpy",
    "Memset (Device)": "memset",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>": "elementwise",
    "void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>": "quantization",
    "void vllm::cutlass_scaled_mm_sm90<...>": "gemm",
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>": "elementwise",
    "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>": "convolution",
    # vLLM CPU build ops
    "_C::onednn_mm": "gemm",
    "_C::weight_packed_linear": "gemm",  # small GEMMs on CPUs with AMX (sgl-kernel)
    "_C::get_scheduler_metadata": "attention",
    "_C::compute_slot_mapping_kernel_impl": "kv_cache",
    "vllm::unified_attention_with_output": "attention",
    "_C::cpu_attention_with_kv_cache": "attention",
    "vllm::unified_kv_cache_update": "kv_cache",
    "_C::cpu_attn_reshape_and_cache": "kv_cache",
    "_C::rotary_embedding": "rope",
    "_C::rms_norm": "norm",
    "_C::silu_and_mul": "activation",
    "_moe_C::topk_softmax": "moe",
    "aten::linear": "gemm",
    "aten::mm": "gemm",
    "aten::embedding": "embedding",
    "aten::silu": "activation",
    "aten::pow": "elementwise",
    "aten::rsqrt": "elementwise",
    "aten::to": "elementwise",
    "aten::slice": "elementwise",
    "aten::topk": "sampling",
    "fbgemm::permute_2D_sparse_data": "elementwise",  # not a GEMM despite the prefix
    "some_unheard_of_kernel": "other",
    # Kunlun
    "xblas_xpu3::fc_cdnn_infer<float16,float16,float16,float16,float,float,float,float,1>": "gemm",
    "kl3_all_reduce<float16>": "communication",
    "kl3_all_reduce_butterfly<float16>": "communication",
}


@pytest.mark.parametrize("name,fused", sorted(NAMES.items()))
def test_classify(name: str, fused: str) -> None:
    got = Taxonomy().classify(name)
    assert (FUSED_OPS[got] if got >= 0 else "other") == fused


def test_module_names() -> None:
    tax = Taxonomy()
    assert module_class("nn.Module: RMSNorm_12") == "RMSNorm"
    assert module_class("xpu_module:SiluAndMul") == "SiluAndMul"
    assert module_class("aten::mm") is None
    cases = {
        "nn.Module: RMSNorm_0": "norm",
        "nn.Module: SiluAndMul_3": "activation",
        "nn.Module: RotaryEmbedding_0": "rope",
        "nn.Module: Llama3RotaryEmbedding_0": "rope",
        "nn.Module: FusedMoE_1": "moe",
        "nn.Module: Attention_4": "attention",
        "nn.Module: QKVParallelLinear_0": "gemm",
        "nn.Module: RowParallelLinear_7": "gemm",
        "nn.Module: VocabParallelEmbedding_0": "embedding",
        "xpu_module:Sampler": "sampling",
    }
    for name, fused in cases.items():
        assert FUSED_OPS[tax.classify_module(name)] == fused, name
    assert tax.classify_module("nn.Module: LlamaDecoderLayer_0") == -1


def write_trace(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def X(name, cat, ts, dur, tid=1, pid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def test_module_ranges_attribute_decomposed_ops(tmp_path: Path) -> None:
    """Native RMSNorm on the CPU build is aten::pow/mean/rsqrt/mul: inside the module they are norm."""
    events = [
        X("execute_context_1(8)_generation_0(0)", "user_annotation", 0, 100),
        X("nn.Module: LlamaDecoderLayer_0", "python_function", 1, 90),
        X("nn.Module: RMSNorm_0", "python_function", 2, 20),
        X("aten::pow", "cpu_op", 3, 4),
        X("aten::mean", "cpu_op", 8, 4),
        X("aten::rsqrt", "cpu_op", 13, 4),
        X("nn.Module: QKVParallelLinear_0", "python_function", 30, 20),
        X("aten::mul", "cpu_op", 31, 2),
        X("_C::onednn_mm", "cpu_op", 34, 10),
        X("aten::mul", "cpu_op", 60, 5),  # outside any mapped module: elementwise
        X("xpu_module:SiluAndMul", "user_annotation", 70, 10),
        X("aten::silu", "cpu_op", 71, 3),
        X("aten::mul", "cpu_op", 75, 3),
    ]
    profile, summary = analyze([write_trace(tmp_path / "t.json", events)])
    by = {f.fused_op: f.time_ns for f in summary.fused_ops}
    assert by == {"norm": 12_000, "gemm": 12_000, "elementwise": 5_000, "activation": 6_000}
    assert summary.totals.steps == 1 and summary.steps.phase == ["prefill"]


def test_launch_chain_decides_kernel_fused_op(tmp_path: Path) -> None:
    """A kernel with an unhelpful name gets the fused op of the vLLM custom op that launched it;
    a kernel with no launching op falls back to its own name (graph replays)."""
    events = [
        X("execute_context_0(0)_generation_4(4)", "user_annotation", 0, 100),
        X("vllm::unified_attention", "cpu_op", 10, 30, **{"External id": 1}),
        X("aten::empty", "cpu_op", 11, 2, **{"External id": 2}),
        X("cudaLaunchKernel", "cuda_runtime", 20, 5, correlation=77, **{"External id": 1}),
        X("void generic_kernel<float>", "kernel", 50, 40, tid=7, pid=0, correlation=77, stream=7, device=0),
        X("void vllm::rms_norm_kernel<float>", "kernel", 95, 10, tid=7, pid=0, correlation=-1),
        X("sm90_xmma_gemm_bf16", "kernel", 200, 10, tid=7, pid=0),  # outside every step
    ]
    profile, summary = analyze([write_trace(tmp_path / "t.json", events)])
    ev = profile.events
    names = profile.strings.lookup(ev["name"])
    fused = {n: FUSED_OPS[f] for n, f in zip(names, ev["fused"].tolist())}
    assert fused["void generic_kernel<float>"] == "attention"
    assert fused["void vllm::rms_norm_kernel<float>"] == "norm"
    assert fused["sm90_xmma_gemm_bf16"] == "gemm"
    step = dict(zip(names, ev["step"].tolist()))
    # launched inside the step (by correlation) although it ran after the launch returned
    assert step["void generic_kernel<float>"] == 0
    assert step["sm90_xmma_gemm_bf16"] == -1
    assert summary.basis == "device"
    assert summary.totals.device_kernel_ns == 60_000
    assert summary.phases[0].phase == "decode"


def test_user_taxonomy_file(tmp_path: Path) -> None:
    toml = tmp_path / "tax.toml"
    toml.write_text(
        '[[pattern]]\nregex = "^my_special_kernel"\nfused_op = "attention"\n'
        '[[module]]\nregex = "^MyNorm$"\nfused_op = "norm"\n'
    )
    tax = Taxonomy.from_file(toml)
    assert FUSED_OPS[tax.classify("my_special_kernel_v2")] == "attention"
    assert FUSED_OPS[tax.classify_module("nn.Module: MyNorm_0")] == "norm"
    assert FUSED_OPS[tax.classify("_C::onednn_mm")] == "gemm"  # built-ins still there
    bad = tmp_path / "bad.toml"
    bad.write_text('[[pattern]]\nregex = "("\nfused_op = "gemm"\n')
    with pytest.raises(XpuProfilerError, match="bad regex"):
        Taxonomy.from_file(bad)


def test_gemm_flops_from_recorded_shapes() -> None:
    """FLOPs of the vLLM CPU GEMM ops from their Input Dims: out [M, N] first, x [M, K]."""
    assert flops_from_shapes("_C::weight_packed_linear", [[7, 96], [7, 64], [96, 64], [], []]) == 2 * 7 * 96 * 64
    assert flops_from_shapes("_C::onednn_mm", [[3, 5, 8], [3, 5, 4], [], [8]]) == 2 * 15 * 4 * 8
    assert flops_from_shapes("aten::addmm", [[8], [5, 4], [4, 8]]) == 2 * 5 * 4 * 8
    assert flops_from_shapes("_C::weight_packed_linear", [[7, 96], [6, 64]]) is None  # rows disagree
    assert flops_from_shapes("_C::rms_norm", [[7, 96], [96]]) is None


def test_the_built_in_taxonomy_is_one_and_its_memo_is_bounded(monkeypatch):
    from xpu_profiler.knowledge import taxonomy as tx

    assert tx.default() is tx.default()  # compiled once per process
    t = tx.Taxonomy()
    names = [f"ncclDevKernel_AllReduce_Sum_f32_RING_LL_{i}" for i in range(50)] + [f"my_op_{i}" for i in range(50)]
    expected = [t.classify(n) for n in names]
    monkeypatch.setattr(tx, "MEMO_NAMES", 16)
    small = tx.Taxonomy()
    assert [small.classify(n) for n in names] == expected  # the same decisions, remembered or not
    assert len(small._cache) <= 16
    assert expected[0] == FUSED_OPS.index("communication") and expected[-1] == -1

"""The family tables: every row well formed, with a source, and decided by a name of this file or
of the golden sets; heads strip template arguments and argument lists; a word inside template
arguments never decides a family.

Adding a family: a row in its vendor's table (``xpu_profiler/knowledge/families/<vendor>.py``)
and a name in ``EXAMPLES`` below (``test_every_row_decides_a_name`` fails until it has one).
"""

from __future__ import annotations

import re

import pytest
from test_kunlun_taxonomy import EXPECTED as KUNLUN_NAMES
from test_taxonomy import NAMES as TAXONOMY_NAMES
from test_taxonomy_families import GOLDEN, real_names

from xpu_profiler.knowledge.collective_kinds import KIND_NAMES
from xpu_profiler.knowledge.families import ROLES, Family, tables
from xpu_profiler.knowledge.families.triton import INDUCTOR, inductor_ops
from xpu_profiler.knowledge.fused_ops import FUSED_OPS
from xpu_profiler.knowledge.kernel_heads import heads
from xpu_profiler.knowledge.taxonomy import Taxonomy, collective_kind

#: name → (fused op, MoE role) for the rows the golden sets leave out, as the libraries name them
EXAMPLES: dict[str, tuple[str, str]] = {
    # IBM AIU (other-formats/aiu-allreduce-tp4-begin-end.json)
    "add_11 Cmpt Exec": ("elementwise", ""),
    "SenRdmaReceive_82239 [524288B] [sync=AllReduce_all_reduce_4_s3_r0x7_6] DmaI": ("communication", ""),
    # NVIDIA
    # nvFuser's matmul scheduler (NVIDIA/Fuser csrc/scheduler/matmul.cpp), as its kernels are named
    "<unnamed>::nvfuser_matmul_f0_c1_r0_g0(<unnamed>::Tensor<__bfloat, (int)2, (int)2>)": ("gemm", ""),
    "void pplx::dispatchKernel<16u, 1u, false>(int*, float*, unsigned long)": ("communication", ""),
    "void nvshmemi_alltoall_threadgroup_kernel<int>(nvshmem_team_t, int*, int const*, unsigned long)": (
        "communication",
        "",
    ),
    "void moe::dev::activation::activationKernel<moe::dev::activation::KernelParams<__nv_bfloat16> >(moe::dev::activation::KernelParams<__nv_bfloat16>)": (
        "moe",
        "",
    ),
    "gemm_Bfloat16_E4m3E4m3_Fp32_t128x8x512u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_sm100a": (
        "gemm",
        "",
    ),
    "void tensorrt_llm::kernels::doActivationKernel<__nv_bfloat16, __nv_bfloat16, true>(__nv_bfloat16*, float const*)": (
        "moe",
        "",
    ),
    "void deep_gemm::sm90_fp8_mqa_logits<128u, 64u, 4u>(unsigned int, float*, int*)": ("attention", ""),
    "void flashinfer::AppendPagedKVCacheKernel<128u, 8u, __nv_bfloat16, int>(flashinfer::paged_kv_t<__nv_bfloat16, int>)": (
        "kv_cache",
        "",
    ),
    "void flashinfer::RopeQuantizeAppendPagedKVCacheKernel<false, 128u, 8u, __nv_bfloat16>(__nv_bfloat16*)": (
        "kv_cache",
        "",
    ),
    "void moe::dev::routing::routingDeepSeek::routingMainKernel<moe::dev::routing::routingDeepSeek::KernelParams<float> >(moe::dev::routing::routingDeepSeek::KernelParams<float>)": (
        "moe",
        "open",
    ),
    # B300 runs the expert GEMMs as trtllm-gen batched GEMMs; without dynBatch only the MoE
    # block says they are experts (tests/test_structure.py)
    "bmm_Bfloat16_E2m1E2m1_Fp32_t128x8x256u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_TN_transOut_schedS_sm100f": (
        "gemm",
        "",
    ),
    # AMD
    "mscclKernel_Sum_half_LL(ncclDevComm*, mscclAlgo*, mscclWork*)": ("communication", ""),
    "void mori::moe::EpDispatchIntraNodeKernel<__hip_bfloat16>(mori::moe::EpDispatchCombineArgs<__hip_bfloat16>)": (
        "communication",
        "",
    ),
    "void aiter::rope_cached_positions_fwd_kernel<__hip_bfloat16>(__hip_bfloat16*, float const*)": ("rope", ""),
    # PyTorch
    "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>(long const*, float const*)": (
        "embedding",
        "",
    ),
    "void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<1, float, int>(at::GenericPackedTensorAccessor<float const, 4ul>)": (
        "convolution",
        "",
    ),
    "aten::layer_norm": ("norm", ""),
    "aten::convolution": ("convolution", ""),
    # Intel XPU
    "void gpu::xetla::fmha::FmhaForwardKernel<gpu::xetla::fmha::fmha_policy_8x128x128, sycl::half>(sycl::nd_item<3>)": (
        "attention",
        "",
    ),
    "gpu::xetla::hgemm_caller<sycl::half, 256, 256, 32>": ("gemm", ""),
    "at::native::xpu::LayerNormForwardKernelFunctor<c10::BFloat16, float>": ("norm", ""),
    "at::native::xpu::VectorizedElementwiseKernel<4, at::native::xpu::AddFunctor<float>, at::detail::Array<char*, 3> >": (
        "elementwise",
        "",
    ),
    # Inductor
    "triton_tem_fused_addmm_0": ("gemm", ""),
    "triton_tem_fused_convolution_0": ("convolution", ""),
    "triton_tem_fused_flex_attention_0": ("attention", ""),
    "triton_per_fused_add_native_layer_norm_0": ("norm", ""),
    "triton_red_fused_add_rsqrt_var_mean_0": ("norm", ""),
    # roles the MoE block rule reads
    "_topk_forward": ("moe", "open"),
    "void ck_tile::kentry<2, ck_tile::MoeSortingKernel<ck_tile::MoeSortingProblemEx<int, float, 2, true> > >(ck_tile::MoeSortingKernel<>::Kargs)": (
        "moe",
        "open",
    ),
    "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true> >(moe::dev::finalize::KernelParams<>)": (
        "moe",
        "close",
    ),
    "fused_moe_kernel": ("moe", "expert"),
    "_moe_sum_reduce_kernel": ("moe", "close"),
    "moe_fc": ("moe", "expert"),
    "moe_softmax_topk_norm": ("moe", "open"),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples(name: str) -> None:
    tax = Taxonomy()
    fused, role = EXAMPLES[name]
    got = tax.classify(name)
    assert (FUSED_OPS[got] if got >= 0 else "other", ROLES[tax.role(name)]) == (fused, role), tax.explain(name)


def test_rows_are_well_formed() -> None:
    for vendor, rows in tables():
        assert rows, vendor
        for r in rows:
            assert isinstance(r, Family) and r.source.strip(), (vendor, r.regex)
            assert r.fused_op in FUSED_OPS and r.role in ROLES and r.on in ("head", "name"), (vendor, r)
            assert not r.collective or (r.fused_op == "communication" and r.collective in KIND_NAMES), (vendor, r)
            assert not r.role or r.fused_op == "moe", (vendor, r)
            re.compile(r.regex)
            re.compile(r.args)
    for rule in INDUCTOR:
        assert rule.fused_op in FUSED_OPS and rule.fused_op not in ("communication",), rule


def test_every_row_decides_a_name() -> None:
    """Each row (and each Inductor token rule) is the deciding row of at least one name of
    this file or of the golden sets: a row without a name that needs it is dead or shadowed."""
    tax = Taxonomy()
    names = [*EXAMPLES, *GOLDEN, *TAXONOMY_NAMES, *KUNLUN_NAMES, *(n for _, _, n in real_names())]
    used = {id(tax.explain(n)) for n in names}
    dead = [(vendor, r.regex[:80]) for vendor, rows in tables() for r in rows if id(r) not in used]
    dead += [("inductor", r.fused_op, sorted(r.all_of | r.any_of)) for r in INDUCTOR if id(r) not in used]
    assert dead == []


HEADS = {
    "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, int)": (
        "vllm::fused_add_rms_norm_kernel",
        "vllm::fused_add_rms_norm_kernel",
    ),
    "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)": (
        "vllm::fused_add_rms_norm_kernel",
        "vllm::fused_add_rms_norm_kernel",
    ),
    "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1> > > > > >(Params)": (
        "flash::FlashAttnFwdSm90",
        "cutlass::device_kernel",
    ),
    "_ZN7ck_tile6kentryILi1ENS_16MoeSortingKernelINS_17MoeSortingProblemIifLi4ELb1ELb0EEEEEEEvNT0_5KargsE": (
        "ck_tile::MoeSortingKernel",
        "ck_tile::kentry",
    ),
    "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib": (
        "aiter::add_rmsnorm_quant_kernel",
        "aiter::add_rmsnorm_quant_kernel",
    ),
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}> >(int, at::native::gpu_kernel_impl<>)": (
        "at::native::direct_copy_kernel_cuda",
        "at::native::elementwise_kernel",
    ),
    "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long)": (
        "multimem_all_reduce_kernel",
        "multimem_all_reduce_kernel",
    ),
    "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT": (
        "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT",
        "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT",
    ),
    "add_11 Cmpt Exec": ("add_11 Cmpt Exec", "add_11 Cmpt Exec"),
}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_heads(name: str) -> None:
    assert heads(name) == HEADS[name]


def test_template_arguments_are_not_families() -> None:
    """The CUDA vector type int4 in a parameter list is no INT4 quantization, a KV-cache dtype
    enum in an attention kernel's template no KV write, an Inductor kernel that feeds vLLM's
    all_reduce op no collective (it masks the vocab-parallel embedding)."""
    tax = Taxonomy()
    cases = {
        "void dpsk::ep::internode::dispatch<false, 8, false, 8>(int4*, float*, long*, float*, int4 const*)": "communication",
        "void cuda::reduce_fused_impl<__nv_bfloat16, false, false>(int4 const*, float const*, int const*, int4*, int)": "other",
        "void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)1, 16>(__hip_bfloat16 const*)": "attention",
        "triton_poi_fused_add_all_reduce_bitwise_and_bitwise_or_embedding_ge_lt_masked_fill_mul_sub_0": "embedding",
        "triton_poi_fused_add_all_reduce_mul_0": "elementwise",
        "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>(dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel::Params)": "gemm",
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)": "gemm",
    }
    for name, fused in cases.items():
        got = tax.classify(name)
        assert (FUSED_OPS[got] if got >= 0 else "other") == fused, (name, tax.explain(name))


def test_inductor_op_tokens() -> None:
    assert inductor_ops("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0") == (
        "red",
        frozenset({"_to_copy", "add", "mean", "mul", "pow", "rsqrt"}),
    )
    assert inductor_ops("triton_poi_fused_constant_pad_nd_moe_forward_0") == (
        "poi",
        frozenset({"constant_pad_nd", "moe_forward"}),
    )
    assert inductor_ops("fused_moe_kernel") is None


def test_quantized_gemms_are_gemms_and_casts_are_quantization() -> None:
    """FP8 / MXFP4 / INT8 GEMMs are GEMMs (MoE when they run experts); quantization holds the
    cast and quantize kernels only."""
    tax = Taxonomy()
    gemms = [
        "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_dptp128c_acc::GemmKernel>(Params)",
        "_ZN5aiter41I8gemm_bf16_perTokenI8_BpreShuffle_16x128E",
        "_ZN5aiter41f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128E",
        "void vllm::cutlass_scaled_mm_sm90<cutlass::float_e4m3_t>(Params)",
        "sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    ]
    experts = [
        "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu",
        "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_swiGlu_dynBatch_sm100f",
        "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel>(Params)",
    ]
    casts = [
        "void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128, false, 128, false>(__nv_bfloat16 const*)",
        "void cuda::cast_back_impl<__nv_fp8x2_e4m3>(void const*, void*, float const*, int, int, int, int)",
        "void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*)",
        "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, __nv_bfloat16, 32, true>(int)",
    ]
    assert {FUSED_OPS[tax.classify(n)] for n in gemms} == {"gemm"}
    assert {FUSED_OPS[tax.classify(n)] for n in experts} == {"moe"}
    assert {FUSED_OPS[tax.classify(n)] for n in casts} == {"quantization"}


def test_fused_rope_and_kv_store_is_kv_cache_on_every_vendor() -> None:
    """RoPE fused with the KV-cache write lands in kv_cache on every vendor (docs/attribution.md
    says why): aiter's Triton kernel (MI300), FlashInfer's and vLLM's CUDA kernels, TRT-LLM's,
    Kunlun's insert."""
    tax = Taxonomy()
    names = [
        "_fused_qk_rope_reshape_and_cache_kernel",
        "void flashinfer::RopeQuantizeAppendPagedKVCacheKernel<false, 128u, 8u, __nv_bfloat16>(__nv_bfloat16*)",
        "void vllm::concat_and_cache_mla_rope_fused_kernel<__nv_bfloat16>(long const*)",
        "void tensorrt_llm::kernels::applyBiasRopeUpdateKVCacheV2<__nv_bfloat16, 128, true>(Params)",
        "void aiter::fuse_qk_rope_concat_and_cache_mla_kernel<__hip_bfloat16>(__hip_bfloat16 const*)",
        "qkv_cache_insert",
    ]
    assert {n: FUSED_OPS[tax.classify(n)] for n in names} == dict.fromkeys(names, "kv_cache")


def test_expert_parallel_communication_is_all_to_all() -> None:
    names = [
        "void dpsk::ep::internode::dispatch<false, 8, false, 8>(int4*, float*)",
        "void dpsk::ep::internode::cached_notify<false>(int, int)",
        "void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*, int*)",
        "void deep_ep::internode_ll::combine<false, 7168>(void*, float*)",
        "void pplx::dispatchKernel<16u, 1u, false>(int*, float*, unsigned long)",
        "void nvshmemi_alltoall_threadgroup_kernel<int>(nvshmem_team_t, int*)",
        "void mori::moe::EpDispatchIntraNodeKernel<__hip_bfloat16>(Args)",
        "ncclDevKernel_AllToAll_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    ]
    tax = Taxonomy()
    for n in names:
        assert FUSED_OPS[tax.classify(n)] == "communication", n
        assert KIND_NAMES[collective_kind(n)] == "all_to_all", n

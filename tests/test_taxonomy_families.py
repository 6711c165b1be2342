"""Golden table: real kernel and op names → fused op, structure before epilogue and dtype.

Names come from the libraries that launch them, spelled as profilers record them:
triton_kernels (the gpt-oss MoE path: `matmul_ogs` with fused SwiGLU and mxfp4 weights,
bitmatrix routing), vLLM's Triton kernels (function names of vLLM 0.32) and CUDA/HIP
kernels, AITER's assembly kernels (symbols from its `hsa/*/*.csv` tables) and HIP
kernels, Composable Kernel, FlashInfer, FlashAttention, CUTLASS, cuBLAS/hipBLASLt,
DeepGEMM, Marlin, SGLang and vllm-kunlun; plus every kernel and op name of the shared
real traces (`tests/data/real_trace_names.tsv`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import real_data

from xpu_profiler.knowledge.taxonomy import FUSED_OPS, Taxonomy

DATA = Path(__file__).resolve().parent / "data"

GOLDEN: dict[str, str] = {
    # --- triton_kernels: gpt-oss MoE (matmul_ogs repr: _matmul_ogs_{layouts}_{Y}x{X}x{W}_{blocks}[_act])
    "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu": "moe",
    "_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu": "moe",
    "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1": "moe",
    "_p_matmul_ogs_NNT_bf16xbf16xmxfp4_64x256x128x1": "moe",
    "_matmul_ogs_NNT_bf16xfp8e4nvxmxfp4_128x256x128x1_swiglu": "moe",
    "_matmul_ogs_NTN_fp32xbf16xbf16_64x128x64x1": "moe",
    "_matmul_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu": "moe",  # newer triton_kernels `matmul`
    "_p_matmul_NNT_bf16xbf16xmxfp4_128x256x128x1": "moe",
    "_finalize_matmul": "moe",
    "_reduce_grouped": "moe",
    "_compute_writeback_idx": "moe",
    "_topk_forward": "moe",
    "_sum_bitmatrix_rows": "moe",
    "_sum_bitmatrix_memset": "moe",
    "_combined_routing_compute": "moe",
    "_combined_routing_memset": "moe",
    "_routing_clear_bitmatrix": "moe",
    "_expt_data_compute": "moe",
    "_expt_data_memset": "moe",
    "pack_bitmatrix": "moe",
    "_masked_topk_sum_kernel": "moe",  # vLLM's gpt-oss glue
    "_swiglu_bf16xbf16_32x256": "activation",  # the stand-alone SwiGLU, not a GEMM
    "_downcast_to_mxfp": "quantization",
    "_upcast_from_mxfp": "quantization",
    # --- vLLM Triton kernels (vLLM 0.32) -----------------------------------------------
    "fused_moe_kernel": "moe",
    "fused_moe_kernel_gptq_awq": "moe",
    "fused_moe_nvfp4_emulation_kernel": "moe",
    "_fused_moe_lora_kernel": "moe",
    "_fused_moe_lora_kernel_fp8": "moe",
    "moe_fused_mul_sum_kernel": "moe",
    "_fwd_kernel_ep_scatter_1": "moe",
    "_fwd_kernel_ep_scatter_2": "moe",
    "_fwd_kernel_ep_gather": "moe",
    "_count_expert_num_tokens": "moe",
    "_mxfp8_grouped_gemm_kernel": "moe",
    "_gemma4_routing_kernel": "moe",
    "_rocm_fp32_router_gemm_kernel": "moe",
    "_prepare_megamoe_inputs_kernel": "moe",
    "kernel_unified_attention_2d": "attention",
    "kernel_unified_attention_3d": "attention",
    "kernel_unified_attention": "attention",
    "reduce_segments": "attention",
    "kernel_paged_attention_2d": "attention",
    "merge_attn_states_kernel": "attention",
    "_fwd_kernel": "attention",
    "_fwd_kernel_alibi": "attention",
    "_fwd_kernel_stage1": "attention",
    "_fwd_kernel_stage2": "attention",
    "_fwd_grouped_kernel_stage1": "attention",
    "_linear_attn_decode_kernel": "attention",
    "_segmented_attention_stage": "attention",
    "_sparse_attn_decode_partial_kernel": "attention",
    "_deepencoder_rel_pos_attention_kernel": "attention",
    "_chunk_scan_fwd_kernel": "attention",
    "_chunk_state_fwd_kernel": "attention",
    "_state_passing_fwd_kernel": "attention",
    "_bmm_chunk_fwd_kernel": "attention",
    "_selective_scan_update_kernel": "attention",
    "chunk_gated_delta_rule_fwd_kernel_h_blockdim64": "attention",
    "fused_recurrent_gated_delta_rule_fwd_kernel": "attention",
    "fused_sigmoid_gating_delta_rule_update_kernel": "attention",
    "reshape_and_cache_kernel_flash": "kv_cache",
    "reshape_and_cache_kernel_flash_diffkv": "kv_cache",
    "_reshape_cache_per_token_head": "kv_cache",
    "_swap_blocks_kernel": "kv_cache",
    "kv_cache_gather_kernel": "kv_cache",
    "kv_cache_scatter_kernel": "kv_cache",
    "_zero_kv_blocks_kernel": "kv_cache",
    "quantize_and_insert_k_kernel": "kv_cache",
    "_quantize_and_insert_k_mxfp8_kernel": "kv_cache",
    "_triton_mrope_forward": "rope",
    "_triton_bailing_mrope_forward": "rope",
    "_packed_qk_rope_kernel": "rope",
    "_prepare_rope_positions_kernel": "rope",
    "_rms_norm_kernel": "norm",
    "_rmsnorm_fwd_kernel": "norm",
    "_add_rmsnorm_fwd_kernel": "norm",
    "_layer_norm_fwd_1pass_kernel": "norm",
    "layer_norm_gated_fwd_kernel": "norm",
    "l2norm_fwd_kernel": "norm",
    "_gemma_rmsnorm_kernel": "norm",
    "_gemma_fused_add_rmsnorm_kernel": "norm",
    "_grouped_gemma_rmsnorm_kernel": "norm",  # "gemma", not a grouped GEMM
    "_causal_conv1d_fwd_kernel": "convolution",
    "_causal_conv1d_update_kernel": "convolution",
    "_w8a8_triton_block_scaled_mm": "gemm",
    "scaled_mm_kernel": "gemm",
    "triton_w4a16_gemm_kernel": "gemm",
    "_triton_w4a16_skinny_fmt_kernel": "gemm",
    "awq_gemm_kernel": "gemm",
    "matmul_kernel_persistent": "gemm",
    "matmul_kernel_descriptor_persistent": "gemm",
    "bmm_kernel": "gemm",
    "_lora_shrink_kernel": "gemm",
    "_lora_expand_kernel": "gemm",
    "_lora_shrink_kernel_fp8": "gemm",
    "_gumbel_sample_kernel": "sampling",
    "_penalties_kernel": "sampling",
    "_min_p_kernel": "sampling",
    "_temperature_kernel": "sampling",
    "_bad_words_kernel": "sampling",
    "_apply_prompt_embeds_kernel": "embedding",
    "_lookup_ple_embedding_from_pinned_kernel": "embedding",
    "_silu_and_mul_triton_kernel": "activation",
    "_swiglustep_and_mul_kernel": "activation",
    "_swiglu_oai_kernel": "activation",
    "_swiglu_oai_quant_kernel": "activation",
    "_silu_mul_fp8_quant_deep_gemm": "activation",
    "_silu_mul_per_token_group_quant_fp8_colmajor": "activation",
    "_silu_mul_quant_fp8_packed_kernel": "activation",
    "_relu_squared_static_fp8_quant_kernel": "activation",
    "_per_token_group_quant_fp8": "quantization",
    "_per_token_group_quant_fp8_colmajor": "quantization",
    "_per_token_group_quant_int8": "quantization",
    "_per_token_quant_int8": "quantization",
    "_dequantize_nvfp4_kernel": "quantization",
    "_nvfp4_quant_dequant_kernel": "quantization",
    "_quantize_pad_fp8_kernel": "quantization",
    "awq_dequantize_kernel": "quantization",
    "_dcp_a2a_pack_send_kernel": "communication",
    # --- vLLM CUDA / HIP kernels (csrc) ------------------------------------------------
    "void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)": "moe",
    "void vllm::moe::moeSoftmax<256>(float const*, bool const*, float*, int)": "moe",
    "void vllm::moe::moeTopK<256, int>(float const*, bool const*, float*, int*, int*, int, int, int, int)": "moe",
    "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)": "moe",
    "void vllm::moe::count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, unsigned long)": "moe",
    "void vllm::moe::moe_sum_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)": "moe",
    "void vllm::moe::grouped_topk_fused_kernel<float>(float*, float*, int*, float const*, int, int, int, int, int, double)": "moe",
    "void expandInputRowsKernel<__nv_bfloat16, true>(__nv_bfloat16 const*, __nv_bfloat16*, int const*, int*, long, long const*, long, long)": "moe",
    "void finalizeMoeRoutingKernel<__nv_bfloat16, __nv_bfloat16, true>(__nv_bfloat16 const*, __nv_bfloat16*, float const*, int const*, int const*, long, long, long const*)": "moe",
    "void vllm::shuffleInputRowsKernel<__nv_bfloat16>(__nv_bfloat16 const*, int const*, __nv_bfloat16*, long, long)": "moe",
    "void marlin_moe_wna16::Marlin<__nv_bfloat16, 4, 8, 8, 4, 256, 1, 4, false, true, false, 0>(int4 const*, int4 const*, int4*, int4*, int4 const*)": "moe",
    "void cutlass::device_kernel<vllm::enable_sm90_only<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<> > > >(cutlass::gemm::kernel::GemmUniversal<>::Params)": "moe",
    "void (anonymous namespace)::__get_group_gemm_starts<cutlass::float_e4m3_t, cutlass::bfloat16_t, float>(long*, cutlass::float_e4m3_t**, cutlass::float_e4m3_t**)": "moe",
    "void vllm::compute_expert_offsets(int const*, int*, int*, int)": "moe",
    "void marlin::Marlin<__nv_bfloat16, 4, 8, 8, 4, 256, 1, 4, false, true, 0>(int4 const*, int4 const*, int4*, int4*, int4 const*)": "gemm",
    "void cutlass::device_kernel<vllm::enable_sm90_or_later<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8FastAccum>, cute::tuple<cute::C<64>, cute::C<128>, cute::C<128> >, cutlass::float_e4m3_t> > > >(Params)": "gemm",
    "void cutlass::device_kernel<machete::MacheteKernelTemplate<cutlass::bfloat16_t, vllm::uint4b8_t> >(Params)": "gemm",
    "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)": "activation",
    "void vllm::act_and_mul_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn, &vllm::silu_kernel<float>>(c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, int)": "activation",
    "void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, long)": "quantization",
    "void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, float*, c10::BFloat16 const*, float const*, int)": "quantization",
    "void vllm::per_token_group_quant_8bit_kernel<c10::BFloat16, c10::Float8_e4m3fn, false, true>(c10::BFloat16 const*, void*, float*, int, int, int, float, float, float)": "quantization",
    "void vllm::dynamic_scaled_int8_quant_kernel<c10::BFloat16, float>(c10::BFloat16 const*, signed char*, float*, int)": "quantization",
    "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)": "norm",
    "void vllm::rms_norm_static_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float, int, int)": "norm",
    "void vllm::fused_add_rms_norm_static_fp8_quant_kernel<c10::BFloat16, 8, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, c10::BFloat16 const*, c10::BFloat16*, c10::BFloat16 const*, float const*, float, int, int)": "norm",
    "void vllm::rms_norm_dynamic_per_token_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn, false>(c10::Float8_e4m3fn*, float*, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float, int, c10::BFloat16*)": "norm",
    "void vllm::paged_attention_v1_kernel<c10::BFloat16, c10::BFloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false>(c10::BFloat16*, c10::BFloat16 const*)": "attention",
    "void vllm::paged_attention_v2_kernel<c10::BFloat16, c10::BFloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)1, false, 512>(float*, float*, c10::BFloat16*)": "attention",
    "void vllm::paged_attention_v2_reduce_kernel<c10::BFloat16, 128, 128, 512>(c10::BFloat16*, float const*, float const*, c10::BFloat16 const*, int const*, int)": "attention",
    "void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)1, 16, 128, 256, true, 4>(__hip_bfloat16 const*)": "attention",
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>(__nv_bfloat16 const*, __nv_bfloat16 const*, unsigned char*, unsigned char*, long const*)": "kv_cache",
    "void vllm::concat_and_cache_mla_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, long const*)": "kv_cache",
    "void vllm::copy_blocks_kernel<c10::BFloat16>(long*, long*, long const*, int)": "kv_cache",
    "void vllm::batched_rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, long const*, int, long, long, long, int, int, int)": "rope",
    "void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)": "communication",
    "wvSplitK_hf_sml_": "gemm",
    "wvSplitKQ_hf_": "gemm",
    "LLMM1": "gemm",
    # --- FlashAttention, FlashInfer, DeepGEMM, cuBLAS, CUTLASS -------------------------------
    "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)": "attention",
    "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, 4, 6, true>(flash::Flash_fwd_params)": "attention",
    "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<176>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false> > > >(Params)": "attention",
    "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 1u, 4u, 8u, 8u, 1u, 4u, (flashinfer::PosEncodingMode)0, __nv_bfloat16> >(Params)": "attention",
    "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, flashinfer::DefaultAttention<false, false, false, false>, Params>(Params)": "attention",
    "void flashinfer::PersistentVariableLengthMergeStatesKernel<8u, 16u, 8u, 4u, __nv_bfloat16, __nv_bfloat16, int>(__nv_bfloat16*, float*, int*, unsigned int, unsigned int*, __nv_bfloat16*, float*, unsigned int, unsigned int)": "attention",
    "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, unsigned int, float, float)": "norm",
    "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)": "norm",
    "void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::BlockScanAlgorithm)0, (cub::BlockReduceAlgorithm)2, 4u, true, float, int>(float*, int*, float*, int*, float*, unsigned int, unsigned long, unsigned long)": "sampling",
    "void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &silu>(__nv_bfloat16*, __nv_bfloat16 const*, int)": "activation",
    "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<false, 128u, 8u, 16u, __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*, long*)": "rope",
    "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8, 4, true>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)": "communication",
    "void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, 7168u, 4096u, 1u, 128u, 128u, 128u, 1u, 4u, 1u, 128u, 128u, 1u, false, (deep_gemm::GemmType)0, cutlass::bfloat16_t>(float*, int*, unsigned int, unsigned int, unsigned int)": "gemm",
    "void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, 4096u, 7168u, 8u, 128u, 128u, 128u, 1u, 4u, 1u, 128u, 128u, 1u, false, (deep_gemm::GemmType)1, cutlass::bfloat16_t>(float*, int*, unsigned int, unsigned int, unsigned int)": "moe",
    "void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 128u, 128u, 8u, 5u, 128u, 1u, false, (deep_gemm::GemmType)2>(__nv_bfloat16*, float*, int*, unsigned int, CUtensorMap, CUtensorMap)": "moe",
    "void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 128u, 128u, 1u, 5u, 128u, 1u, false, (deep_gemm::GemmType)0>(__nv_bfloat16*, float*, int*, unsigned int, CUtensorMap, CUtensorMap)": "gemm",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas": "gemm",
    "nvjet_tst_128x64_64x8_2x1_v_bz_coopA_TNT": "gemm",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)": "gemm",
    "void cublasLt::splitKreduce_kernel<32, 16, int, __nv_bfloat16, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, __nv_bfloat16 const*)": "gemm",
    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)": "communication",
    "void deep_ep::internode_ll::dispatch<false, false, 7168>(void*, float*, int*, long*, void*, int*, void*)": "communication",
    # --- AITER assembly kernels (symbols of hsa/gfx9*/**/*.csv) and HIP kernels ---------------
    "_ZN5aiter40fmoe_bf16_blockscaleFp8_g1u1_gelu_64x128E": "moe",
    "_ZN5aiter46fmoe_bf16_pertokenInt8_g1u1_vs_silu_1tg_32x320E": "moe",
    "_ZN5aiter48fmoe_bf16_pertokenFp8_g1u1_vs_gelu_1tg_ps_32x192E": "moe",
    "_ZN5aiter49fmoe_fp16_pertokenMXfp4_g1u1_novs_silu_2tg_32x256E": "moe",
    "_ZN5aiter55fmoe_bf16_a16_blockscaleFp8_g1u1_vs_silu_1tg_16x128_pf3E": "moe",
    "_ZN5aiter43fmoe_stage1_bf16_pertokenFp8_g1u1_96x64_pf3E": "moe",
    "_ZN5aiter54fmoe_stage1_bf16_pertokenFp8_doweight_g1u1_144x128_pf2E": "moe",
    "_ZN5aiter19topksoftmax_4x128x4E": "moe",
    "_ZN5aiter24topksoftmax_4x256x8_bf16E": "moe",
    "_ZN5aiter24bf16gemm_bf16_tn_256x256E": "gemm",
    "_ZN5aiter43bf16gemm_fp32bf16_tn_160x64_bshuffle_splitkE": "gemm",
    "_ZN5aiter41f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128E": "gemm",
    "_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_32x128E": "gemm",
    "_ZN5aiter41I8gemm_bf16_perTokenI8_BpreShuffle_16x128E": "gemm",
    "_ZN5aiter47f8gemm_bf16_mxfp8fp4_ABpreShuffle_64x512_4x1_psE": "gemm",
    "_ZN5aiter18fmha_fwd_hd128_fp8E": "attention",
    "_ZN5aiter28fmha_fwd_hd128_mxfp4_gfx950E": "attention",
    "_ZN5aiter36fmha_bf16_pertokenBf16_hd128_128x256E": "attention",
    "_ZN5aiter22fmha_bwd_hd64_fp16_a16E": "attention",
    "_ZN5aiter31mla_a8w8_qh128_m32x4_n16x2_msk0E": "attention",
    "_ZN5aiter42mla_dec_stage1_bf16_a16w16_subQ16_mqa16_psE": "attention",
    "_ZN5aiter35mla_a8w8_qh16_1tg_16mx4_64nx1_sparseE": "attention",
    "_ZN5aiter27pa_bf16_noquant_gqa8_1tg_4wE": "attention",  # "noquant": a paged attention
    "_ZN5aiter42PA_A16W8_BLK1024_1TG_4W_64mx1_64nx4_MTP_PSE": "attention",
    "_ZN5aiter36pa_decode_bf16_d64_page256_gqa8_tq16E": "attention",
    "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib": "norm",
    "void aiter::rmsnorm_quant_opus<__hip_bfloat16, 256>(__hip_bfloat16*, float*)": "norm",
    "void aiter::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, unsigned long, int*)": "moe",
    "void aiter::moe_fused_gate_kernel<float, 256>(float*, float*, float*, int*)": "moe",
    "void aiter::topk_gating_kernel_opt<__hip_bfloat16, 8>(__hip_bfloat16 const*, float*, int*)": "moe",
    "void aiter::mxfp4_moe_sort_kernel<256>(int const*, int*, unsigned char*)": "moe",
    "void aiter::fused_mx_quant_moe_sort_kernel<__hip_bfloat16>(__hip_bfloat16 const*, unsigned char*)": "moe",
    "void aiter::moe_sum_kernel<__hip_bfloat16, 8>(__hip_bfloat16*, __hip_bfloat16 const*, int)": "moe",
    "void aiter::pa_prefill_16mx8_32nx1_kernel<__hip_bfloat16>(__hip_bfloat16*)": "attention",
    "void aiter::gqa_d128_kernel<__hip_bfloat16>(__hip_bfloat16*)": "attention",
    "void aiter::mla_decode_fwd_16mx8_32nx1_fp8fp8_opus_kernel<256>(float*)": "attention",
    "void aiter::kn_mla_reduce_v1_d64<__hip_bfloat16>(__hip_bfloat16*)": "attention",
    "void aiter::gemm_a8w8_scale_kernel<__hip_bfloat16, 256>(signed char const*, signed char const*)": "gemm",
    "void aiter::gemm_a16w16_kernel<__hip_bfloat16, 256>(__hip_bfloat16 const*)": "gemm",
    "void aiter::swiglu_act_and_mul_kernel<__hip_bfloat16>(__hip_bfloat16*, __hip_bfloat16 const*, int)": "activation",
    "void aiter::act_and_mul_quant_kernel<__hip_bfloat16, unsigned char>(unsigned char*, __hip_bfloat16 const*)": "activation",
    "void aiter::smooth_per_token_scaled_quant_kernel<__hip_bfloat16, signed char>(signed char*, float*)": "quantization",
    "void aiter::static_fp8_quant_perhead_kernel<__hip_bfloat16>(unsigned char*, __hip_bfloat16 const*)": "quantization",
    "void aiter::hadamard_rotate_activation_mxfp4_quant_kernel<__hip_bfloat16>(unsigned char*)": "quantization",
    "void aiter::reshape_and_cache_with_per_token_quant_kernel<__hip_bfloat16, unsigned char>(__hip_bfloat16 const*)": "kv_cache",
    "void aiter::indexer_k_quant_and_cache_kernel<__hip_bfloat16>(__hip_bfloat16 const*)": "kv_cache",
    "void aiter::fuse_qk_rope_concat_and_cache_mla_kernel<__hip_bfloat16>(__hip_bfloat16 const*)": "kv_cache",
    "void aiter::cross_device_reduce_1stage<__hip_bfloat16, 8>(aiter::RankData*, aiter::RankSignals)": "communication",
    "void aiter::reduce_scatter_split_lastdim<__hip_bfloat16>(__hip_bfloat16*)": "communication",
    "void aiter::allgather_vec<__hip_bfloat16>(__hip_bfloat16*)": "communication",
    "void aiter::greedy_sample_kernel<float>(float const*, int*)": "sampling",
    "void aiter::TopPSamplingFromProbKernel<1024u, float, int>(float*, int*)": "sampling",
    "void aiter::groupnorm_kernel_dispatch_up<__hip_bfloat16>(__hip_bfloat16*)": "norm",
    "void aiter::fused_qk_rmsnorm_kernel<__hip_bfloat16>(__hip_bfloat16*)": "norm",
    # --- Composable Kernel (mangled, as ROCm traces name them) -----------------------------
    "_ZN7ck_tile6kentryILi1ENS_16MoeSortingKernelINS_17MoeSortingProblemIifLi4ELb1ELb0EEEEEEEvNT0_5KargsE": "moe",
    "_ZN7ck_tile6kentryILi1ENS_18FusedMoeGemmKernelINS_20FusedMoeGemmTilePartitionerEEEEEvNT0_5KargsE": "moe",
    "_ZN2ck16kernel_moe_gemmINS_23GridwiseMoeGemm_BPreshuffleEEEvNT_8ArgumentE": "moe",
    "_ZN7ck_tile6kentryILi1ENS_13FmhaFwdKernelINS_20BlockFmhaPipelineQRKSVSAsyncEEEEEvNT0_5KargsE": "attention",
    "_ZN7ck_tile6kentryILi1ENS_10GemmKernelINS_19GemmTile2DPartitionerEEEEEvNT0_5KargsE": "gemm",
    "_ZN2ck27kernel_gemm_xdl_cshuffle_v3INS_38GridwiseGemm_xdl_cshuffle_v3_multi_dEEEvNT_8ArgumentE": "gemm",
    # --- host ops: custom ops of vLLM, SGLang, AITER, vllm-kunlun -------------------------------
    "vllm::moe_forward": "moe",
    "vllm::moe_forward_shared": "moe",
    "vllm::unified_attention_with_output": "attention",
    "vllm::all_reduce": "communication",
    "_moe_C::topk_softmax": "moe",
    "_moe_C::moe_align_block_size": "moe",
    "_moe_C::moe_sum": "moe",
    "_C::silu_and_mul": "activation",
    "_C::static_scaled_fp8_quant": "quantization",
    "_C::dynamic_scaled_fp8_quant": "quantization",
    "_C::cutlass_scaled_mm": "gemm",
    "_C::gptq_marlin_gemm": "gemm",
    "_C::fused_add_rms_norm_static_fp8_quant": "norm",
    "_C::reshape_and_cache_flash": "kv_cache",
    "_rocm_C::paged_attention": "attention",
    "_rocm_C::wvSplitK": "gemm",
    "vllm::rocm_aiter_fused_moe": "moe",
    "vllm::rocm_aiter_topk_softmax": "moe",
    "vllm::rocm_aiter_rms_norm": "norm",
    "vllm::rocm_aiter_gemm_w8a8_blockscale": "gemm",
    "vllm::rocm_aiter_mla_decode_fwd": "attention",
    "aiter::gemm_a16w16": "gemm",
    "aiter::rmsnorm": "norm",
    "aiter::add_rmsnorm": "norm",
    "aiter::mha_batch_prefill": "attention",
    "aiter::topk_softmax": "moe",
    "aiter::fmoe_fp8_blockscale_g1u1": "moe",
    "aiter::moe_sorting_fwd": "moe",
    "aiter::ck_moe_stage1": "moe",
    "sgl_kernel::silu_and_mul": "activation",
    "sgl_kernel::rotary_embedding": "rope",
    "sglang::store_cache": "kv_cache",
    "sglang_profiler::attention_paged_attention_ragged_100": "attention",
    "sglang_profiler::rmsnorm_rmsnorm2d_fwd_with_add_110": "norm",
    "sglang_profiler::memory_pool__set_kv_buffer_impl_353": "kv_cache",
    "sglang_profiler::utils__reshape_for_qk_norm_486": "norm",
    "kunlun_ops::fused_moe": "moe",
    "_C::moe_fc": "moe",
    "moe_softmax_topk_norm": "moe",
    "moe_sigmoid_group_topk_norm": "moe",
    "smooth_quant_matmul_column_row_kernels": "gemm",
    "xft::fc_fusion<float16>": "gemm",
    "silu_and_mul_quant": "activation",
    # --- inductor-fused kernels (vLLM's torch.compile) ---------------------------------------
    "triton_poi_fused_mul_silu_slice_0": "activation",
    "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1": "norm",
    "triton_poi_fused_add_cos_sin_0": "rope",  # Inductor tokens cos+sin: RoPE computed in the kernel
}


@pytest.mark.parametrize("name,fused", sorted(GOLDEN.items()))
def test_golden(name: str, fused: str) -> None:
    tax = Taxonomy()
    got = tax.classify(name)
    row = tax.explain(name)
    assert (FUSED_OPS[got] if got >= 0 else "other") == fused, f"{name[:90]} decided by {row}"


def real_names() -> list[tuple[str, str, str]]:
    rows = []
    for line in (DATA / "real_trace_names.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            fused, trace, name = line.split("\t", 2)
            rows.append((fused, trace, name))
    return rows


def test_every_name_of_the_real_traces() -> None:
    tax = Taxonomy()
    rows = real_names()
    assert len(rows) > 400
    wrong = [
        (f, FUSED_OPS[tax.classify(n)] if tax.classify(n) >= 0 else "other", n[:100])
        for f, _, n in rows
        if (FUSED_OPS[tax.classify(n)] if tax.classify(n) >= 0 else "other") != f
    ]
    assert wrong == []


def test_the_golden_file_covers_the_shared_traces() -> None:
    """Every kernel of the shared traces is in the file (a new trace needs its names added)."""
    import numpy as np

    from xpu_profiler.core.profile import DEVICE_KINDS
    from xpu_profiler.readers import load

    files = real_data.files(recursive=True)
    listed = {n for _, _, n in real_names()}
    missing = set()
    for f in files:
        p = load([f])
        dev = np.isin(p.events["kind"], DEVICE_KINDS)
        missing |= set(p.strings.lookup(np.unique(p.events["name"][dev]))) - listed
    assert sorted(missing) == []


def test_moe_holds_no_epilogue_words_and_quantization_no_gemm() -> None:
    """What the family order guarantees: no name of the golden set that reads as a GEMM or
    an MoE kernel lands in activation or quantization."""
    tax = Taxonomy()
    names = list(GOLDEN) + [n for _, _, n in real_names()]
    gemmish = re.compile(r"(?<!fb)(?<!deep_)gemm(?!a)|matmul|_mm\b|scaled_mm|marlin|fmoe|moe_gemm", re.I)
    for n in names:
        got = tax.classify(n)
        if got >= 0 and FUSED_OPS[got] in ("activation", "quantization"):
            assert not gemmish.search(n), n


def test_user_rows_first_and_validated(tmp_path: Path) -> None:
    toml = tmp_path / "t.toml"
    toml.write_text('[[pattern]]\nregex = "swiglu"\nfused_op = "activation"\nnote = "mine"\n')
    tax = Taxonomy.from_file(toml)
    assert FUSED_OPS[tax.classify("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu")] == "activation"
    assert tax.explain("x_swiglu").note == "mine"
    assert FUSED_OPS[Taxonomy().classify("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu")] == "moe"
    bad = tmp_path / "bad.toml"
    bad.write_text('[[pattern]]\nregex = "x"\nfused_op = "gemm"\nnote = 3\n')
    from xpu_profiler.core.errors import XpuProfilerError

    with pytest.raises(XpuProfilerError, match="note"):
        Taxonomy.from_file(bad)

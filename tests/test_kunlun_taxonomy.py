"""Kunlun kernel and op names → fused op, through the full taxonomy table."""

from __future__ import annotations

import pytest
import real_data

from xpu_profiler.knowledge.families import kunlun, tables
from xpu_profiler.knowledge.taxonomy import FUSED_OPS, Taxonomy

EXPECTED = {
    # [KD] vLLM-Kunlun profiling guide sample output; demangled and raw
    "void xblas_xpu3::fc_cdnn_infer<float16, float16, float16, float16, float, float, float, float, 1>": "gemm",
    "_ZN10xblas_xpu313fc_cdnn_inferI7float16S1_S1_S1_ffffLi1EEEvPKT_PKT0_PT2_i": "gemm",
    "void kl3_all_reduce<float16>": "communication",
    "void kl3_all_reduce_butterfly<float16>": "communication",
    "_Z24kl3_all_reduce_butterflyI7float16EvPT_i": "communication",
    # [KO]/[KC] vllm-kunlun ops
    "_C::moe_fc": "moe",
    "moe_fc_v3": "moe",
    "moe_pre_sorted": "moe",
    "moe_pre_small": "moe",
    "moe_softmax_topk_norm": "moe",
    "moe_sigmoid_group_topk_norm": "moe",
    "gen_block_statistic": "moe",
    "moe_active_expert_balance": "moe",
    "moe_post": "moe",
    "fused_moe": "moe",
    "_moe_C::topk_softmax": "moe",
    "silu_and_mul": "activation",
    "_C::silu_and_mul": "activation",
    "swigluoai_and_mul": "activation",
    "quick_gelu": "activation",
    "gelu_tanh_and_mul": "activation",
    "silu_and_mul_quant": "activation",
    "rmsnorm": "norm",
    "_C::rms_norm": "norm",
    "add_rmsnorm": "norm",
    "fused_add_rms_norm": "norm",
    "gemma_add_rmsnorm": "norm",
    "rms_norm_gated": "norm",
    "quant_rmsnorm": "norm",
    "quant_fusedresidual_rmsnorm": "norm",
    "rms_norm_static_fp8_quant": "norm",
    "rotary_embedding": "rope",
    "mrotary_embedding_neox": "rope",
    "fused_qk_norm_rope": "rope",
    "split_norm_rope_neox": "rope",
    "paged_attention": "attention",
    "kunlun_ops::attention": "attention",
    "multi_query_kv_attention": "attention",
    "prefill_attention": "attention",
    "decode_paged_attention": "attention",
    "void xfa::flash_attention_fwd<_Float16, float>": "attention",
    "_ZN3xfa19flash_attention_fwdIDF16_fEEvPKT_": "attention",
    "chunk_gated_delta_rule_fwd": "attention",
    "indexer_decode": "attention",
    "flashmla_decode": "attention",
    "reshape_and_cache": "kv_cache",
    "reshape_and_cache_flash": "kv_cache",
    "qkv_cache_insert": "kv_cache",
    "swap_blocks": "kv_cache",
    "copy_blocks": "kv_cache",
    "smooth_quant_matmul_column_row_kernels": "gemm",
    "gemm_I8_I8_bf16_nt": "gemm",
    "custom_ops::fc_fusion": "gemm",
    "xft::fc_fusion<float16>": "gemm",
    "kunlun_scale_mm": "gemm",
    "static_scaled_fp8_quant": "quantization",
    "dynamic_per_token_scaled_fp8_quant": "quantization",
    "vocab_parallel_embedding": "embedding",
    "kl3_group_send_recv": "communication",
    "xlink_ring_all_reduce_single_node": "communication",
    # [X3] XPU runtime kernels
    "void xpukernel_xpu3::constant<float>": "memset",
    "_ZN14xpukernel_xpu38constantIfEEvPclT_": "memset",
    "void xpukernel_xpu3::host2device_async<256>": "memcpy",
    "void xpukernel_xpu3::normal_philox4x32_10_pytorch<float>": "sampling",
    "void xpukernel_xpu3::transpose_0213_cluster<float16>": "elementwise",
    "void xpukernel_xpu3::broadcast_add<float16>": "elementwise",
    "void xpukernel_xpu3::cast<float, float16>": "elementwise",
}


@pytest.mark.parametrize("name,fused", sorted(EXPECTED.items()))
def test_kunlun_name(name, fused):
    got = Taxonomy().classify(name)
    assert got >= 0 and FUSED_OPS[got] == fused, f"{name} → {FUSED_OPS[got] if got >= 0 else None}"


def test_rows_are_well_formed():
    assert kunlun.ROWS and all(r.fused_op in FUSED_OPS and r.source for r in kunlun.ROWS)
    Taxonomy(families=list(kunlun.ROWS))  # compiles


def test_kunlun_rows_change_nothing_for_the_real_non_kunlun_traces():
    """The Kunlun rows are searched for every name: on the CUDA/ROCm/CPU traces of the
    shared test data they must give exactly what the other tables give without them."""
    from xpu_profiler.readers import load

    files = real_data.files(recursive=True)
    names: set[str] = set()
    for f in files:
        names |= set(load([f]).strings.strings)
    full = Taxonomy()
    generic = Taxonomy(families=[r for name, t in tables()[1:] if name != "kunlun" for r in t])
    changed = sorted(n for n in names if full.classify(n) != generic.classify(n))
    assert len(names) > 100 and changed == []

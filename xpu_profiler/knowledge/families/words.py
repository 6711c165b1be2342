"""The generic vocabulary: words of a head that say what a kernel or op does, for the names no
library row knows (a new Triton kernel, a vendor's ``xyz_rms_norm_kernel``, a custom op).

Searched after every library table, in this precedence: communication, MoE, KV-cache writes,
attention (and the sequence mixers that stand in for it), rope, norm, convolution, GEMM (dense
and quantised), sampling, embedding — and only then the epilogue and dtype words: activation,
quantization, element-wise. A fused kernel takes the highest of the operations it fuses: a GEMM
with a SwiGLU epilogue is a GEMM, add+RMSNorm+quant is a norm, SiLU+quant an activation, and
"quantization" holds only the kernels that quantize or dequantize (never a GEMM).

The words are vLLM's, SGLang's, aiter's and the kernel libraries' own vocabulary (see the
library tables for the sources of the names); the collective words come from
``collective_kinds.KINDS`` (one list of them).
"""

from __future__ import annotations

from ..collective_kinds import COLLECTIVE_WORDS
from .base import Family

_SRC = "generic vocabulary of the kernel libraries (see the library tables)"
# "gemm" as a word part, not "gemma" (Gemma-style RMSNorm kernels), fbgemm's bookkeeping
# or a "..._deep_gemm" suffix naming the consumer (DeepGEMM's own kernels are deep_gemm::*)
_GEMM = r"(?<!fb)(?<!deep_)gemm(?!a)"

ROWS: list[Family] = [
    # --- communication (before anything that says "reduce", "gather" or "expert") ----------------
    Family(
        COLLECTIVE_WORDS + r"|nccl|rccl|c10d::|gloo:|custom_ar|bkcl|xccl|hccl|hcom_|::send$|::recv$|_a2a_|"
        r"(?<![a-z])(ar|ag|rs)_gfx\d+",
        "communication",
        "collective_kinds.KINDS words; NCCL/RCCL, c10d/gloo, BKCL/XCCL (Kunlun), HCCL",
    ),
    # --- MoE: routing/sort (openers), expert GEMMs, finalize (closers), the rest ----------------
    Family(
        r"router|routing|topk_?softmax|topk_sigmoid|topkgating|topk_gating|grouped_?topk|fused_topk|count_and_sort|"
        r"moe_align|moe_sort|moe_permute|expandinputrows|shuffle_?(input_?)?rows|ep_scatter|clean_and_count_expert",
        "moe",
        _SRC,
        role="open",
        note="routing, top-k, align/sort, permute",
    ),
    Family(
        r"unpermute|moe_sum|moe_post|moe_finalize|finalize_?moe|ep_gather|moe_combine",
        "moe",
        _SRC,
        role="close",
        note="finalize: unpermute and top-k weighted sum",
    ),
    Family(
        r"fused_moe|fused_experts|moe_gemm|moe_mm|moe_fc|moe_ffn|fmoe|marlin_moe|moe_wna16|"
        r"grouped_?(gemm|mm|matmul)(?![a-z])|m_grouped|group_gemm_starts|permute_unpermute",
        "moe",
        _SRC,
        role="expert",
        note="expert GEMMs (grouped, permuted)",
    ),
    Family(r"moe|expert|_count_expert_num_tokens|megamoe", "moe", _SRC),
    # --- KV cache writes (before attention: names often say "attn") ------------------------------
    Family(
        r"reshape_and_cache|concat_and_cache|kv_cache_update|copy_blocks|swap_blocks|cache_kernels|reshape_cache|"
        r"write_to_kv_cache|store_kvcache|kv_cache_store|store_cache|set_kv_buffer|kv_cache_(gather|scatter)|"
        r"zero_kv_blocks|(quant|rope)_and_cache|insert_k(?![a-z])|slot_mapping|update_?kv_?cache|append_paged_kv",
        "kv_cache",
        _SRC,
        note="incl. RoPE fused with the KV write (the write is the kernel's side effect; see docs/attribution.md)",
    ),
    # --- attention (and the sequence mixers that stand in for it) ---------------------------------
    Family(
        r"attention|attn|flash_fwd|flash_bwd|flash::|flashattn|fmha|batchprefill|batchdecode|batchmla|mergestates|"
        r"paged_attention|xformers|scaled_dot_product|_efficient_attention|sdpa|merge_attn_states|mla_|flashmla|"
        r"cutlass_mla|lightning_attn|xfa|xft_?attention|page_attn|(?<![a-z])mha_|splitkv|"
        r"(?<![a-z])pa_(bf16|fp16|fp8|i8|a8|a16|decode|prefill|ragged)|gqa_d\d+|dsa_v\d+_decode|kv_indices|"
        r"scheduler_metadata",
        "attention",
        _SRC,
    ),
    Family(
        r"selective_scan|selective_state_update|ssd_|_chunk_(scan|state|cumsum)_fwd|_state_passing_fwd|"
        r"_bmm_chunk_fwd|gated_delta_rule|fused_recurrent|chunk_gla|chunk_kda|(?<![a-z])kda_|delta_rule",
        "attention",
        "state-spaces/mamba, fla-org/flash-linear-attention (Mamba SSM / linear-attention token mixers)",
    ),
    # --- rotary embedding ---------------------------------------------------------------------------
    Family(r"rotary|(?:^|[^a-z])m?rope(?:[^a-z]|$)", "rope", _SRC),
    # --- normalisation --------------------------------------------------------------------------------
    Family(
        r"rms_?norm|layer_?norm|group_?norm|batch_?norm|instance_?norm|l2_?norm|qk_?norm|norm_kernel|"
        r"gammabetabackward|rowwisemoments|(^|::)bn_(fw|bw)",
        "norm",
        _SRC,
    ),
    # --- convolution (cuDNN engines, causal conv1d of Mamba-style layers) ------------------------------
    Family(r"conv(?!ert)|dgrad|wgrad|winograd|implicit_gemm|im2col|col2im", "convolution", _SRC),
    # --- GEMM, dense and quantised (before any epilogue or dtype word) ----------------------------------
    Family(
        r"scaled_mm|marlin|machete|awq_gemm|gptq_gemm|w8a8|w4a16|w4a8|int8_gemm|fp8_gemm|fp8_blockwise|"
        r"block_fp8_matmul|cutlass_scaled|lora_(shrink|expand)|[sb]gmv",
        "gemm",
        _SRC,
        note="GEMMs that read quantised weights are GEMMs",
    ),
    Family(
        _GEMM + r"|matmul|gemv|(?<![a-z])bmm_|cutlass|cublas|hipblaslt|rocblas|xmma|Kernel2|splitKreduce|nvjet|"
        r"onednn|dnnl|mkl|_C::\w*(mm|linear)$|fc_cdnn|xblas|fc_fusion|fc_int|xdnn_fc",
        "gemm",
        _SRC,
    ),
    # --- sampling -----------------------------------------------------------------------------------------
    Family(
        r"sampl|top_?k_?top_?p|top_p|multinomial|apply_penalties|penalt|gumbel|greedy_argmax|argmax_kernel|logprob|"
        r"min_p|temperature|rejection_|bad_words|logits?_bias",
        "sampling",
        _SRC,
    ),
    # --- embedding ------------------------------------------------------------------------------------------
    Family(r"embedding|embeds?_", "embedding", _SRC),
    # --- epilogue words: activations -------------------------------------------------------------------------
    Family(
        r"act_and_mul|silu_and_mul|gelu_and_mul|mul_and_silu|swiglu|geglu|silu_kernel|gelu_kernel|relu_kernel|"
        r"fatrelu|swigluoai|activation_kernel|relu_?squared|silu_mul|_silu_",
        "activation",
        _SRC,
        note="activation kernels; never a GEMM with a fused epilogue (those matched above)",
    ),
    # --- dtype words: quantize / dequantize / cast kernels -----------------------------------------------------
    Family(
        r"quant|dequant|fp8|int8|int4|nvfp4|mxfp|fp4|hfp8|downcast_to|upcast_from|(?<![a-z])cast(?![a-z])",
        "quantization",
        _SRC,
        note="kernels that quantize, dequantize or cast; never a GEMM",
    ),
    # --- unfused element-wise work -------------------------------------------------------------------------------
    Family(
        r"elementwise|reduce_kernel|CatArrayBatchedCopy|fill_kernel|copy_kernel|indexSelect|indexFunc|"
        r"scatter_gather|gather_kernel|compare_scalar|tensor_kernel_scan|cub::|RadixSort|DeviceScan|DeviceReduce|"
        r"DeviceSegmented|rocprim::|hipcub::|thrust::|max_pool|avg_pool|adaptive_pool|softmax|searchsorted|"
        r"multi_tensor_apply|to_dense_representation|transpose|_copy_|copy_tensor",
        "elementwise",
        _SRC,
    ),
]

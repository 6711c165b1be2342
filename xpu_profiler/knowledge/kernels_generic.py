"""The generic rows of the kernel and op name table, grouped by family in ``FAMILIES`` order
(``test_taxonomy_families`` checks it): CUDA, ROCm, CPU ``aten::``/``_C::`` ops of vLLM's CPU
build. Vendor rows live beside it (``kernels_kunlun``); ``taxonomy.rules()`` merges them."""

from __future__ import annotations

from .fused_ops import Rule

# Element-wise and tensor-bookkeeping aten ops: unfused work that is not "other".
_ELEMENTWISE_ATEN = (
    "add|add_|sub|sub_|mul|mul_|div|div_|pow|rsqrt|sqrt|exp|log|neg|abs|clamp|clamp_|"
    "maximum|minimum|max|min|mean|sum|prod|cumsum|where|masked_fill|masked_fill_|"
    "softmax|_softmax|log_softmax|_log_softmax|eq|ne|lt|le|gt|ge|logical_and|logical_or|"
    "bitwise_and|bitwise_or|reciprocal|sign|floor|ceil|round|remainder|fmod|lerp|"
    "cat|stack|index|index_put_|index_select|gather|scatter|scatter_|scatter_add_|"
    "repeat|repeat_interleave|flip|roll|tril|triu|outer|clone|contiguous|arange|"
    "zeros|zeros_like|ones|ones_like|full|full_like|empty|empty_like|empty_strided|new_empty|"
    "new_zeros|new_full|view|reshape|_reshape_alias|_unsafe_view|as_strided|slice|select|"
    "narrow|split|split_with_sizes|chunk|unbind|squeeze|unsqueeze|permute|transpose|t|expand|"
    "flatten|unflatten|view_as|detach|alias|lift_fresh|resolve_conj|resolve_neg|result_type|"
    "item|_local_scalar_dense|is_nonzero|nonzero|any|all|argmax|argmin|sort|numel|size|"
    "bucketize|searchsorted|pad|constant_pad_nd|_to_dim_order_copy|type_as|bernoulli_|uniform_|"
    "exponential_|normal_|rand|randn|randint|random_|set_|record_stream|_pin_memory|pin_memory|"
    "is_pinned|lift_fresh_copy|fill_|zero_|copy_|to|_to_copy|dropout|baddbmm_|resize_|expand_as|"
    "_foreach_copy_|numpy_T|_assert_async|_assert_tensor_metadata"
)
# "gemm" as a word part, not "gemma" (Gemma-style RMSNorm kernels), fbgemm's bookkeeping
# or a "..._deep_gemm" suffix naming the consumer (DeepGEMM's own kernels are deep_gemm::*)
_GEMM = r"(?<!fb)(?<!deep_)gemm(?!a)"

#: the generic rows, grouped by family in FAMILIES order (``test_taxonomy_families`` checks it)
PATTERNS: list[Rule] = [
    # --- data movement ---------------------------------------------------------------
    Rule(r"^memcpy|^Memcpy |memcpy(htod|dtoh|dtod|async)|^cudaMemcpy|^hipMemcpy|^xpu_memcpy", "memcpy", "memory"),
    Rule(r"^memset|^Memset |^cudaMemset|^hipMemset", "memset", "memory"),
    # --- communication (before anything that says "reduce", "gather" or "expert") --------
    Rule(
        r"nccl|rccl|all_?reduce|allgather|all_gather|reduce_scatter|reducescatter|all_?to_?all|"
        r"c10d::|gloo:|broadcast|cross_device_reduce|custom_ar|kl3_all_reduce|kl3_all_gather|"
        r"bkcl|xccl|hccl|hcom_|send_recv|::send|::recv|deep_ep::|deepep|mori::|nvshmem|lamport|_a2a_|"
        r"(?<![a-z])(ar|ag|rs)_gfx\d+",
        "communication",
        "communication",
        "collectives, custom all-reduce, expert-parallel all-to-all (DeepEP, MoRI), HCCL",
    ),
    # --- MoE: expert GEMMs, routing, top-k, align/sort, permute, finalize -----------------
    Rule(
        r"moe|fused_experts|expert|router|routing|topk_?softmax|topk_sigmoid|topkgating|"
        r"topk_gating|grouped_?topk|count_and_sort|shuffle_?(input_?)?rows|moe_align|unpermute|"
        r"expandinputrows|finalizemoerouting",
        "moe",
        "moe",
        "fused_moe, vllm::moe::*, aiter fmoe/ck_moe/topksoftmax, Marlin-MoE, Kunlun moe_*",
    ),
    Rule(
        r"matmul_ogs|_matmul_[nt]{3}_|_finalize_matmul|_reduce_grouped|_compute_writeback_idx|"
        r"bitmatrix|_expt_data|_topk_forward|_masked_topk_sum",
        "moe",
        "moe",
        "triton_kernels (gpt-oss MoE): matmul_ogs expert GEMMs with fused SwiGLU/mxfp4, "
        "bitmatrix routing, top-k, finalize",
    ),
    Rule(
        r"grouped_?(gemm|mm|matmul)(?![a-z])|m_grouped|groupproblemshape|group_gemm_starts|"
        r"deep_gemm::gemmtype\)[12]|gemmtype::grouped|ep_scatter|ep_gather|permute_unpermute|"
        r"_count_expert_num_tokens",
        "moe",
        "moe",
        "grouped/permuted expert GEMMs (CUTLASS GroupProblemShape, DeepGEMM grouped)",
    ),
    # --- KV cache writes (before attention: names often say "attn") -----------------------
    Rule(
        r"reshape_and_cache|concat_and_cache|kv_cache_update|copy_blocks|swap_blocks|"
        r"cache_kernels|reshape_cache|write_to_kv_cache|store_kvcache|kv_cache_store|store_cache|"
        r"set_kv_buffer|kv_cache_(gather|scatter)|zero_kv_blocks|(quant|rope)_and_cache|insert_k(?![a-z])|"
        r"slot_mapping",
        "kv_cache",
        "kv_cache",
    ),
    # --- attention (and the sequence mixers that stand in for it) -------------------------
    Rule(
        r"attention|attn|flash_fwd|flash_bwd|flash::|flashattn|fmha|batchprefill|batchdecode|"
        r"batchmla|mergestates|paged_attention|xformers|scaled_dot_product|_efficient_attention|"
        r"sdpa|merge_attn_states|mla_|flashmla|cutlass_mla|lightning_attn|xfa|xft_?attention|"
        r"page_attn|(?<![a-z])mha_|splitkv|(?<![a-z])pa_(bf16|fp16|fp8|i8|a8|a16|decode|prefill|ragged)|"
        r"gqa_d\d+|dsa_v\d+_decode|kv_indices|^(kernel_)?reduce_segments|scheduler_metadata|"
        r"^_fwd_(grouped_)?kernel(_stage[12]|_alibi)?$",
        "attention",
        "attention",
        "FlashAttention, FlashInfer, paged/unified attention, MLA, aiter pa_/fmha/mla asm",
    ),
    Rule(
        r"selective_scan|selective_state_update|ssd_|_chunk_(scan|state|cumsum)_fwd|"
        r"_state_passing_fwd|_bmm_chunk_fwd|gated_delta_rule|fused_recurrent|chunk_gla|chunk_kda|"
        r"(?<![a-z])kda_|delta_rule",
        "attention",
        "attention",
        "Mamba SSM / linear-attention token mixers",
    ),
    # --- rotary embedding ---------------------------------------------------------------
    Rule(r"rotary|(?:^|[^a-z])m?rope(?:[^a-z]|$)", "rope", "rope"),
    # --- normalisation (incl. inductor-fused RMSNorm: mean·pow·rsqrt) ---------------------
    Rule(
        r"rms_?norm|layer_?norm|group_?norm|batch_?norm|instance_?norm|l2_?norm|qk_?norm|norm_kernel|"
        r"native_layer_norm|aten::norm$|(mean.*pow|pow.*mean).*rsqrt|gammabetabackward|"
        r"rowwisemoments|cudnn::bn_|bn_fw_|bn_bw_",
        "norm",
        "norm",
    ),
    # --- convolution (cuDNN engines, causal conv1d of Mamba-style layers) -----------------
    Rule(
        r"conv(?!ert)|dgrad|wgrad|winograd|implicit_gemm|scudnn|cudnn::detail|cask_cudnn|"
        r"cudnn::ops::|im2col|col2im",
        "convolution",
        "convolution",
    ),
    # --- GEMM, dense and quantised (before any epilogue or dtype word) ---------------------
    Rule(
        r"scaled_mm|marlin|machete|awq_gemm|gptq_gemm|w8a8|w4a16|w4a8|int8_gemm|fp8_gemm|"
        r"fp8_blockwise|block_fp8_matmul|deep_gemm::|cutlass_scaled|lora_(shrink|expand)|[sb]gmv",
        "gemm",
        "gemm",
        "GEMMs that read quantised weights are GEMMs",
    ),
    Rule(
        _GEMM + r"|matmul|gemv|(?<![a-z])bmm_|aten::(mm|addmm|bmm|linear|matmul|baddbmm|_addmm_activation)$|"
        r"cutlass|cublas|cublaslt|hipblaslt|rocblas|xmma|sm\d+_|ampere_|volta_|turing_|"
        r"hopper_|Kernel2|splitKreduce|Cijk_|wvSplitK|LLMM1|nvjet|onednn|dnnl|mkl|_C::.*(mm|linear)$|"
        r"fc_cdnn|xblas|fc_fusion|fc_int|xdnn_fc",
        "gemm",
        "gemm",
    ),
    # --- sampling -------------------------------------------------------------------------
    Rule(
        r"sampl|top_?k_?top_?p|top_p|aten::topk$|multinomial|apply_penalties|penalt|"
        r"gumbel|greedy_argmax|argmax_kernel|argmaxops|logprob|min_p|temperature|rejection_|bad_words|logits?_bias",
        "sampling",
        "sampling",
    ),
    # --- embedding ------------------------------------------------------------------------
    Rule(r"embedding|embeds?_|aten::embedding|bounds_check_indices|pooled_embs", "embedding", "embedding"),
    # --- epilogue words: activations ----------------------------------------------------------
    Rule(
        r"act_and_mul|silu_and_mul|gelu_and_mul|mul_and_silu|swiglu|geglu|"
        r"aten::(silu|silu_|gelu|gelu_|relu|relu_|sigmoid|sigmoid_|tanh|tanh_|softplus|hardswish)$|"
        r"silu_kernel|gelu_kernel|relu_kernel|fatrelu|swigluoai|activation_kernel|relu_?squared|silu_mul|_silu_|"
        r"triton_(poi|per|red)_fused_\w*(silu|gelu)",
        "activation",
        "activation",
        "activation kernels; never a GEMM with a fused epilogue (those matched above)",
    ),
    # --- dtype words: quantize / dequantize kernels ---------------------------------------------
    Rule(
        r"quant|dequant|fp8|int8|int4|nvfp4|mxfp|fp4|hfp8|downcast_to|upcast_from",
        "quantization",
        "quantization",
        "kernels that quantize or dequantize; never a GEMM",
    ),
    # --- unfused element-wise work --------------------------------------------------------
    Rule(
        r"elementwise|vectorized_elementwise|unrolled_elementwise|reduce_kernel|"
        r"triton_(poi|red|per)_|CatArrayBatchedCopy|index_elementwise|fill_kernel|"
        r"copy_kernel|indexSelect|indexFunc|scatter_gather|gather_kernel|compare_scalar|"
        r"tensor_kernel_scan|cub::|RadixSort|DeviceScan|DeviceReduce|DeviceSegmented|rocprim::|"
        r"hipcub::|max_pool|avg_pool|adaptive_pool|softmax_warp|cunn_softmax|searchsorted|"
        r"linearize_index|multi_tensor_apply|aten::diff$|aten::_foreach_|to_dense_representation|"
        r"recat_copy|fbgemm_gpu::(permute|_offsets|_block_bucketize|jagged)|"
        r"^fbgemm::.*(permute|jagged|index|offsets|bounds|segment|pack|sort)|"
        rf"^aten::({_ELEMENTWISE_ATEN})$",
        "elementwise",
        "elementwise",
    ),
]

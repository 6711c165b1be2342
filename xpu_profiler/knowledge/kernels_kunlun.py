"""Kunlun (XPU, vllm-kunlun) kernel and op names → fused op, for the pattern table.

``KUNLUN_PATTERNS`` is an ordered list of ``Rule(regex, fused_op, family)`` rows
meant for ``re.search`` on a kernel or op name, compiled case-insensitively by
``xpu_profiler.knowledge.taxonomy``, whose ``rules()`` merges them into the generic table
family by family (a Kunlun row goes before the generic rows of its family); the
first row that matches wins. The rows match both the demangled kernel names
our readers produce (``void xblas_xpu3::fc_cdnn_infer<float16, …>``), the raw
mangled symbols (``_ZN10xblas_xpu313fc_cdnn_infer…``: the identifiers appear
verbatim inside them) and the op names vllm-kunlun registers
(``_C::moe_fc``, ``custom_ops::fc_fusion``, ``kunlun_ops.rmsnorm``).

Where the names come from (baidu/vLLM-Kunlun unless said otherwise):

- [KD] ``docs/source/developer_guide/performance/performance_benchmark/profiling.md``:
  the sample ``[XPURT_PROF]`` output, ``xblas_xpu3::fc_cdnn_infer<…>``,
  ``kl3_all_reduce<float16>``, ``kl3_all_reduce_butterfly<float16>``;
- [KO] ``vllm_kunlun/ops/_kunlun_ops.py``: ``kunlun_ops.paged_attention``,
  ``attention``, ``silu_and_mul``, ``quick_gelu``, ``rmsnorm``, ``add_rmsnorm``,
  ``quant_rmsnorm``, ``quant_fusedresidual_rmsnorm``, ``rotary_embedding``,
  ``mrotary_embedding_neox``, ``reshape_and_cache``, ``swap_blocks``,
  ``copy_blocks``, ``smooth_quant_matmul_column_row_kernels``; MoE:
  ``moe_softmax_topk_norm``, ``moe_sigmoid_group_topk_norm``,
  ``gen_block_statistic``, ``moe_pre_sorted``, ``moe_pre_small``,
  ``moe_active_expert_balance``, ``moe_fc``, ``moe_fc_v3``, ``moe_post``,
  ``fused_moe``, ``swigluoai_and_mul``;
- [KC] ``vllm_kunlun/ops/_custom_ops.py``: ``_moe_C::topk_softmax``,
  ``_C::rms_norm``, ``fused_add_rms_norm``, ``gemma_rmsnorm``,
  ``gemma_add_rmsnorm``, ``rms_norm_gated``, ``rms_norm_static_fp8_quant``,
  ``rms_norm_dynamic_per_token_quant``, ``rms_norm_per_block_quant``,
  ``fused_qk_norm_rope``, ``split_norm_rope_neox``, ``silu_and_mul_quant``,
  ``static_scaled_fp8_quant``, ``dynamic_(per_token_)scaled_fp8_quant``,
  ``custom_ops::fc_fusion``;
- [KA] ``vllm_kunlun/ops/attention/`` (``flashmla.py``, ``merge_attn_states.py``,
  ``qkv_cache_insert.py``, ``kv_insert_paths.py``, ``sparse_index.py``,
  ``indexer_decode.py``), ``vllm_kunlun/ops/fla/`` (``chunk``,
  ``fused_recurrent``), ``vllm_kunlun/ops/kda.py``, ``vllm_kunlun/ops/mla.py``,
  ``vllm_kunlun/ops/rotary_embedding/``, ``vllm_kunlun/ops/deep_gemm.py``,
  ``vllm_kunlun/ops/vocab_parallel_embedding.py``; XFA/xft are the Kunlun
  flash-attention / fast-transformer kernel libraries named in the issue;
- [X3] Kunlun runtime kernels seen in public third-party P800 reports and
  scripts (not in vLLM-Kunlun): ``xpukernel_xpu3::constant<float>`` (fill),
  ``xpukernel_xpu3::host2device_async<N>``,
  ``xpukernel_xpu3::transpose_0213_cluster<float16>``,
  ``xpukernel_xpu3::normal_philox4x32_10_pytorch<float>``, XCCL
  ``kl3_group_send_recv`` and ``xlink_ring_all_reduce_single_node``; vendor
  kernels ``prefill_attention``, ``decode_paged_attention``,
  ``reshape_and_cache_flash``, ``gemm_I8_I8_bf16_nt``, ``swiglu``.

The rows are searched for every name, CUDA ones included, so they hold only
Kunlun-specific identifiers. Kunlun names that the
generic rows already place right (``xblas``, ``fc_cdnn``, ``fc_fusion``,
``kl3_all_reduce``, ``paged_attention``, ``rms_norm``, ``silu_and_mul``,
``moe_*``, ``rotary_embedding``, ``reshape_and_cache`` ...) are left to them;
the rows here cover the names those rows miss or would put elsewhere
(``smooth_quant_matmul`` is a GEMM, not quantization; ``broadcast_add`` of the
XPU runtime is element-wise, not communication). ``tests/test_kunlun_taxonomy.py``
pins the mapping of every name listed above.
"""

from __future__ import annotations

from .fused_ops import Rule

# identifiers that must not fall into the "plain runtime kernel" catch-all below
_NOT_PLAIN = (
    r"norm|rope|rotary|softmax|topk|top_k|embed|attn|attention|gemm|matmul|quant|"
    r"moe|sampl|multinomial|philox|all_?reduce|all_?gather|reduce_?scatter|send|recv"
)

KUNLUN_PATTERNS: list[Rule] = [
    # -- communication: XCCL/BKCL collectives and XLink ring kernels [KD][X3] ----------
    Rule(
        r"\bkl[23]_(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|all2all|broadcast|"
        r"group_send_recv|send|recv)|\d+kl[23]_(all_?reduce|all_?gather|reduce_?scatter|all2all|"
        r"group_send_recv)",
        "communication",
        "communication",
    ),
    Rule(r"xlink_\w*(reduce|gather|scatter|send|recv|all2all)|\bbkcl_|\bxccl_", "communication", "communication"),
    # -- MoE routing statistics kernel (no "moe" in its name) [KO] ---------------------
    Rule(r"gen_block_statistic|moe_active_expert_balance|moe_pre_small", "moe", "moe"),
    # -- KV-cache inserts of vllm-kunlun's attention paths [KA] -----------------------
    Rule(r"qkv_cache_insert|\bkv_insert|dsv4_kv_insert|\bcache_insert", "kv_cache", "kv_cache"),
    # -- linear / sparse attention kernels of vllm-kunlun [KA] ------------------------
    Rule(
        r"chunk_gated_delta_rule|fused_recurrent_gated_delta|fla_chunk|\bkda_(fwd|decode|prefill|chunk)|"
        r"sparse_attn_indexer|indexer_decode|deepseek_v4_sparse_index|(\b|\d)xfa(_|::|\d)|(\b|\d)xft_?\w*attention",
        "attention",
        "attention",
    ),
    # -- GEMMs whose names say "quant" (they are matmuls) [KO][KA][X3] -----------------
    Rule(
        r"smooth_quant_matmul\w*|gemm_i8_i8\w*|kunlun_scale_mm|scale_mm_\w*|exllama\w*|"
        r"xft_?\w*(fc|gemm|matmul)|xblas_xpu\d|xblas\w*::|xdnn_?\w*fc",
        "gemm",
        "gemm",
    ),
    # -- activations the generic rows miss [KO][X3] -------------------------------------
    Rule(r"quick_gelu|gelu_tanh_and_mul|fast_swiglu", "activation", "activation"),
    # -- XPU runtime (xpukernel) kernels [X3]: the runtime's own tensor library, searched
    #    right after data movement (before "broadcast" reads as communication) ---------
    Rule(r"xpukernel_xpu\d(::|\d+)normal_philox", "sampling", "runtime"),
    Rule(r"xpukernel_xpu\d(::|\d+)(host2device|device2host|device2device|h2d|d2h|d2d)", "memcpy", "runtime"),
    Rule(r"xpukernel_xpu\d(::|\d+)constant(<|I|\b)", "memset", "runtime"),
    # plain tensor kernels of the XPU runtime (transpose, cast, broadcast_*, concat...):
    # element-wise, unless the name says it is something the generic rows know
    Rule(rf"xpukernel_xpu\d(::|\d+)(?!\w*({_NOT_PLAIN}))\w+", "elementwise", "runtime"),
]

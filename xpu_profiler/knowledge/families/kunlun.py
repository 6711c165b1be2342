"""Kunlun P800 (XPU, vllm-kunlun): XCCL/BKCL collectives, XBLAS GEMMs, vllm-kunlun ops, the XPU
runtime's own kernels.

Where the names come from (baidu/vLLM-Kunlun unless said otherwise):

- [KD] ``docs/source/developer_guide/performance/performance_benchmark/profiling.md``: the sample
  ``[XPURT_PROF]`` output, ``xblas_xpu3::fc_cdnn_infer<…>``, ``kl3_all_reduce<float16>``,
  ``kl3_all_reduce_butterfly<float16>``;
- [KO] ``vllm_kunlun/ops/_kunlun_ops.py``: ``paged_attention``, ``rmsnorm``, ``add_rmsnorm``,
  ``rotary_embedding``, ``reshape_and_cache``, ``smooth_quant_matmul_column_row_kernels``; MoE:
  ``moe_softmax_topk_norm``, ``moe_sigmoid_group_topk_norm``, ``gen_block_statistic``,
  ``moe_pre_sorted``, ``moe_pre_small``, ``moe_active_expert_balance``, ``moe_fc``,
  ``moe_fc_v3``, ``moe_post``, ``fused_moe``;
- [KC] ``vllm_kunlun/ops/_custom_ops.py``; [KA] ``vllm_kunlun/ops/attention/`` (``flashmla.py``,
  ``qkv_cache_insert.py``, ``kv_insert_paths.py``, ``sparse_index.py``, ``indexer_decode.py``),
  ``vllm_kunlun/ops/fla/``, ``vllm_kunlun/ops/kda.py``; XFA/xft: Kunlun's flash-attention and
  fast-transformer kernel libraries;
- [X3] XPU runtime kernels seen in public third-party P800 reports (not in vLLM-Kunlun):
  ``xpukernel_xpu3::constant<float>`` (fill), ``host2device_async``, ``transpose_0213_cluster``,
  ``normal_philox4x32_10_pytorch``, XCCL ``kl3_group_send_recv``,
  ``xlink_ring_all_reduce_single_node``; ``gemm_I8_I8_bf16_nt``.

``tests/test_kunlun_taxonomy.py`` pins the mapping of every name listed above.
"""

from __future__ import annotations

from .base import Family

_KD = "baidu/vLLM-Kunlun docs/source/developer_guide/performance/performance_benchmark/profiling.md"
_KO = "baidu/vLLM-Kunlun vllm_kunlun/ops/_kunlun_ops.py"
_KA = "baidu/vLLM-Kunlun vllm_kunlun/ops/attention/"
_X3 = "third-party P800 reports (XPU runtime kernels)"

# identifiers that must not fall into the "plain runtime kernel" catch-all below
_NOT_PLAIN = (
    r"norm|rope|rotary|softmax|topk|top_k|embed|attn|attention|gemm|matmul|quant|"
    r"moe|sampl|multinomial|philox|all_?reduce|all_?gather|reduce_?scatter|send|recv"
)

ROWS: list[Family] = [
    # -- communication: XCCL/BKCL collectives and XLink ring kernels ---------------------------
    Family(
        r"(^|::)kl[23]_(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|all2all|broadcast|group_send_recv|send|recv)",
        "communication",
        _KD + "; " + _X3,
    ),
    Family(r"^xlink_\w*(reduce|gather|scatter|send|recv|all2all)|^bkcl_|^xccl_", "communication", _X3),
    # -- MoE: routing and expert kernels of vllm-kunlun -------------------------------------------
    Family(
        r"(^|::)(moe_softmax_topk_norm|moe_sigmoid_group_topk_norm|gen_block_statistic|moe_pre_sorted|moe_pre_small|"
        r"moe_active_expert_balance)",
        "moe",
        _KO,
        role="open",
    ),
    Family(r"(^|::)moe_fc\w*|(^|::)moe_ffn\w*", "moe", _KO, role="expert"),
    Family(r"(^|::)moe_post\w*", "moe", _KO, role="close"),
    # -- KV-cache inserts of vllm-kunlun's attention paths ------------------------------------------
    Family(r"qkv_cache_insert|(^|::|_)kv_insert|dsv4_kv_insert|(^|::)cache_insert", "kv_cache", _KA),
    # -- linear / sparse attention kernels --------------------------------------------------------------
    Family(
        r"chunk_gated_delta_rule|fused_recurrent_gated_delta|fla_chunk|(^|::)kda_(fwd|decode|prefill|chunk)|"
        r"sparse_attn_indexer|indexer_decode|deepseek_v4_sparse_index|(^|::|\d)xfa(_|::|\d|$)|xft_?\w*attention",
        "attention",
        _KA + "; vllm_kunlun/ops/fla/, kda.py",
    ),
    # -- GEMMs whose names say "quant" (they are matmuls) -------------------------------------------------
    Family(
        r"smooth_quant_matmul\w*|gemm_i8_i8\w*|kunlun_scale_mm|(^|::)scale_mm_\w*|exllama\w*|"
        r"xft_?\w*(fc|gemm|matmul)|^xblas_xpu\d|^xblas\w*::|xdnn_?\w*fc",
        "gemm",
        _KD + "; " + _KO + "; " + _X3,
    ),
    # -- activations the generic words miss ----------------------------------------------------------------
    Family(r"quick_gelu|gelu_tanh_and_mul|fast_swiglu", "activation", _KO),
    # -- XPU runtime (xpukernel) kernels: the runtime's own tensor library ---------------------------------
    Family(r"^xpukernel_xpu\d::normal_philox", "sampling", _X3),
    Family(r"^xpukernel_xpu\d::(host2device|device2host|device2device|h2d|d2h|d2d)", "memcpy", _X3),
    Family(r"^xpukernel_xpu\d::constant$", "memset", _X3),
    Family(
        rf"^xpukernel_xpu\d::(?!\w*({_NOT_PLAIN}))\w+",
        "elementwise",
        _X3 + " (transpose, cast, broadcast_*, concat: element-wise, unless the name says otherwise)",
    ),
]

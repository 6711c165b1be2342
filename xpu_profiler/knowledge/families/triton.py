"""Triton kernels: the libraries' named kernels, and Inductor's generated names.

Triton kernels are named after their Python function: the head is the whole name. Rows for
the libraries whose names say which family they belong to, then the Inductor rule.

**Inductor** (``torch.compile``) names a generated kernel
``triton_{poi,red,per,tem,for,sca,spl,mix}_fused_<ops>_<n>``: the prefix is the kernel kind
(pointwise, reduction, persistent reduction, template, foreach...), ``<ops>`` the sorted,
``_``-joined names of the aten ops fused into it, ``<n>`` a counter (pytorch
``torch/_inductor/utils.py``: ``get_fused_kernel_name``, ``descriptive_names="original_aten"``).
``inductor_ops`` reads the op tokens (ops whose names hold ``_``, such as ``_to_copy`` or
``constant_pad_nd``, are matched whole, longest first); ``INDUCTOR`` decides by them. Custom
ops appear without their namespace when the fused region feeds them (``vllm.all_reduce`` →
``all_reduce``): those tokens name a *neighbour*, so an Inductor kernel is never communication
or attention from them — it cannot be a collective or an attention kernel. A MoE op's token
(``moe_forward``) does make it MoE: the kernel prepares that op's input (the pad of
``triton_poi_fused_constant_pad_nd_moe_forward_0``), as the eager ``FusedMoE.forward`` does.
"""

from __future__ import annotations

import re

from .base import Family, TokenRule

_TK = "triton-lang/triton python/triton_kernels/triton_kernels/"
_VLLM = "vllm-project/vllm "

ROWS: list[Family] = [
    # --- triton_kernels (gpt-oss MoE: matmul_ogs with fused SwiGLU / mxfp4 weights) -----------
    Family(r"^_(p_)?matmul_(ogs_)?", "moe", _TK + "matmul_ogs.py, matmul.py", role="expert"),
    Family(r"^_finalize_matmul|^_reduce_grouped", "moe", _TK + "matmul_ogs_details/_finalize_matmul.py", role="close"),
    Family(
        r"^_topk_forward$|^_sum_bitmatrix_|^_combined_routing_|^_routing_|^_expt_data|^pack_bitmatrix|"
        r"^_masked_topk_sum",
        "moe",
        _TK + "topk_details/_topk_forward.py, routing.py, tensor_details/bitmatrix_details/sum_bitmatrix_rows.py; "
        "vllm gpt-oss glue (_masked_topk_sum_kernel)",
        role="open",
    ),
    Family(r"^_compute_writeback_idx", "moe", _TK + "matmul_ogs_details/_common.py"),
    Family(r"^_swiglu_", "activation", _TK + "swiglu_details/_swiglu.py"),
    Family(r"^_downcast_to_mx|^_upcast_from_mx", "quantization", _TK + "numerics_details/mxfp.py"),
    # --- vLLM Triton kernels ----------------------------------------------------------------
    Family(r"^fused_moe_kernel", "moe", _VLLM + "vllm/model_executor/layers/fused_moe/fused_moe.py", role="expert"),
    Family(
        r"^kernel_unified_attention(_[23]d)?$|^(kernel_)?reduce_segments$|^kernel_paged_attention_2d$",
        "attention",
        _VLLM + "vllm/attention/ops/triton_unified_attention.py, chunked_prefill_paged_decode.py",
    ),
    Family(
        r"^_fwd_(grouped_)?kernel(_stage[12]|_alibi)?$",
        "attention",
        _VLLM + "vllm/attention/ops/prefix_prefill.py, triton_decode_attention.py; SGLang "
        "python/sglang/srt/layers/attention/triton_ops/decode_attention.py",
    ),
    Family(r"^_copy_page_indices_kernel$", "attention", _VLLM + "vllm/v1/attention/backends/flashinfer.py"),
    # --- SGLang Triton kernels ------------------------------------------------------------------
    Family(
        r"^create_flashinfer_kv_indices_triton$",
        "attention",
        "sgl-project/sglang python/sglang/srt/layers/attention/utils.py (attention metadata)",
    ),
]

# --- Inductor -------------------------------------------------------------------------------

INDUCTOR_NAME = re.compile(r"^triton_(poi|red|per|tem|for|sca|spl|mix)_fused_?(.*?)(?:_\d+)?$")
#: op names holding "_", matched whole (longest first) when reading the op tokens
MULTI_WORD_OPS = tuple(
    sorted(
        (
            "_to_copy",
            "constant_pad_nd",
            "bitwise_and",
            "bitwise_or",
            "bitwise_not",
            "bitwise_xor",
            "masked_fill",
            "all_reduce",
            "all_gather",
            "reduce_scatter",
            "moe_forward",
            "moe_forward_shared",
            "fused_moe",
            "index_put",
            "index_select",
            "scatter_add",
            "native_layer_norm",
            "native_layer_norm_backward",
            "_fused_rms_norm",
            "var_mean",
            "_softmax",
            "_log_softmax",
            "log_softmax",
            "embedding_dense_backward",
            "slice_scatter",
            "select_scatter",
            "unified_attention_with_output",
            "unified_attention",
            "_unsafe_view",
            "full_like",
            "zeros_like",
            "ones_like",
            "logical_and",
            "logical_not",
            "logical_or",
            "_scaled_mm",
            "_int_mm",
            "flex_attention",
            "flex_attention_backward",
            "silu_and_mul",
            "leaky_relu",
        ),
        key=len,
        reverse=True,
    )
)
_INDUCTOR_SRC = "pytorch torch/_inductor/utils.py (get_fused_kernel_name)"

INDUCTOR: list[TokenRule] = [
    TokenRule(
        frozenset(), frozenset({"mm", "addmm", "bmm", "baddbmm", "_scaled_mm", "_int_mm"}), "gemm", frozenset({"tem"})
    ),
    TokenRule(frozenset({"convolution"}), frozenset(), "convolution", frozenset({"tem"})),
    TokenRule(frozenset(), frozenset({"flex_attention", "flex_attention_backward"}), "attention", frozenset({"tem"})),
    TokenRule(frozenset({"mean", "pow", "rsqrt"}), frozenset(), "norm", note="RMSNorm: mean(x²), rsqrt"),
    TokenRule(frozenset({"var_mean", "rsqrt"}), frozenset(), "norm", note="LayerNorm"),
    TokenRule(frozenset(), frozenset({"native_layer_norm", "native_layer_norm_backward", "_fused_rms_norm"}), "norm"),
    TokenRule(frozenset({"cos", "sin"}), frozenset(), "rope", note="RoPE computed in the kernel"),
    TokenRule(frozenset(), frozenset({"embedding", "embedding_dense_backward"}), "embedding"),
    TokenRule(
        frozenset(),
        frozenset({"moe_forward", "moe_forward_shared", "fused_moe"}),
        "moe",
        note="prepares the MoE op's input",
    ),
    TokenRule(
        frozenset(),
        frozenset({"silu", "gelu", "relu", "sigmoid", "tanh", "softplus", "hardswish", "mish", "elu", "leaky_relu"}),
        "activation",
    ),
    TokenRule(frozenset(), frozenset(), "elementwise", note="any other fused element-wise or reduction kernel"),
]
INDUCTOR_SOURCE = _INDUCTOR_SRC


def inductor_ops(head: str) -> tuple[str, frozenset[str]] | None:
    """(kernel kind, op tokens) of an Inductor-generated name, else None:
    ``triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0`` → ("red", {_to_copy, add, mean, ...})."""
    m = INDUCTOR_NAME.match(head)
    if not m:
        return None
    body = m.group(2)
    toks: set[str] = set()
    i, n = 0, len(body)
    while i < n:
        for op in MULTI_WORD_OPS:
            if body.startswith(op, i) and (i + len(op) == n or body[i + len(op)] == "_"):
                toks.add(op)
                i += len(op)
                break
        else:
            if body[i] == "_":
                i += 1
                continue
            j = body.find("_", i)
            j = n if j < 0 else j
            toks.add(body[i:j])
            i = j
    return m.group(1), frozenset(toks)


def inductor_rule(head: str) -> TokenRule | None:
    """The first ``INDUCTOR`` rule an Inductor-generated name satisfies, else None."""
    got = inductor_ops(head)
    if got is None:
        return None
    kind, toks = got
    for rule in INDUCTOR:
        if rule.kinds and kind not in rule.kinds:
            continue
        if rule.all_of <= toks and (not rule.any_of or rule.any_of & toks):
            return rule
    return None

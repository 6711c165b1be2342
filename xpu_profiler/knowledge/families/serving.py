"""Serving engines' own kernels and custom ops: vLLM (``csrc/``, ``vllm::`` / ``_C::`` ops) and
SGLang (``sgl-kernel``). Their host ops (``vllm::moe_forward``, ``_C::rms_norm``) are read by the
same rows as their kernels: a custom op's name decides what it launches (the launching op chain)."""

from __future__ import annotations

from .base import Family

_V = "vllm-project/vllm csrc/"
_S = "sgl-project/sglang sgl-kernel/csrc/"

ROWS: list[Family] = [
    # --- MoE ------------------------------------------------------------------------------------
    Family(
        r"^vllm::moe::(topkGatingSoftmax|moeSoftmax|moeTopK|grouped_topk|moe_align_block_size|count_and_sort_expert|"
        r"sgl_moe_align)\w*|^vllm::(shuffleInputRows|moe_permute|\w*expandInputRows)\w*|^(\w+::)?moe_fused_gate\w*",
        "moe",
        _V
        + "moe/topk_softmax_kernels.cu, moe/moe_align_sum_kernels.cu, moe/grouped_topk_kernels.cu, moe/moe_permute_unpermute_op.cu; "
        + _S
        + "moe/moe_fused_gate.cu",
        role="open",
    ),
    Family(
        r"^vllm::moe::moe_sum\w*|^(\w+::)?moe_sum_reduce\w*|^vllm::\w*moe_unpermute\w*",
        "moe",
        _V + "moe/moe_align_sum_kernels.cu (moe_sum_kernel); " + _S + "moe/moe_sum_reduce.cu",
        role="close",
    ),
    Family(r"^marlin_moe_wna16::", "moe", _V + "moe/marlin_moe_wna16/", role="expert"),
    Family(r"^vllm::moe::|^vllm::compute_expert_offsets", "moe", _V + "moe/"),
    # --- attention, KV cache, rope, norm, activation, quantization, GEMM -------------------------------
    Family(r"^vllm::(paged_attention_v[12]\w*|merge_attn_states\w*)", "attention", _V + "attention/"),
    Family(
        r"^vllm::(reshape_and_cache|concat_and_cache|copy_blocks|swap_blocks)\w*", "kv_cache", _V + "cache_kernels.cu"
    ),
    Family(r"^vllm::(batched_)?rotary_embedding\w*", "rope", _V + "pos_encoding_kernels.cu"),
    Family(r"^vllm::\w*rms_norm\w*", "norm", _V + "layernorm_kernels.cu, layernorm_quant_kernels.cu"),
    Family(r"^vllm::\w*(act_and_mul|silu_and_mul|gelu_and_mul)\w*", "activation", _V + "activation_kernels.cu"),
    Family(
        r"^(marlin|machete)::|^vllm::\w*(gemm|scaled_mm|matmul)",
        "gemm",
        _V + "quantization/gptq_marlin/, quantization/machete/, quantization/cutlass_w8a8/",
    ),
    Family(
        r"^vllm::\w*(quant|segmented_max_reduction)\w*",
        "quantization",
        _V + "quantization/fp8/common.cu, quantization/compressed_tensors/int8_quant_kernels.cu",
    ),
]

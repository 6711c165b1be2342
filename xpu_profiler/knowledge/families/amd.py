"""AMD kernel libraries (ROCm): hipBLASLt/Tensile, RCCL, Composable Kernel, aiter, vLLM's ROCm
kernels. ROCm traces keep many names mangled (``_ZN5aiter…``); the head is their nested name,
and ``ck_tile::kentry<N, Kernel>`` is unwrapped to ``Kernel``."""

from __future__ import annotations

from .base import Family

_CK = "ROCm/composable_kernel "
_AITER = "ROCm/aiter "
_TENSILE = (
    "Tensile solution names (Cijk = C indices i, j free, k batch; Alik/Bljk = operand index orders; "
    "MT = macro tile; ISA942 = gfx942): rocm.docs.amd.com/projects/Tensile/en/latest/src/conceptual/kernel-parameters.html"
)

ROWS: list[Family] = [
    # --- communication ------------------------------------------------------------------------
    Family(
        r"^mscclKernel_", "communication", "ROCm/rccl src/device/msccl_kernel_impl.h (mscclKernel_{op}_{type}_{proto})"
    ),
    Family(
        r"^quickreduce::|^aiter::\w*(all_?reduce|allgather|all_?gather|reduce_scatter)\w*",
        "communication",
        _AITER + "csrc/include/quick_all_reduce.cuh, csrc/kernels/custom_all_reduce.cu",
    ),
    Family(r"^mori::", "communication", "ROCm/mori (expert-parallel dispatch/combine)", collective="all_to_all"),
    # --- MoE: aiter routing and fused MoE, CK MoE GEMMs --------------------------------------------
    Family(
        r"^aiter::(topksoftmax|topk_softmax|biased_grouped_topk|grouped_topk|moe_fused_gate|topk_gating|"
        r"moe_align_block_size|\w*moe_sort|\w*moe_sorting)\w*",
        "moe",
        _AITER
        + "hsa/gfx942/topksoftmax/topksoftmax.csv (_ZN5aiter19topksoftmax_4x128x4E), csrc/kernels/topk_softmax_kernels.cu, "
        "csrc/kernels/moe_align_block_size_kernels.cu",
        role="open",
    ),
    Family(r"^aiter::moe_sum", "moe", _AITER + "csrc/kernels/moe_op.cu", role="close"),
    Family(
        r"^aiter::(fmoe|ck_moe)\w*",
        "moe",
        _AITER + "hsa/gfx942/fmoe/*.csv (assembly fused MoE: one kernel per block), csrc/ck_gemm_moe_2stages_codegen",
        role="expert",
    ),
    Family(
        r"^ck_tile::(MoeSortingKernel|MoeSorting\w*)",
        "moe",
        _CK + "include/ck_tile/ops/fused_moe/kernel/moe_sorting_kernel.hpp",
        role="open",
    ),
    Family(
        r"^ck_tile::(FusedMoeGemm\w*|MoeFlatmm\w*|\w*Moe\w*Gemm\w*)|^ck::kernel_moe_(mx)?gemm",
        "moe",
        _CK + "include/ck_tile/ops/fused_moe/, include/ck/tensor_operation/gpu/grid/gridwise_moe_gemm.hpp "
        "(2-stage MoE: the second GEMM does the weighted sum, there is no separate finalize kernel)",
        role="expert",
    ),
    # --- KV-cache writes (before attention: fused MLA rope + cache writes name "mla") ---------------------
    Family(r"^aiter::\w*(and_cache|_cache_)\w*", "kv_cache", _AITER + "csrc/kernels/cache_kernels.cu"),
    # --- attention ------------------------------------------------------------------------------------
    Family(r"^ck_tile::Fmha\w*", "attention", _CK + "include/ck_tile/ops/fmha/kernel/"),
    Family(
        r"^(bwd_kernel_(fuse|dk_dv|dq)|bwd_preprocess(_varlen)?)$",
        "attention",
        "ROCm/aotriton tritonsrc/ (PyTorch's flash attention on ROCm: attn_fwd, bwd_kernel_dk_dv, bwd_kernel_dq, "
        "bwd_kernel_fuse, bwd_preprocess)",
    ),
    Family(
        r"^aiter::(pa_|paged_attention|mla_|fmha_|gqa_|kn_mla|\w*_mla_)\w*|^paged_attention_ll4mi",
        "attention",
        _AITER + "hsa/gfx942/{pa,mla,fmha_v3_fwd}/*.csv, csrc/kernels/attention*.cu; vllm-project/vllm "
        "csrc/rocm/attention.cu (paged_attention_ll4mi_QKV_mfma16_kernel, _reduce_kernel)",
    ),
    # --- normalisation (aiter fuses the quant of the next GEMM's input into its norms) -------------------
    Family(
        r"^ck_tile::(Rmsnorm2d|Layernorm2d)\w*", "norm", _CK + "include/ck_tile/ops/{rmsnorm2d,layernorm2d}/kernel/"
    ),
    Family(
        r"^aiter::\w*(rms_?norm|layer_?norm|groupnorm)\w*",
        "norm",
        _AITER + "csrc/kernels/rmsnorm_quant_kernels.cu (add_rmsnorm_quant_kernel: norm first, quant of its output)",
    ),
    # --- rope, activation, sampling, GEMM, quantization of aiter ---------------------------------------------
    Family(r"^aiter::\w*rope\w*", "rope", _AITER + "csrc/kernels/rope/"),
    Family(
        r"^aiter::\w*(act_and_mul|silu|gelu|swiglu)\w*", "activation", _AITER + "csrc/kernels/activation_kernels.cu"
    ),
    Family(r"^aiter::\w*sampl\w*", "sampling", _AITER + "csrc/kernels/sample_kernels.cu"),
    Family(
        r"^aiter::\w*gemm\w*|^aiter::\w*(f4|f8|fp8|i8|bf16)gemm",
        "gemm",
        _AITER + "hsa/gfx942/*gemm*/*.csv, csrc/ck_gemm_a8w8*",
    ),
    Family(r"^aiter::\w*quant\w*", "quantization", _AITER + "csrc/kernels/quant_kernels.cu"),
    # --- GEMM: hipBLASLt / Tensile / rocBLAS, Composable Kernel ---------------------------------------
    Family(r"^Cijk_|^Cij_|^rocblas_\w*gemm", "gemm", _TENSILE),
    Family(
        r"^ck_tile::(GemmKernel|FlatmmKernel|\w*Gemm\w*)|^ck::kernel_(batched_)?gemm\w*|^ck::\w*gemm\w*",
        "gemm",
        _CK + "include/ck_tile/ops/gemm/kernel/, include/ck/tensor_operation/gpu/grid/",
    ),
    Family(
        r"(^|::)(wvSplitK\w*|LLMM1)",
        "gemm",
        "vllm-project/vllm csrc/rocm/skinny_gemms.cu (skinny GEMMs for small batches)",
    ),
    # --- sgl-kernel's HIP build -------------------------------------------------------------------------
    Family(
        r"^sgl_hip::activation::",
        "activation",
        "sgl-project/sglang sgl-kernel/csrc/elementwise/activation.cu (built for HIP as sgl_hip::)",
    ),
]

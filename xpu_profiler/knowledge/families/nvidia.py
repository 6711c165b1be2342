"""NVIDIA kernel libraries: collectives, GEMM, attention, MoE and their helpers.

Rows are anchored on the library's namespace or generated-name prefix. Closed libraries
(cuBLAS, cuDNN) are known by the names their kernels carry in profiles, with a public document
that shows them.
"""

from __future__ import annotations

from .base import Family

_NCCL = "NVIDIA/nccl src/device/generate.py (ncclDevKernel_{Coll}_{Op}_{type}_{algo}_{proto}), src/device/symmetric/generate.py"
_FI = "flashinfer-ai/flashinfer include/flashinfer/"
_TRT = "NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/"
_FA = "Dao-AILab/flash-attention "
_CUBLAS = (
    "closed source; names as profiles show them: NVIDIA forum 'Switch from sm90_xmma_gemm…/cutlass_80_tensorop… "
    "(CUDA 12.1) to nvjet_tst… (CUDA 12.8)' (forums.developer.nvidia.com/t/348958), NVIDIA/cutlass#177, #999"
)

ROWS: list[Family] = [
    # --- communication -----------------------------------------------------------------------
    Family(r"^nccl(Dev|Symk)?(Dev)?Kernel_", "communication", _NCCL),
    Family(
        r"(^|::)cross_device_reduce_[12]stage",
        "communication",
        "vllm-project/vllm csrc/custom_all_reduce.cuh; ROCm/aiter csrc/kernels/custom_all_reduce.cu",
        collective="all_reduce",
    ),
    Family(
        r"(^|::)(multimem_\w+|one_shot_all_reduce\w*|two_shot_all_reduce\w*)_kernel$",
        "communication",
        "pytorch torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu",
        collective="all_reduce",
    ),
    Family(
        r"(^|::)allreduce_fusion_kernel|lamport|^flashinfer::trtllm_(allreduce|moe_allreduce|mnnvl)\w*::|"
        r"^tensorrt_llm::kernels::(ar_fusion|reduce_fusion|mnnvl)\w*::",
        "communication",
        _FI
        + "comm/trtllm_allreduce_fusion.cuh, trtllm_moe_allreduce_fusion.cuh, trtllm_mnnvl_allreduce.cuh; "
        + _TRT
        + "communicationKernels/",
        collective="all_reduce",
        note="all-reduce fused with RMSNorm: communication (the collective is what it waits on)",
    ),
    Family(
        r"^(deep_ep|dpsk::ep)::",
        "communication",
        "deepseek-ai/DeepEP csrc/kernels/{intranode,internode,internode_ll,layout}.cu (dispatch, combine, "
        "notify_dispatch, cached_notify, get_dispatch_layout); deepseek-ai/profile-data train.json (dpsk::ep::)",
        collective="all_to_all",
        note="expert-parallel dispatch/combine",
    ),
    Family(r"^pplx::", "communication", "perplexityai/pplx-kernels csrc/all_to_all/", collective="all_to_all"),
    Family(
        r"^nvshmemi?_",
        "communication",
        "NVSHMEM device API (docs.nvidia.com/nvshmem/api): nvshmem_* / nvshmemi_* kernels",
        collective="all_to_all",
        note="one-sided transfers of expert-parallel all-to-all",
    ),
    # --- MoE: trtllm-gen (FlashInfer / TensorRT-LLM) ---------------------------------------------
    Family(
        r"^moe::dev::routing::",
        "moe",
        _FI + "trtllm/fused_moe/RoutingKernel.cuh; " + _TRT + "trtllmGenKernels/blockScaleMoe/RoutingLlama4.cu",
        role="open",
    ),
    Family(r"^moe::dev::finalize::", "moe", _FI + "trtllm/fused_moe/DevKernel.h (finalizeKernel*)", role="close"),
    Family(r"^moe::dev::", "moe", _FI + "trtllm/fused_moe/DevKernel.h (activation, convertsf, permute)"),
    Family(
        r"^bmm_\w*dynbatch",
        "moe",
        _FI + "trtllm/batched_gemm/trtllmGen_bmm_export/flashinferMetaInfo.h (bmm_<C>_<A><B>_<acc>_t…; "
        "dynBatch = per-expert token counts)",
        role="expert",
    ),
    Family(
        r"^bmm_",
        "gemm",
        _FI + "trtllm/batched_gemm/; " + _TRT + "../thop/fp8BatchedGemmTrtllmGen.cpp (batched GEMM without dynBatch)",
        note="inside an MoE block it is an expert GEMM (structure rule)",
    ),
    Family(r"^gemm_\w+_sm1\d\d[a-z]?$|^GemmGatedActKernel_", "gemm", _FI + "trtllm/gemm/trtllmGen_gemm_export/"),
    # --- MoE: TensorRT-LLM CUTLASS MoE, CUTLASS grouped GEMM ---------------------------------------
    Family(
        r"^(tensorrt_llm::kernels::(cutlass_kernels::)?)?(expandInputRowsKernel|fusedBuildExpertMapsSortFirstToken\w*|"
        r"\w*ExpertPrefixSum\w*|customMoeRouting\w*|topkGatingSoftmax\w*)",
        "moe",
        _TRT + "cutlass_kernels/moe_gemm/, mixtureOfExperts/moe_kernels.cu",
        role="open",
    ),
    Family(r"(^|::)finalizeMoeRoutingKernel", "moe", _TRT + "mixtureOfExperts/moe_kernels.cu", role="close"),
    Family(
        r"^tensorrt_llm::kernels::(cutlass_kernels::)?doActivation", "moe", _TRT + "mixtureOfExperts/moe_kernels.cu"
    ),
    Family(
        r"^cutlass::gemm::kernel::\w+",
        "moe",
        "NVIDIA/cutlass include/cutlass/gemm/group_array_problem_shape.hpp (GroupProblemShape: one GEMM per expert)",
        role="expert",
        args=r"GroupProblemShape",
    ),
    # --- MoE / GEMM: DeepGEMM and DeepSeek's internal grouped GEMM --------------------------------
    Family(
        r"^deep_gemm::\w*mqa_logits",
        "attention",
        "deepseek-ai/DeepGEMM deep_gemm/include/deep_gemm/impls/ (the indexer's MQA logits)",
    ),
    Family(
        r"^deep_gemm::",
        "moe",
        "deepseek-ai/DeepGEMM deep_gemm/include/deep_gemm/common/types.cuh (enum GemmType: 1 MGroupedContiguous, "
        "2 MGroupedMasked, 3 KGroupedContiguous, 5/6 …WithPsumLayout)",
        role="expert",
        args=r"GemmType\)[12356]\b|GemmType::[MK]Grouped",
    ),
    Family(
        r"^deep_gemm::", "gemm", "deepseek-ai/DeepGEMM deep_gemm/include/deep_gemm/impls/ (GemmType Normal, Batched)"
    ),
    Family(
        r"^dpsk::grouped_gemm::\w+::[mk]_grouped_",
        "moe",
        "deepseek-ai/profile-data train.json (m_grouped_* GEMMs run the routed experts)",
        role="expert",
    ),
    Family(
        r"^dpsk::grouped_gemm::",
        "gemm",
        "deepseek-ai/profile-data train.json (fp8_ptp128c: dense projections; the namespace names the library)",
    ),
    # --- attention ----------------------------------------------------------------------------------
    Family(
        r"^(pytorch_flash::|flash::)?flash_(fwd|bwd)\w*kernel|^flash::",
        "attention",
        _FA + "csrc/flash_attn/src/flash_fwd_kernel.h, hopper/flash_fwd_kernel_sm90.h, flash_fwd_combine_kernel.h, "
        "flash_bwd_kernel_sm90.h",
    ),
    Family(
        r"flash_fwd_splitkv_mla|^flashmla|^cutlass::fmha::|sm100fmhamla|^fmha_",
        "attention",
        "deepseek-ai/FlashMLA csrc/; NVIDIA/cutlass examples/77_blackwell_fmha",
    ),
    Family(
        r"^fmhaSm\d+\w*Kernel|^fmha_v2_|^xqa|^kernel_mha|^tensorrt_llm::kernels::(mmha|xqa)",
        "attention",
        _FI
        + "trtllm/fmha/fmhaKernels.cuh; "
        + _TRT
        + "contextFusedMultiHeadAttention, decoderMaskedMultiheadAttention",
    ),
    # --- FlashInfer -----------------------------------------------------------------------------------
    Family(
        r"^flashinfer::\w*(AppendPagedKVCache|append_paged_kv_cache)\w*",
        "kv_cache",
        _FI + "page.cuh, pos_enc.cuh (RopeQuantizeAppendPagedKVCache: RoPE fused with the KV write)",
    ),
    Family(r"^flashinfer::norm::", "norm", _FI + "norm.cuh"),
    Family(r"^flashinfer::sampling::", "sampling", _FI + "sampling.cuh"),
    Family(r"^flashinfer::activation::", "activation", _FI + "activation.cuh"),
    Family(r"^flashinfer::\w*(rotary|rope)", "rope", _FI + "pos_enc.cuh"),
    Family(
        r"^flashinfer::(Batch|Single|Persistent|POD|\w*MergeState|\w*Attention|\w*MLA)",
        "attention",
        _FI + "attention/{prefill,decode,cascade,mla}.cuh",
    ),
    # --- TensorRT-LLM helpers -------------------------------------------------------------------------
    Family(
        r"^tensorrt_llm::kernels::(quantize_with_block_size|\w*quantiz\w*|\w*fp4_quant\w*)",
        "quantization",
        _FI + "comm/trtllm/kernels/quantization.cuh (called by flashinfer.mxfp8_quantize)",
    ),
    # --- convolution and normalisation of cuDNN, Transformer Engine / apex --------------------------------
    Family(r"^cudnn::bn_|^cudnn::batchnorm", "norm", "cuDNN (closed); names as in the HTA test traces"),
    Family(
        r"^cudnn|^cask_cudnn|scudnn|^sm\d+_xmma_(fprop|dgrad|wgrad)|implicit_gemm|winograd|(dgrad|wgrad)\w*engine",
        "convolution",
        "cuDNN (closed); names as in the HTA test traces (cuda-ns-resolution)",
    ),
    Family(
        r"^layer_norm::ln_|^transformer_engine::\w*(norm)",
        "norm",
        "NVIDIA/apex csrc/layer_norm (ln_fwd_kernel, ln_bwd_kernel); NVIDIA/TransformerEngine transformer_engine/common/normalization",
    ),
    # --- GEMM: cuBLAS / cuBLASLt, CUTLASS ---------------------------------------------------------------
    Family(
        r"^sm\d+_xmma_\w*gemm|^nvjet_|^(ampere|volta|turing|maxwell|pascal|hopper|sm\d+)_\w*gemm|gemm\w*_cublas$|"
        r"^(cublasLt::)?splitKreduce_kernel|^cublasLt::|^gemv\w*_kernel|^internal::gemvx|^gemmSN_|^gemmk1_kernel|"
        r"^sgemm_|^scal_kernel|^epilogue::impl::globalKernel",
        "gemm",
        _CUBLAS,
    ),
    Family(
        r"^cutlass_\d+_\w*gemm|^cutlass3x_|^cutlass::gemm::|^cutlass_\w*gemm",
        "gemm",
        "NVIDIA/cutlass include/cutlass/device_kernel.h, tools/library/scripts/gemm_operation.py (procedural names)",
    ),
    # --- nvFuser: generated kernels named by the scheduler that made them ---------------------------------
    Family(
        r"(^|::)nvfuser_(pointwise|transpose|reduction|inner_persistent|outer_persistent|inner_outer_persistent|"
        r"persistent|resize)_f\d",
        "elementwise",
        "NVIDIA/Fuser csrc/scheduler/ (SchedulerType: pointwise, reduction, inner/outer persistent, transpose; "
        "kernels named nvfuser_<scheduler>_f<fusion>_c<...>: fused element-wise and reduction work, "
        "the persistent ones softmax and normalisation)",
    ),
    Family(
        r"(^|::)nvfuser_matmul_f\d",
        "gemm",
        "NVIDIA/Fuser csrc/scheduler/matmul.cpp (SchedulerType::Matmul)",
    ),
]

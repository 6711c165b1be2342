"""gen_trace's tables: the model and device constants (Qwen2.5-7B-like, bf16, one H100), the
kernel names and launch resources, the CUPTI callback ids, and Kineto's ``ts`` format."""

from __future__ import annotations

# --------------------------------------------------------------------------
# Model and device constants (Qwen2.5-7B-like, bf16, one H100 SXM)
# --------------------------------------------------------------------------
LAYERS = 28
HIDDEN = 3584
INTER = 18944
HEADS = 28
KV_HEADS = 4
HEAD_DIM = 128
QKV_N = HIDDEN + 2 * KV_HEADS * HEAD_DIM  # 4608
VOCAB = 152064
KV_BYTES_PER_TOKEN_LAYER = 2 * KV_HEADS * HEAD_DIM * 2  # K and V, bf16
NUM_SMS = 132
HBM_BYTES_PER_NS = 2600.0  # ~2.6 TB/s achieved
FLOP_PER_NS = 650_000.0  # ~650 TFLOP/s achieved bf16
PCIE_BYTES_PER_NS = 25.0

BASE_TIME_NS = 1764633600000000000  # 2025-12-02T00:00:00Z
T0_NS = 45_296_123_456_789  # first event, relative to the base
PID = 161803  # worker process (= main thread id)
TID = 161803
DEVICE = 0
STREAM = 7

BF16 = '"c10::BFloat16"'
EMPTY = '""'

# Kernel names. The launch templates below refer to them by key.
KERNELS = {
    "gemm_small": "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
    "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
    "gemm_mid": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cublas",
    "gemm_large": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
    "execute_segment_k_off_kernel__5x_cublas",
    "splitk": "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, "
    "true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, "
    "__nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, "
    "void*, long, float*, int*)",
    "rms_norm": "void vllm::rms_norm_kernel<c10::BFloat16, 8, 3>(c10::BFloat16*, c10::BFloat16 const*, long, "
    "c10::BFloat16 const*, float, int, int)",
    "fused_add_rms_norm": "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, "
    "c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
    "rotary": "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, "
    "c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
    "reshape_and_cache": "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, "
    "(vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, "
    "__nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, "
    "float const*, float const*)",
    "flash_splitkv": "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
    "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, "
    "false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
    "flash_combine": "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, "
    "false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, "
    "cutlass::bfloat16_t> >, 4, 2, true>(flash::Flash_fwd_params)",
    "flash_prefill": "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, "
    "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, "
    "true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)",
    "silu_and_mul": "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel"
    "<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
    "embedding": "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned "
    "int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
    "at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
    "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, "
    "long)",
    "topk_softmax": "void vllm::moe::topkGatingSoftmax<8, 64, 4, 16, int>(float const*, bool const*, float*, "
    "int, int*, int*, int, int, int)",
    "triton_softmax": "triton_red_fused__softmax__to_copy_div_0",
    "triton_argmax": "triton_red_fused_argmax_1",
    "triton_gather": "triton_poi_fused_gather_index_put_2",
    "nccl_allreduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
}

# (registers per thread, shared memory, block dims) per kernel key
KERNEL_RES = {
    "gemm_small": (230, 73728, (128, 1, 1)),
    "gemm_mid": (168, 213248, (384, 1, 1)),
    "gemm_large": (168, 232448, (384, 1, 1)),
    "splitk": (32, 0, (32, 16, 1)),
    "rms_norm": (32, 0, (256, 1, 1)),
    "fused_add_rms_norm": (28, 0, (256, 1, 1)),
    "rotary": (40, 0, (512, 1, 1)),
    "reshape_and_cache": (30, 0, (512, 1, 1)),
    "flash_splitkv": (255, 49152, (128, 1, 1)),
    "flash_combine": (64, 16512, (128, 1, 1)),
    "flash_prefill": (255, 65536, (128, 1, 1)),
    "silu_and_mul": (18, 0, (1024, 1, 1)),
    "embedding": (36, 0, (128, 4, 1)),
    "topk_softmax": (40, 0, (32, 4, 1)),
    "triton_softmax": (32, 16, (128, 1, 1)),
    "triton_argmax": (26, 16, (128, 1, 1)),
    "triton_gather": (20, 0, (256, 1, 1)),
    "nccl_allreduce": (96, 4416, (640, 1, 1)),
}

# CUPTI callback ids (cbid) as Kineto writes them
CBID_LAUNCH = 211
CBID_MEMCPY = 41
CBID_MEMSET = 56
CBID_SYNC = 131
CBID_CU_LAUNCH = 307


def _ts(t: int) -> str:
    return f"{t // 1000}.{t % 1000:03d}"

"""gen_ranks's tables: the model (Llama-3.1-8B-like, bf16; shapes per rank), the streams, process
ids, the NVLink and NCCL figures, the profilers' start stagger, the MoE layout, and gen_trace's kernel
tables with the kernels a multi-rank run adds."""

from __future__ import annotations

from . import trace_tables

# Llama-3.1-8B-like, bf16; shapes below are per rank (divided by the TP size)
HIDDEN = 4096
INTER = 14336
HEADS = 32
KV_HEADS = 8
HEAD_DIM = 128
VOCAB = 128256
COMPUTE_STREAM = 7
NCCL_STREAM = 20
PID0 = 240100  # rank r's worker process id is PID0 + r
NVLINK_BYTES_PER_NS = 150.0  # achieved all-reduce bus bandwidth
NCCL_LATENCY_NS = 9_000
PROFILER_START_STAGGER_NS = 7_000_000_000  # rank r's baseTimeNanoseconds is r * 7 s earlier
KERNELS = {
    **trace_tables.KERNELS,
    "nccl_allgather": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "fused_moe": "fused_moe_kernel",
}
KERNEL_RES = {
    **trace_tables.KERNEL_RES,
    "nccl_allgather": trace_tables.KERNEL_RES["nccl_allreduce"],
    "fused_moe": (128, 32768, (128, 1, 1)),
}
# --moe: each MLP is an expert-parallel MoE layer of MOE_EXPERTS experts (top-MOE_TOPK),
# the experts spread evenly over the ranks; a "hot" rank gets a larger share of the tokens
MOE_EXPERTS = 64
MOE_TOPK = 8
MOE_INTER = 1408

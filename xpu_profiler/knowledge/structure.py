"""The structure rules: what a kernel's place in its stream's sequence says of its fused op.

Read by ``aggregate/structure.py``; the kernels' roles come from the family tables
(``families``: ``role`` open / expert / close). Each rule, with the evidence it rests on:

**MoE block.** On one stream, a block opens at an MoE *opener* (routing, top-k, sort/align,
permute: trtllm-gen ``moe::dev::routing``, aiter ``topksoftmax``, ck_tile ``MoeSorting``,
vLLM ``topkGatingSoftmax`` / ``moe_align_block_size``, triton_kernels ``_topk_forward``,
Kunlun ``moe_softmax_topk_norm``...) and closes at the last MoE-named kernel (a closer such as
``moe::dev::finalize``, ``moe_sum``, ``_finalize_matmul``, or the last expert GEMM when the
library has no finalize kernel: CK's 2-stage MoE, aiter's 1-stage ``fmoe``) before the next
kernel that cannot belong to an MoE layer (``MOE_STOP``: norm, attention), before the next
opener that follows an expert GEMM (the next layer's block: an all-reduce fused with the norm
is no stop), and within ``MOE_MAX_KERNELS``. The block must hold an expert GEMM or a GEMM. Every kernel inside is MoE
whatever its name (the trtllm-gen ``bmm_*`` expert GEMMs of a B300 run, the SwiGLU and quant
kernels between two expert GEMMs) except communication (expert-parallel dispatch/combine keep
their category) and copies. Up to ``MOE_PROLOGUE_KERNELS`` kernels right before the opener
whose names say only ``MOE_PROLOGUE`` (the pad and input quant of gpt-oss's MoE: FillFunctor,
copy, ``quantize_with_block_size``) belong to the block too; the router GEMM before them does not.
Sources: the kernel sequences of the shared traces (vLLM gpt-oss on B200 and MI300X, SGLang
Qwen3-30B-A3B on MI300X, DeepSeek-V3 training on H800) and the libraries' MoE paths
(flashinfer ``trtllm_fp4_block_scale_moe``, vLLM ``fused_moe``, aiter/CK 2-stage MoE).

**All-reduce staging copies.** A device-to-device copy right before or after a collective
kernel on the same stream is that collective's staging copy (vLLM's symmetric-memory
all-reduce copies its input in and its output out: ``vllm::all_reduce > aten::copy_`` in the
eager B200 trace): communication.

**Attention pre-processing.** Between a GEMM and the next attention kernel (the QKV
projection and the attention of one layer), an Inductor kernel whose op tokens say nothing
decisive (``triton_poi_fused_cat_3``: RoPE compiled from ``cat`` of rotated halves) is the
layer's RoPE when no kernel in that window is a RoPE kernel by name (vLLM Llama on H100,
CUDA graphs: ``…splitKreduce → triton_poi_fused_cat_3 → triton_poi_fused_cat_4 →
reshape_and_cache_flash → FlashAttnFwdSm90``).
"""

from __future__ import annotations

import re

#: fused ops that end an MoE block: an MoE layer runs none of them
MOE_STOP = ("norm", "attention")
#: fused ops (by name) a kernel right before an opener may have and still prepare the MoE input
MOE_PROLOGUE = ("elementwise", "quantization", "memset", "other")
MOE_PROLOGUE_KERNELS = 4
#: the most kernels one block spans (an opener whose closer never comes swallows no layer)
MOE_MAX_KERNELS = 64
#: fused ops the MoE block leaves as they are
MOE_KEEP = ("communication", "memcpy")

#: a device-to-device copy, as the runtimes name it
DEVICE_COPY = re.compile(r"DtoD|Device -> Device|D2D|device2device|PtoP|Peer", re.IGNORECASE)

#: kernels between a GEMM and an attention kernel that the attention rule may read
ATTENTION_PRE_KERNELS = 8

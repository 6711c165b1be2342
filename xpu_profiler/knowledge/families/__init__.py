"""Kernel families per vendor: declarative rows, each with its source, matched on a name's head.

One module per vendor or origin, each a list of ``Family`` rows (first match wins, in the
order of ``TABLES``):

========  =====================================================================================
table     what it knows
========  =====================================================================================
runtime   copies and fills, by the names every runtime gives them (``Memcpy DtoD``, ``Memset``)
triton    Triton kernels of serving and kernel libraries (``triton_kernels``, vLLM, SGLang),
          and Inductor's generated ``triton_*_fused_<ops>`` names read from their op tokens
nvidia    NCCL, NVSHMEM, cuBLAS/cuBLASLt, CUTLASS, FlashAttention, FlashMLA, FlashInfer,
          TensorRT-LLM / trtllm-gen, DeepGEMM, DeepEP, cuDNN, Transformer Engine
amd       hipBLASLt/Tensile, RCCL, QuickReduce, MoRI, Composable Kernel and ck_tile, aiter,
          vLLM's ROCm kernels, sgl-kernel's HIP kernels
serving   vLLM and SGLang kernels and custom ops (``vllm::*``, ``_C::*``, ``sgl_kernel::*``)
intel     torch-xpu-ops (SYCL), oneDNN, IPEX (before aten: ``at::native::xpu::`` is theirs)
aten      PyTorch ATen kernels (CUDA/HIP functors, reductions, indexing) and ``aten::`` ops,
          fbgemm_gpu
kunlun    Kunlun P800: XCCL/BKCL, XBLAS, vllm-kunlun ops, the XPU runtime's kernels
aiu       IBM AIU (Spyre): its runtime's compute slices and RDMA transfers
words     the generic vocabulary, in precedence order, for names no library row knows
========  =====================================================================================

A row's ``regex`` is searched (case-insensitively) in the name's *head*
(``kernel_heads.heads``: the qualified function name without template arguments, argument
lists or return type; launcher templates unwrapped), never in the whole name: template
arguments are not families. A row may add a documented *discriminator* (``args``), searched in
the whole name only when the head matched (DeepGEMM's ``GemmType``, CUTLASS's
``GroupProblemShape``, ATen's ``ArgMaxOps``). ``on="name"`` rows (copies and fills, users'
rows) search the whole name.

``role`` marks the kernels the MoE block rule (``aggregate/structure.py``) reads: ``open``
(routing, top-k, sort/align, permute), ``expert`` (expert GEMMs), ``close`` (finalize,
unpermute, weighted sum). ``kind`` gives a communication row's collective kind for names that
carry no collective word (DeepEP's ``notify_dispatch``, NVSHMEM).

Adding a family is a row in its vendor's table and a name in ``tests/test_families.py``.
"""

from __future__ import annotations

from . import aiu, amd, aten, intel, kunlun, nvidia, runtime, serving, triton, words
from .base import ROLES, Family, TokenRule

__all__ = ["ROLES", "Family", "TokenRule", "rows", "tables"]


def tables() -> list[tuple[str, list[Family]]]:
    """The built-in tables, in the order they are searched."""
    return [
        ("runtime", runtime.ROWS),
        ("triton", triton.ROWS),
        ("nvidia", nvidia.ROWS),
        ("amd", amd.ROWS),
        ("serving", serving.ROWS),
        ("intel", intel.ROWS),
        ("aten", aten.ROWS),
        ("kunlun", kunlun.ROWS),
        ("aiu", aiu.ROWS),
        ("words", words.ROWS),
    ]


def rows() -> list[Family]:
    """Every built-in row, in search order."""
    return [r for _, t in tables() for r in t]

"""Intel GPUs (XPU): torch-xpu-ops' SYCL kernels, oneDNN, IPEX. No shared trace of these; the
rows follow the libraries' sources and stay narrow (the generic words catch the rest)."""

from __future__ import annotations

from .base import Family

ROWS: list[Family] = [
    Family(
        r"^gpu::xetla::\w*fmha|^gpu::xetla::\w*attention|^\w*chunked_prefill\w*",
        "attention",
        "intel/intel-extension-for-pytorch csrc/gpu/aten/operators/xetla/ (XeTLA flash attention)",
    ),
    Family(
        r"^gpu::xetla::\w*gemm|^(xe|gen\d+)_\w*gemm|^gemm_kernel$|^ref_gemm",
        "gemm",
        "uxlfoundation/oneDNN src/gpu/intel/gemm/jit/ (nGEN JIT GEMM); IPEX xetla GEMMs",
    ),
    Family(
        r"^at::native::xpu::\w*(layer_?norm|rms_?norm)\w*",
        "norm",
        "intel/torch-xpu-ops src/ATen/native/xpu/sycl/LayerNormKernels.cpp",
    ),
    Family(
        r"^at::native::xpu::",
        "elementwise",
        "intel/torch-xpu-ops src/ATen/native/xpu/sycl/Loops.h (VectorizedElementwiseKernel, ReduceKernel, IndexKernel)",
    ),
]

"""Copies and fills, as the runtimes and profilers name them (searched in the whole name: a
device copy has no C++ head). The readers also mark them by their event category; these rows
name the runtime calls and log lines that carry no category."""

from __future__ import annotations

from .base import Family

_KINETO = "pytorch/kineto libkineto/src/CuptiActivity.cpp (Memcpy/Memset activity names)"

ROWS: list[Family] = [
    Family(
        r"^memcpy|^Memcpy |memcpy(htod|dtoh|dtod|async)|^cudaMemcpy|^hipMemcpy|^xpu_memcpy",
        "memcpy",
        _KINETO + "; CUDA Runtime API (cudaMemcpy*), HIP API (hipMemcpy*), Kunlun XPU runtime (xpu_memcpy)",
        on="name",
    ),
    Family(r"^memset|^Memset |^cudaMemset|^hipMemset", "memset", _KINETO + "; CUDA/HIP runtime APIs", on="name"),
    # ROCm's runtime runs a copy or fill that no copy engine takes as a kernel of its own (a
    # device-to-device hipMemcpyAsync, every hipMemsetAsync): rocprofv3 and Kineto list them as
    # kernels
    Family(
        r"^__amd_rocclr_(copyBuffer|copyImage|copyBufferRect|copyBufferToImage|copyImageToBuffer)",
        "memcpy",
        "ROCm/clr rocclr/device/blitcl.cpp (the blit kernels __amd_rocclr_copyBuffer...)",
        on="name",
    ),
    Family(
        r"^__amd_rocclr_(fillBuffer|fillImage)",
        "memset",
        "ROCm/clr rocclr/device/blitcl.cpp (the blit kernels __amd_rocclr_fillBufferAligned...)",
        on="name",
    ),
]

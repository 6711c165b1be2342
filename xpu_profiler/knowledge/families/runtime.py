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
]

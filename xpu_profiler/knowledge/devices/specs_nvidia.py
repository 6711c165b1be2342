"""NVIDIA parts: peak dense FLOP/s per dtype (no sparsity), HBM bandwidth and size, from the
vendor's data sheets (SXM variants unless named). A row's ``match`` words identify the part in
a device name as traces and torch give it ("NVIDIA H100 80GB HBM3"); the longest match wins."""

from __future__ import annotations

from .base import DeviceSpec, GiB, SpecRow, T

NVIDIA: tuple[SpecRow, ...] = (
    SpecRow(
        "cuda:H200",
        ("H200",),
        DeviceSpec(
            "NVIDIA H200",
            {"bf16": 989 * T, "fp16": 989 * T, "fp8": 1979 * T, "tf32": 494 * T, "fp32": 67 * T, "int8": 1979 * T},
            4.8e12,
            141 * 10**9,
            "NVIDIA H200 data sheet (SXM, dense)",
        ),
    ),
    SpecRow(
        "cuda:H100",
        ("H100",),
        DeviceSpec(
            "NVIDIA H100",
            {"bf16": 989 * T, "fp16": 989 * T, "fp8": 1979 * T, "tf32": 494 * T, "fp32": 67 * T, "int8": 1979 * T},
            3.35e12,
            80 * GiB,
            "NVIDIA H100 data sheet (SXM, dense)",
        ),
    ),
    SpecRow(
        "cuda:A100",
        ("A100",),
        DeviceSpec(
            "NVIDIA A100",
            {"bf16": 312 * T, "fp16": 312 * T, "tf32": 156 * T, "fp32": 19.5 * T, "int8": 624 * T},
            2.039e12,
            80 * GiB,
            "NVIDIA A100 data sheet (80GB SXM, dense)",
        ),
    ),
    SpecRow(
        "cuda:L40S",
        ("L40S",),
        DeviceSpec(
            "NVIDIA L40S",
            {"bf16": 362 * T, "fp16": 362 * T, "fp8": 733 * T, "tf32": 183 * T, "fp32": 91.6 * T, "int8": 733 * T},
            864e9,
            48 * GiB,
            "NVIDIA L40S data sheet (dense)",
        ),
    ),
)

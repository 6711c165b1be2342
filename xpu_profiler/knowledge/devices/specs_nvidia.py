"""NVIDIA parts: peak dense FLOP/s per dtype (no sparsity: the data sheets print tensor figures
"with sparsity", dense is half), HBM bandwidth and size, from the vendor's data sheets. A row's
``match`` words identify the part in a device name as traces and torch give it ("NVIDIA H100
80GB HBM3"; the longest match wins); its ``signature`` the device properties that identify it
without a name. A figure no vendor document gives is left out (its peak stays unknown)."""

from __future__ import annotations

from .base import DeviceSpec, GiB, Signature, SpecRow, T

G = 10**9  # the data sheets' GB
_H100_SHEET = "NVIDIA H100 Tensor Core GPU data sheet (nvidia.com/en-us/data-center/h100)"
_HOPPER = {
    "bf16": 989.4 * T,
    "fp16": 989.4 * T,
    "fp8": 1978.9 * T,
    "tf32": 494.7 * T,
    "fp32": 67 * T,
    "int8": 1978.9 * T,
}

NVIDIA: tuple[SpecRow, ...] = (
    SpecRow(
        "cuda:H100",
        ("H100",),
        DeviceSpec("NVIDIA H100 SXM", dict(_HOPPER), 3.35e12, 80 * GiB, _H100_SHEET + ", SXM5 column, dense"),
    ),
    SpecRow(
        "cuda:H100-PCIe",
        ("H100 PCIE", "H100-PCIE"),
        DeviceSpec(
            "NVIDIA H100 PCIe",
            {"bf16": 756 * T, "fp16": 756 * T, "fp8": 1513 * T, "tf32": 378 * T, "fp32": 51 * T, "int8": 1513 * T},
            2.0e12,
            80 * G,
            _H100_SHEET + ", PCIe column, dense",
        ),
        Signature(32, (9, 0), 114, 80),
    ),
    SpecRow(
        "cuda:H200",
        ("H200",),
        DeviceSpec(
            "NVIDIA H200",
            dict(_HOPPER),
            4.8e12,
            141 * G,
            "NVIDIA H200 data sheet (nvidia.com/en-us/data-center/h200), SXM, dense",
        ),
        Signature(32, (9, 0), 132, 131),
    ),
    SpecRow(
        "cuda:H800",
        ("H800",),
        DeviceSpec(
            "NVIDIA H800",
            dict(_HOPPER),
            3.35e12,
            80 * G,
            "NVIDIA H800 product page (nvidia.cn/data-center/h800): the H100 SXM tensor throughput and memory, "
            "FP64 and NVLink reduced",
        ),
    ),
    SpecRow(
        "cuda:A100",
        ("A100",),
        DeviceSpec(
            "NVIDIA A100 80GB",
            {"bf16": 312 * T, "fp16": 312 * T, "tf32": 156 * T, "fp32": 19.5 * T, "int8": 624 * T},
            2.039e12,
            80 * GiB,
            "NVIDIA A100 data sheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), 80GB SXM, dense",
        ),
        Signature(32, (8, 0), 108, 80),
    ),
    SpecRow(
        "cuda:A100-40GB",
        ("A100-SXM4-40GB", "A100-PCIE-40GB", "A100 40GB", "A100-PG509-200"),
        DeviceSpec(
            "NVIDIA A100 40GB",
            {"bf16": 312 * T, "fp16": 312 * T, "tf32": 156 * T, "fp32": 19.5 * T, "int8": 624 * T},
            1.555e12,
            40 * G,
            "NVIDIA A100 data sheet, 40GB SXM column, dense (A100-PG509-200: the 40GB SXM4 board)",
        ),
        Signature(32, (8, 0), 108, 40),
    ),
    SpecRow(
        "cuda:L40S",
        ("L40S",),
        DeviceSpec(
            "NVIDIA L40S",
            {"bf16": 362 * T, "fp16": 362 * T, "fp8": 733 * T, "tf32": 183 * T, "fp32": 91.6 * T, "int8": 733 * T},
            864e9,
            48 * G,
            "NVIDIA L40S data sheet (nvidia.com/en-us/data-center/l40s), dense",
        ),
        Signature(32, (8, 9), 142, 45),
    ),
    SpecRow(
        "cuda:B200",
        ("B200",),
        DeviceSpec(
            "NVIDIA B200",
            {
                "bf16": 2250 * T,
                "fp16": 2250 * T,
                "fp8": 4500 * T,
                "fp4": 9000 * T,
                "tf32": 1100 * T,
                "fp32": 75 * T,
                "int8": 4500 * T,
            },
            7.7e12,
            180 * G,
            "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx): 8-GPU totals with sparsity "
            "(FP4 144 PF, FP8 72 PF, BF16 36 PF, TF32 18 PF; FP32 600 TF, 62 TB/s) per GPU, dense = half",
        ),
        Signature(32, (10, 0), 148, 178),
    ),
    SpecRow(
        "cuda:B300",
        ("B300",),
        DeviceSpec(
            "NVIDIA B300",
            {"bf16": 2250 * T, "fp16": 2250 * T, "fp8": 4500 * T, "tf32": 1100 * T, "fp32": 75 * T},
            8.0e12,
            288 * G,
            "NVIDIA HGX B300 specifications (nvidia.com/en-us/data-center/hgx), per GPU, dense; 288 GB HBM3e and "
            "8 TB/s: developer.nvidia.com/blog/inside-nvidia-blackwell-ultra-the-chip-powering-the-ai-factory-era. "
            "INT8 and FP4 left unset: the published figures disagree",
        ),
    ),
    SpecRow(
        "cuda:GB200",
        ("GB200",),
        DeviceSpec(
            "NVIDIA GB200 (one Blackwell GPU)",
            {
                "bf16": 2500 * T,
                "fp16": 2500 * T,
                "fp8": 5000 * T,
                "fp4": 10000 * T,
                "tf32": 1250 * T,
                "fp32": 90 * T,
                "int8": 5000 * T,
            },
            8.0e12,
            186 * G,
            "NVIDIA GB200 NVL72 specifications (nvidia.com/en-us/data-center/gb200-nvl72): per superchip (2 GPUs) "
            "with sparsity FP4 40 PF, FP8 20 PF, BF16 10 PF, TF32 5 PF; FP32 180 TF; 372 GB, 16 TB/s; per GPU, dense",
        ),
    ),
    SpecRow(
        "cuda:V100",
        ("V100",),
        DeviceSpec(
            "NVIDIA V100",
            {"fp16": 125 * T, "fp32": 15.7 * T},
            900e9,
            32 * G,
            "NVIDIA V100 data sheet (volta-v100-datasheet-update-us-1165301-r5.pdf), SXM2 32GB",
        ),
        Signature(32, (7, 0), 80, 32),
    ),
)

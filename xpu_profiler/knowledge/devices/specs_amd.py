"""AMD Instinct parts: peak dense FLOP/s per dtype, HBM bandwidth and size, from AMD's product
pages and data sheets; ``match`` words identify the part in a device name ("AMD Instinct
MI300X"), ``signature`` its device properties when ROCm writes no usable name (an empty name
for MI300X in vLLM's traces, "AMD Radeon Graphics" for an MI250 GCD). ``fp32`` is the vector
rate. An MI250/MI250X appears to software as two devices (GCDs): its rows are one GCD, half
the package's figures. HBM sizes are binary: the data sheets' "192 GB" is what ROCm reports
as ``totalGlobalMem`` 206,141,652,992 bytes = 192 GiB (an MI300X trace's device properties)."""

from __future__ import annotations

from .base import DeviceSpec, GiB, Signature, SpecRow, T

_MI300 = {
    "bf16": 1307.4 * T,
    "fp16": 1307.4 * T,
    "fp8": 2614.9 * T,
    "tf32": 653.7 * T,
    "fp32": 163.4 * T,
    "int8": 2614.9 * T,
}

AMD: tuple[SpecRow, ...] = (
    SpecRow(
        "rocm:MI300X",
        ("MI300X",),
        DeviceSpec(
            "AMD Instinct MI300X",
            dict(_MI300),
            5.3e12,
            192 * GiB,
            "AMD Instinct MI300X data sheet (amd.com/.../amd-instinct-mi300x-data-sheet.pdf), dense",
        ),
        Signature(64, (9, 4), 304, 192),
    ),
    SpecRow(
        "rocm:MI325X",
        ("MI325X",),
        DeviceSpec(
            "AMD Instinct MI325X",
            dict(_MI300),
            6.0e12,
            256 * GiB,
            "AMD Instinct MI325X product page (amd.com/en/products/accelerators/instinct/mi300/mi325x.html), dense",
        ),
        Signature(64, (9, 4), 304, 256),
    ),
    SpecRow(
        "rocm:MI350X",
        ("MI350X",),
        DeviceSpec(
            "AMD Instinct MI350X",
            {"bf16": 2306.9 * T, "fp16": 2306.9 * T, "fp8": 4613.7 * T, "fp4": 9227.5 * T, "fp32": 144.2 * T},
            8.0e12,
            288 * GiB,
            "AMD Instinct MI350X product page (amd.com/en/products/accelerators/instinct/mi350/mi350x.html), dense; "
            "INT8 and TF32 left unset (not published for CDNA 4)",
        ),
    ),
    SpecRow(
        "rocm:MI355X",
        ("MI355X",),
        DeviceSpec(
            "AMD Instinct MI355X",
            {"bf16": 2516.6 * T, "fp16": 2516.6 * T, "fp8": 5033.2 * T, "fp4": 10066 * T, "fp32": 157.3 * T},
            8.0e12,
            288 * GiB,
            "AMD Instinct MI355X product page (amd.com/en/products/accelerators/instinct/mi350/mi355x.html), dense; "
            "INT8 and TF32 left unset (not published for CDNA 4)",
        ),
        Signature(64, (9, 5), 256, 288),
    ),
    SpecRow(
        "rocm:MI250X",
        ("MI250X",),
        DeviceSpec(
            "AMD Instinct MI250X (one GCD)",
            {"bf16": 191.5 * T, "fp16": 191.5 * T, "fp32": 23.95 * T, "int8": 191.5 * T},
            1.6e12,
            64 * GiB,
            "AMD Instinct MI250X product page (amd.com/en/products/accelerators/instinct/mi200/mi250x.html): "
            "383 TF bf16, 47.9 TF fp32 vector, 3.2 TB/s, 128 GB per package; one GCD is half",
        ),
        Signature(64, (9, 0), 110, 64),
    ),
    SpecRow(
        "rocm:MI250",
        ("MI250",),
        DeviceSpec(
            "AMD Instinct MI250 (one GCD)",
            {"bf16": 181.05 * T, "fp16": 181.05 * T, "fp32": 22.65 * T, "int8": 181.05 * T},
            1.6e12,
            64 * GiB,
            "AMD Instinct MI250 product page (amd.com/en/products/accelerators/instinct/mi200/mi250.html): "
            "362.1 TF bf16, 45.3 TF fp32 vector, 3.2 TB/s, 128 GB per package; one GCD is half",
        ),
        Signature(64, (9, 0), 104, 64),
    ),
)

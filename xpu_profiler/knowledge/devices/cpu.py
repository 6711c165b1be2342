"""The CPU: always present. No peak figures: they differ by part, core count and clock, and no
data sheet backs one number; MFU and bandwidth shares stay "unknown peak" until given with
``--device-spec FILE`` (``{"cpu": {"peak_flops": {"bf16": ...}, "mem_bw_bytes_s": ...}}``)."""

from __future__ import annotations

import os
import platform

from .base import Backend, DeviceInfo, DeviceSpec, SpecRow


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _describe() -> DeviceInfo:
    mem = None
    try:
        import psutil

        mem = int(psutil.virtual_memory().total)
    except Exception:
        pass
    return DeviceInfo("cpu", _cpu_name(), 1, "cpu", mem, "cpu", {"cores": os.cpu_count()})


BACKEND = Backend(
    kind="cpu",
    title="CPU",
    torch_device_type="cpu",
    probe=lambda: (True, ""),
    describe=_describe,
    specs=(
        SpecRow(
            "cpu",
            (),
            DeviceSpec(
                "cpu", {}, None, None, "no sourced peak: CPU figures depend on the part; give them with --device-spec"
            ),
        ),
    ),
)

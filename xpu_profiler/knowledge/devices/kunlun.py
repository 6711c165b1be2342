"""Kunlun XPU (P800 and its generations) through the vllm-kunlun platform plugin: torch reports
its device type as ``cuda`` and memory is read through the ``torch.cuda`` API there; the runtime
prints one ``[XPURT_PROF]`` line per kernel when the variables below are set at process start."""

from __future__ import annotations

from .base import Backend, DeviceInfo, DeviceSpec, GiB, SpecRow, have_module

KIND = "kunlun_p800"

#: variables the Kunlun runtime reads at process start to log every kernel (XPU_CUPTI_ENABLE_DEVICE,
#: the per-process device the Kunlun torch.profiler backend traces, is added per rank: vLLM-Kunlun
#: issue #167); source: vLLM-Kunlun docs/source/developer_guide/performance/performance_benchmark/profiling.md
RUNTIME_LOG_ENV = {
    "XPUAPI_DEBUG": "0x1",
    "XPURT_DISPATCH_MODE": "PROFILING",
    "XPU_ENABLE_PROFILER_TRACING": "1",
}
#: cycles per nanosecond (clock in GHz) by Kunlun generation, as in vLLM-Kunlun's op_log.py
CLOCK_GHZ = {1: 0.9, 2: 1.3, 3: 1.45}
DEFAULT_GENERATION = 3  # Kunlun3: P800
#: the device a generation's [XPURT_PROF] logs come from
GENERATION_DEVICES = {1: "kunlun1", 2: "kunlun2", 3: KIND}


def _probe() -> tuple[bool, str]:
    if not have_module("vllm_kunlun"):
        return False, "the vllm_kunlun platform plugin is not installed"
    try:
        import torch

        if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
            return False, "no Kunlun XPU is visible (torch.cuda reports no device; check XPU_VISIBLE_DEVICES)"
    except Exception as e:  # a broken runtime counts as absent
        return False, f"the Kunlun runtime cannot be queried ({type(e).__name__}: {e})"
    return True, ""


def _describe() -> DeviceInfo:
    import torch

    props = torch.cuda.get_device_properties(0)
    return DeviceInfo(
        KIND,
        str(getattr(props, "name", "Kunlun P800")),
        torch.cuda.device_count(),
        "cuda",
        int(getattr(props, "total_memory", 0)) or None,
        KIND,
    )


# Only the memory size is backed by a public measurement; no peak-FLOP/s or HBM-bandwidth figure
# could be checked against a vendor source, so those stay unset (MFU and roofline figures are
# skipped) until given with `--device-spec FILE`, e.g. {"kunlun_p800": {"peak_flops": {"bf16": ...}}}.
P800 = SpecRow(
    KIND,
    ("P800",),
    DeviceSpec(
        "Kunlun P800",
        {},
        None,
        96 * GiB,
        "mem_bytes: 96 GiB HBM per card, torch.cuda.mem_get_info total = 103079215104 bytes on a "
        "P800 OAM (driver 5.0.21.47, XRE 5.13.0.0) in a public third-party P800 fault report; "
        "peak_flops and mem_bw_bytes_s: unverified (no vendor data sheet found), left unset, "
        "supply them with --device-spec. Kernel clock: 1.45 GHz is implied by the cycles-to-ns "
        "factor of vLLM-Kunlun's XPURT_PROF parser (docs/source/developer_guide/performance/"
        "performance_benchmark/profiling.md), an inference, not a published figure",
    ),
)

BACKEND = Backend(
    kind=KIND,
    title="Kunlun P800 (XPU)",
    torch_device_type="cuda",
    probe=_probe,
    describe=_describe,
    specs=(P800,),
    device_logs=True,
    runtime_log_env=RUNTIME_LOG_ENV,
)

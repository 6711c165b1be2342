"""NVIDIA GPUs (and AMD GPUs, which torch's ROCm build reports as ``cuda`` too): detection
through ``torch.cuda``; the parts' specs are the vendor tables (``specs_nvidia``, ``specs_amd``)."""

from __future__ import annotations

from .base import Backend, DeviceInfo
from .specs_amd import AMD
from .specs_nvidia import NVIDIA


def _probe() -> tuple[bool, str]:
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if getattr(torch.version, "cuda", None) is None and getattr(torch.version, "hip", None) is None:
        return False, f"this torch build ({torch.__version__}) has no CUDA or ROCm support"
    try:
        if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
            return False, "no GPU is visible (check CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES and the driver)"
    except Exception as e:
        return False, f"the GPU runtime cannot be queried ({type(e).__name__}: {e})"
    return True, ""


def _describe() -> DeviceInfo:
    import torch

    from . import spec_key_for_properties

    props = torch.cuda.get_device_properties(0)
    name = str(props.name)
    described = {  # as Kineto's deviceProperties spell them
        "name": name,
        "totalGlobalMem": int(props.total_memory),
        "computeMajor": int(props.major),
        "computeMinor": int(props.minor),
        "numSms": int(props.multi_processor_count),
        "warpSize": int(getattr(props, "warp_size", 0)) or (64 if getattr(torch.version, "hip", None) else 32),
    }
    key = spec_key_for_properties(described)
    return DeviceInfo("cuda", name, torch.cuda.device_count(), "cuda", int(props.total_memory), key)


BACKEND = Backend(
    kind="cuda",
    title="NVIDIA / AMD GPU",
    torch_device_type="cuda",
    probe=_probe,
    describe=_describe,
    specs=NVIDIA + AMD,
)

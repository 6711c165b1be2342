"""The shapes of device knowledge: a part's spec, a detected device, and a backend (one per
``--device`` kind)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

T = 1e12
GiB = 1 << 30


@dataclass(frozen=True)
class DeviceSpec:
    """Peak dense FLOP/s per dtype (no sparsity), memory bandwidth and size of one part, with
    the data sheet the figures come from."""

    name: str
    peak_flops: dict[str, float]  # dtype ("bf16", "fp16", "fp8", "fp32", "int8") → FLOP/s
    mem_bw_bytes_s: float | None
    mem_bytes: int | None
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Signature:
    """What a trace's device properties say of a part when its name does not (Kineto's
    ``deviceProperties``: ROCm builds may write an empty name, or ``AMD Radeon Graphics``)."""

    warp_size: int  # 32 NVIDIA, 64 AMD
    compute: tuple[int, int]  # computeMajor, computeMinor (CUDA capability; gfx major/minor on ROCm)
    units: int  # numSms: SMs, or CUs on ROCm
    mem_gib: float  # totalGlobalMem, GiB (matched within 8%)


@dataclass(frozen=True)
class SpecRow:
    """A row of a vendor's spec table: the key it is known by (``cuda:H100``), the words of
    a device name that identify it (``H100``; longest match wins), the spec, and the device
    properties that identify it when the name is empty or generic."""

    key: str
    match: tuple[str, ...]
    spec: DeviceSpec
    signature: Signature | None = None


@dataclass
class DeviceInfo:
    """The device a run uses, as detected."""

    kind: str  # a backend's kind: cpu | cuda | kunlun_p800
    name: str  # e.g. "NVIDIA H100 80GB HBM3", "cpu"
    count: int = 1
    torch_device_type: str = "cpu"
    memory_bytes: int | None = None
    spec_key: str | None = None  # key into the spec tables, when one matches
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Backend:
    """What the tool knows of one kind of device: how to find it, what it can do, what its
    runtime needs.

    ``probe()`` says (present, why not); ``describe()`` gives the DeviceInfo of a present one;
    ``specs`` are the parts of this kind; ``runtime_log_env`` the variables its runtime reads at
    process start to print its per-kernel log lines (empty: it has none), which a run captures
    per rank when ``device_logs`` is on by default."""

    kind: str
    title: str
    torch_device_type: str
    probe: Callable[[], tuple[bool, str]]
    describe: Callable[[], DeviceInfo]
    specs: tuple[SpecRow, ...] = ()
    device_logs: bool = False
    runtime_log_env: Mapping[str, str] = field(default_factory=dict)


def have_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False

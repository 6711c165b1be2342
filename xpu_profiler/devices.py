"""Devices: what is present (detection) and what it can do (spec table).

Backends: ``cpu``, ``cuda`` (NVIDIA GPUs) and ``kunlun_p800`` (Kunlun XPU through
the vllm-kunlun platform plugin; torch reports its device type as ``cuda`` and
memory is read through the ``torch.cuda`` API there).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from .errors import DeviceError, XpuProfilerError

DEVICES = ("auto", "cpu", "cuda", "kunlun_p800")


# --------------------------------------------------------------------------------------
# detection
# --------------------------------------------------------------------------------------

@dataclass
class DeviceInfo:
    """The device a run uses, as detected."""

    kind: str                    # cpu | cuda | kunlun_p800
    name: str                    # e.g. "NVIDIA H100 80GB HBM3", "cpu"
    count: int = 1
    torch_device_type: str = "cpu"
    memory_bytes: int | None = None
    spec_key: str | None = None  # key into SPECS, when one matches
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


def _have_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _kunlun_visible() -> tuple[bool, str]:
    """(present, why-not) for a Kunlun XPU usable by vLLM."""
    if not _have_module("vllm_kunlun"):
        return False, "the vllm_kunlun platform plugin is not installed"
    try:
        import torch

        if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
            return False, "no Kunlun XPU is visible (torch.cuda reports no device; check XPU_VISIBLE_DEVICES)"
    except Exception as e:  # a broken runtime counts as absent
        return False, f"the Kunlun runtime cannot be queried ({type(e).__name__}: {e})"
    return True, ""


def _cuda_visible() -> tuple[bool, str]:
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if getattr(torch.version, "cuda", None) is None:
        return False, f"this torch build ({torch.__version__}) has no CUDA support"
    try:
        if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
            return False, "no CUDA GPU is visible (check CUDA_VISIBLE_DEVICES and the driver)"
    except Exception as e:
        return False, f"the CUDA runtime cannot be queried ({type(e).__name__}: {e})"
    return True, ""


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "cpu"


def _spec_key_for(kind: str, name: str) -> str | None:
    if kind in ("cpu", "kunlun_p800"):
        return kind
    up = name.upper()
    for key in sorted(SPECS, key=len, reverse=True):
        if key.startswith("cuda:") and key[5:].upper() in up:
            return key
    return None


def detect(requested: str = "auto") -> DeviceInfo:
    """The device to run on; raises DeviceError (one line) when ``requested`` is absent.

    ``auto`` picks kunlun_p800 when the vllm_kunlun plugin and an XPU are present,
    else cuda when a GPU is visible, else cpu.
    """
    requested = (requested or "auto").lower().replace("-", "_")
    if requested not in DEVICES:
        raise DeviceError(f"unknown device {requested!r} (choose from {', '.join(DEVICES)})")
    if requested in ("auto", "kunlun_p800"):
        ok, why = _kunlun_visible()
        if ok:
            import torch

            props = torch.cuda.get_device_properties(0)
            return DeviceInfo("kunlun_p800", str(getattr(props, "name", "Kunlun P800")),
                              torch.cuda.device_count(), "cuda",
                              int(getattr(props, "total_memory", 0)) or None, "kunlun_p800")
        if requested == "kunlun_p800":
            raise DeviceError(f"device kunlun_p800 is not available: {why}")
    if requested in ("auto", "cuda"):
        ok, why = _cuda_visible()
        if ok:
            import torch

            props = torch.cuda.get_device_properties(0)
            name = str(props.name)
            return DeviceInfo("cuda", name, torch.cuda.device_count(), "cuda",
                              int(props.total_memory), _spec_key_for("cuda", name))
        if requested == "cuda":
            raise DeviceError(f"device cuda is not available: {why}")
    mem = None
    try:
        import psutil

        mem = int(psutil.virtual_memory().total)
    except Exception:
        pass
    return DeviceInfo("cpu", _cpu_name(), 1, "cpu", mem, "cpu", {"cores": os.cpu_count()})


# --------------------------------------------------------------------------------------
# --- device specs ---
# Peak dense FLOP/s per dtype (no sparsity), memory bandwidth and memory size, from the
# vendors' data sheets (SXM variants unless named). Used for MFU and roofline figures;
# users override or extend them with `--device-spec FILE` (JSON or TOML, same fields).
# --------------------------------------------------------------------------------------

@dataclass
class DeviceSpec:
    name: str
    peak_flops: dict[str, float]      # dtype ("bf16", "fp16", "fp8", "fp32", "int8") → FLOP/s
    mem_bw_bytes_s: float | None
    mem_bytes: int | None
    source: str = ""

    def to_json(self) -> dict:
        return asdict(self)


T = 1e12
GiB = 1 << 30

SPECS: dict[str, DeviceSpec] = {
    # No peak figures for CPUs: they differ by part, core count and clock, and no data
    # sheet backs one number; MFU and bandwidth shares stay "unknown peak" until given
    # with --device-spec FILE ({"cpu": {"peak_flops": {"bf16": ...}, "mem_bw_bytes_s": ...}}).
    "cpu": DeviceSpec("cpu", {}, None, None,
                      "no sourced peak: CPU figures depend on the part; give them with --device-spec"),
    "cuda:H200": DeviceSpec("NVIDIA H200", {"bf16": 989 * T, "fp16": 989 * T, "fp8": 1979 * T,
                                            "tf32": 494 * T, "fp32": 67 * T, "int8": 1979 * T},
                            4.8e12, 141 * 10**9, "NVIDIA H200 data sheet (SXM, dense)"),
    "cuda:H100": DeviceSpec("NVIDIA H100", {"bf16": 989 * T, "fp16": 989 * T, "fp8": 1979 * T,
                                            "tf32": 494 * T, "fp32": 67 * T, "int8": 1979 * T},
                            3.35e12, 80 * GiB, "NVIDIA H100 data sheet (SXM, dense)"),
    "cuda:A100": DeviceSpec("NVIDIA A100", {"bf16": 312 * T, "fp16": 312 * T, "tf32": 156 * T,
                                            "fp32": 19.5 * T, "int8": 624 * T},
                            2.039e12, 80 * GiB, "NVIDIA A100 data sheet (80GB SXM, dense)"),
    "cuda:L40S": DeviceSpec("NVIDIA L40S", {"bf16": 362 * T, "fp16": 362 * T, "fp8": 733 * T,
                                            "tf32": 183 * T, "fp32": 91.6 * T, "int8": 733 * T},
                            864e9, 48 * GiB, "NVIDIA L40S data sheet (dense)"),
    # Kunlun P800 (Kunlun3 / XPU3, OAM module). Only the memory size is backed by a public
    # measurement; no peak-FLOP/s or HBM-bandwidth figure could be checked against a vendor
    # source, so those stay unset (MFU and roofline figures are skipped) until given with
    # `--device-spec FILE`, e.g. {"kunlun_p800": {"peak_flops": {"bf16": ...}, "mem_bw_bytes_s": ...}}.
    "kunlun_p800": DeviceSpec(
        "Kunlun P800", {}, None, 96 * GiB,
        "mem_bytes: 96 GiB HBM per card, torch.cuda.mem_get_info total = 103079215104 bytes on a "
        "P800 OAM (driver 5.0.21.47, XRE 5.13.0.0) in a public third-party P800 fault report; "
        "peak_flops and mem_bw_bytes_s: unverified (no vendor data sheet found), left unset, "
        "supply them with --device-spec. Kernel clock: 1.45 GHz is implied by the cycles-to-ns "
        "factor of vLLM-Kunlun's XPURT_PROF parser (docs/source/developer_guide/performance/"
        "performance_benchmark/profiling.md), an inference, not a published figure"),
}


def load_spec_overrides(path: str | Path) -> dict[str, DeviceSpec]:
    """Read a JSON or TOML file ``{key: {name, peak_flops, mem_bw_bytes_s, mem_bytes, source}}``
    and merge it over SPECS (fields missing in the file keep the table's values).
    Returns the updated table; raises XpuProfilerError (one line) for a bad file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise XpuProfilerError(f"{p}: cannot read device spec file ({e.strerror or e})") from None
    try:
        if p.suffix.lower() == ".toml":
            try:
                import tomllib
            except ImportError:  # Python 3.10
                import tomli as tomllib  # type: ignore
            data = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw.decode("utf-8"))
    except Exception as e:
        raise XpuProfilerError(f"{p}: not a valid device spec file ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict):
        raise XpuProfilerError(f"{p}: a device spec file must map device keys to tables")
    for key, val in data.items():
        if not isinstance(val, dict):
            raise XpuProfilerError(f"{p}: entry {key!r} must be a table")
        base = SPECS.get(key)
        fields = base.to_json() if base else {"name": key, "peak_flops": {}, "mem_bw_bytes_s": None,
                                              "mem_bytes": None, "source": ""}
        unknown = set(val) - set(fields)
        if unknown:
            raise XpuProfilerError(f"{p}: entry {key!r} has unknown field(s) {', '.join(sorted(unknown))}")
        if "peak_flops" in val:
            if not isinstance(val["peak_flops"], dict):
                raise XpuProfilerError(f"{p}: entry {key!r}: peak_flops must map dtypes to FLOP/s")
            fields["peak_flops"] = {**fields["peak_flops"], **{k: float(v) for k, v in val["peak_flops"].items()}}
        for f in ("name", "mem_bw_bytes_s", "mem_bytes", "source"):
            if f in val:
                fields[f] = val[f]
        fields["source"] = fields.get("source") or f"override from {p.name}"
        SPECS[key] = DeviceSpec(**fields)
    return SPECS


@contextlib.contextmanager
def spec_overrides(path: str | Path | None) -> Iterator[dict[str, DeviceSpec]]:
    """SPECS with the overrides of ``path`` (``load_spec_overrides``) inside the block, the
    table as it was after it: a ``--device-spec`` holds for one command, not for the
    process (the Python API and in-process callers run many)."""
    saved = dict(SPECS)
    try:
        yield load_spec_overrides(path) if path else SPECS
    finally:
        SPECS.clear()
        SPECS.update(saved)


def spec_for(info: DeviceInfo) -> DeviceSpec | None:
    return SPECS.get(info.spec_key) if info.spec_key else None


def spec_for_name(name: str) -> DeviceSpec | None:
    """The spec of a device named as a trace names it ("NVIDIA H100 80GB HBM3"), if known."""
    key = _spec_key_for("cuda", name)
    return SPECS.get(key) if key else None

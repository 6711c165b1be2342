"""XProfiler's event fields: its categories and argument spellings mapped to event kinds,
and the tolerant number and time parsing its files need (``xprofiler`` reads with these)."""

from __future__ import annotations

import math
import re
from pathlib import Path

from ...core.profile import K_COMM, K_KERNEL, K_MEMCPY, K_MEMSET, K_RUNTIME, K_UNKNOWN
from ...knowledge.runtime_api import KUNLUN_API, KUNLUN_MARKERS
from ..base import has_kineto_markers, is_chrome_json
from ..kineto.cols import MAX_DUR_US, MAX_US

SETTINGS_NAME = "xprofiler.settings.json"

# Names and categories specific to the Kunlun runtime / XProfiler: ``runtime_api``.
_XPU_MARKERS = KUNLUN_MARKERS

# category (lower case) → kind
CATEGORY_KINDS = {
    "api": K_RUNTIME,
    "runtime": K_RUNTIME,
    "runtime api": K_RUNTIME,
    "driver": K_RUNTIME,
    "driver api": K_RUNTIME,
    "xpu_api": K_RUNTIME,
    "xpu_runtime": K_RUNTIME,
    "xpurt": K_RUNTIME,
    "xpu_driver": K_RUNTIME,
    "wait": K_RUNTIME,
    "sync": K_RUNTIME,
    "synchronize": K_RUNTIME,
    "kernel": K_KERNEL,
    "xpu_kernel": K_KERNEL,
    "device_kernel": K_KERNEL,
    "kernels": K_KERNEL,
    "memcpy": K_MEMCPY,
    "xpu_memcpy": K_MEMCPY,
    "gpu_memcpy": K_MEMCPY,
    "memory copy": K_MEMCPY,
    "memset": K_MEMSET,
    "xpu_memset": K_MEMSET,
    "gpu_memset": K_MEMSET,
    "bkcl": K_COMM,
    "xccl": K_COMM,
    "communication": K_COMM,
    "collective": K_COMM,
}
_DEVICE_KEYS = ("device", "device_id", "deviceId", "dev", "xpu", "devid")
_STREAM_KEYS = ("stream", "stream_id", "streamId", "hwq", "queue")
_CORR_KEYS = ("correlation", "correlation_id", "correlationId", "corr", "token")
_DEVICE_PROCESS = re.compile(r"(?:xpu|device|card|gpu|kunlun)\s*[:#_-]?\s*(\d+)", re.I)
_XPU_API_NAME = KUNLUN_API


def _is_settings(path: Path, head: bytes) -> bool:
    h = head.lstrip()
    return path.name.lower() == SETTINGS_NAME and h.startswith(b"{") and b'"traceEvents"' not in head


def sniff(path: Path, head: bytes) -> bool:
    if _is_settings(path, head):
        return True
    # Kineto writes its markers near the top of every trace: such files are not XProfiler's
    if has_kineto_markers(head) or not is_chrome_json(head):
        return False
    if "xprofiler" in path.name.lower() or (path.parent / SETTINGS_NAME).is_file():
        return True
    return bool(_XPU_MARKERS.search(head))


def _int(v, default: int = -1) -> int:
    """An id from a JSON value; one beyond int64 (or no number at all) is ``default``."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        v = int(v) if math.isfinite(v) else default
    elif isinstance(v, str):
        try:
            v = int(v[:40], 0) if len(v) <= 40 else default
        except ValueError:
            m = re.search(r"-?\d{1,19}", v)
            v = int(m.group()) if m else default
    elif not isinstance(v, int):
        return default
    return v if -INT64 <= v < INT64 else default


def _num(v) -> float | None:
    """A finite number from a JSON value (numbers, numeric strings), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        try:
            x = float(v)
        except OverflowError:  # an integer of hundreds of digits: out of range, not unusable
            return 1e308
    elif isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            return None
    else:
        return None
    return x if math.isfinite(x) else None


INT64 = 1 << 63


def _time(e: dict, ts: float | None, dur: float | None) -> str | None:
    """Why an event's times are unusable (the kind of a skip), or None."""
    if ts is None:
        return "with no usable 'ts' (missing, not a number, NaN or Infinity)"
    if dur is None:
        return "with no usable 'dur' (missing, not a number, NaN or Infinity)"
    if abs(ts) > MAX_US or dur > MAX_DUR_US:
        return "with a time out of range"
    if dur < 0:
        return "with a negative duration"
    return None


def _key(v):
    """A pid/tid usable as a dict key whatever JSON put there."""
    return v if isinstance(v, (int, float, str)) or v is None else repr(v)


def _first(args: dict, keys: tuple[str, ...]) -> int:
    for k in keys:
        if k in args:
            v = _int(args[k])
            if v != -1:
                return v
    return -1


def _kind(cat: str, name: str, has_device: bool) -> int:
    c = cat.strip().lower()
    k = CATEGORY_KINDS.get(c)
    if k is None and c:
        if "kernel" in c:
            k = K_KERNEL
        elif "memcpy" in c or "memory copy" in c:
            k = K_MEMCPY
        elif "memset" in c:
            k = K_MEMSET
        elif c.endswith("api") or "runtime" in c or c.startswith("wait"):
            k = K_RUNTIME
    if k == K_MEMCPY and not has_device:
        return K_RUNTIME  # the host side of a copy (XPTI MEMCPY records carry pid/tid only)
    if k is not None:
        return k
    if name.startswith("_Z"):
        return K_KERNEL
    if _XPU_API_NAME.fullmatch(name):
        return K_RUNTIME
    return K_UNKNOWN

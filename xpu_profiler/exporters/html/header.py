"""The report's header: what ran, on what, from which sources, and notes on what is missing."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...core.fmt import number
from ...summary import Source, Summary
from .style import BASIS_LABELS, DTYPE_KEYS, VERSION_LABELS


def build_header(summary: Summary) -> dict[str, Any]:
    run, dev = summary.run, summary.device
    items: list[list[str]] = []

    def add(label: str, value: Any) -> None:
        if value not in (None, "", [], {}):
            items.append([label, str(value)])

    add("Model", run.model)
    add("Device", _device_text(summary))
    for k, v in run.versions.items():
        add(VERSION_LABELS.get(k, k), v)
    add("Detail level", run.detail_level)
    add("Metrics", ", ".join(run.metrics))
    add("Started", _utc(run.start_time_ns))
    add("Host", run.host)
    add("Time basis", BASIS_LABELS.get(summary.basis, summary.basis))
    notes = []
    if run.incomplete:
        why = run.incomplete_reason
        notes.append(
            "The profile is incomplete" + (f" ({why})" if why else "") + ": the figures cover only what was recorded."
        )
    if dev is not None and ("placeholder" in dev.source or (not dev.peak_flops and dev.mem_bw_bytes_s is None)):
        notes.append(f"Device spec: {dev.source}.")
    if not summary.has_timeline:
        notes.append("The sources carry no timeline (kernel logs only): no step or memory charts.")
    if summary.roofline_missing:
        notes.append(summary.roofline_missing + ".")
    return {
        "title": str(run.model or _source_title(run.sources) or "xpu_profiler report"),
        "facts": items,
        "engine": [[str(k), _fmt_value(v)] for k, v in run.engine.items()],
        "workload": [[str(k), _fmt_value(v)] for k, v in run.workload.items()],
        "sources": [{"path": s.path, "format": s.format} for s in run.sources],
        "notes": notes,
    }


#: the headline's dtype when the run does not record one: the widest a model is served in
#: (a narrower dtype's peak, fp8 or int8, would flatter every figure read against it)
HEADLINE_DTYPES = ("bf16", "fp16", "fp32")


def _peak_flops(summary: Summary) -> tuple[float | None, str | None]:
    """The device's peak FLOP/s for the run's dtype (specs list one per dtype); when the run
    records none, bf16's (else fp16's, fp32's), labelled as such."""
    peak = summary.device.peak_flops if summary.device is not None else {}
    dtype = str(summary.run.engine.get("dtype", "") or "").replace("torch.", "")
    key = DTYPE_KEYS.get(dtype, dtype)
    if key:
        return (number(peak[key]), key) if number(peak.get(key)) else (None, None)
    for k in HEADLINE_DTYPES:
        if number(peak.get(k)):
            return number(peak[k]), f"{k} peak (the run's dtype is not recorded)"
    return None, None


def _device_text(summary: Summary) -> str | None:
    """``NVIDIA H100 (cuda) · 989 TFLOP/s bf16 peak · 3.35 TB/s · 80 GiB``."""
    run, dev = summary.run, summary.device
    name = run.device_name or (dev.name if dev is not None else None) or run.device
    if not name:
        return None
    parts = [str(name)]
    kind = run.device
    if kind and str(kind) not in parts[0]:
        parts[0] += f" ({kind})"
    flops, dtype = _peak_flops(summary)
    if flops:
        label = dtype if dtype and dtype.endswith(")") else f"{dtype} peak" if dtype else "peak"
        parts.append(f"{flops / 1e12:,.0f} TFLOP/s {label}")
    if dev is not None and (bw := number(dev.mem_bw_bytes_s)):
        parts.append(f"{bw / 1e12:.2f} TB/s")
    if dev is not None and (size := number(dev.mem_bytes)):
        parts.append(f"{size / 2**30:.0f} GiB")
    return " · ".join(parts)


def _utc(ns: Any) -> str | None:
    """Unix-epoch ns as ``2026-12-02 12:08:50 UTC``."""
    v = number(ns)
    if not v:
        return None
    try:
        return datetime.fromtimestamp(v / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (ValueError, OverflowError, OSError):  # (a time no calendar holds: a damaged input's)
        return None


def _source_title(sources: list[Source]) -> str:
    names = [Path(s.path).name for s in sources if s.path]
    if not names:
        return ""
    return names[0] + (f" and {len(names) - 1} more" if len(names) > 1 else "")


def _fmt_value(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v))
    if isinstance(v, dict):
        return ", ".join(f"{k}={x}" for k, x in v.items())
    return str(v)

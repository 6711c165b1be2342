"""The shareable HTML report: one self-contained file built from the summary.

The work is split in two, as in memray's reporters:

1. ``build_report(summary)`` turns the typed ``Summary`` into plain JSON-ready
   data, one ``build_<section>`` function per report section.
   A section is ``None`` when its data is absent; figures are plain plotly.js
   specs (``{"data": [...], "layout": {...}}``) collected in ``report["figures"]``.
2. ``render(report)`` lays that data out with the jinja2 templates in
   ``xpu_profiler.templates``. The data enters the page as one ``tojson`` blob,
   plotly.js is inlined exactly once (or linked from its CDN on request), and
   every name that came from a trace is escaped by the template engine.
"""

from __future__ import annotations

import re
import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .. import templates
from ..summary import Series, Source, Summary
from ..templates import _num, fmt_bytes, fmt_ns

NAME = "html"
SUFFIXES = (".html", ".htm")

PlotlyMode = Literal["inline", "cdn"]

PHASES = ("prefill", "decode", "mixed", "unknown")
TOKEN_PHASES = ("prefill", "decode", "mixed")  # phases with a per-token cost
PHASE_COLORS = {"prefill": "#3b6fb6", "decode": "#e8833a", "mixed": "#8a5fbf", "unknown": "#9aa0a6"}
OTHER_COLOR = "#c4c4c4"
# One colour per fused op of the taxonomy, the same in every report; names outside
# it take the spare colours in their order of time.
FUSED_OP_COLORS = {
    "attention": "#4c9f70", "gemm": "#d1495b", "moe": "#b5838d", "norm": "#edae49", "activation": "#7d5ba6",
    "rope": "#00a6a6", "kv_cache": "#2e86ab", "communication": "#c1666b", "sampling": "#a4b494",
    "embedding": "#f49d6e", "quantization": "#3d5a80", "convolution": "#6d597a", "memcpy": "#5d737e",
    "memset": "#8d99ae", "elementwise": "#7fb3d5", "other": OTHER_COLOR,
}
FUSED_PALETTE = ("#9c6644", "#588157", "#bc4749", "#6a4c93", "#1982c4", "#8ac926")

MAX_KERNEL_ROWS = 500     # rows of the top-kernels table
MAX_POINTS = 3000         # points per plotted series; longer ones are averaged in buckets
SHORT_NAME_LEN = 72

MEMORY_LABELS = {
    "device_allocated_bytes": "device allocated",
    "device_reserved_bytes": "device reserved",
    "host_rss_bytes": "host RSS",
    "kv_cache_usage": "KV-cache usage",
}
RATE_LABELS = {"prefill_tokens_per_s": "prefill tok/s", "decode_tokens_per_s": "decode tok/s",
               "output_tokens_per_s": "output tok/s"}
SERIES_COLORS = {"device_allocated_bytes": "#3b6fb6", "device_reserved_bytes": "#8fb3e0", "host_rss_bytes": "#4c9f70",
                 "kv_cache_usage": "#e8833a", "prefill_tokens_per_s": "#3b6fb6", "decode_tokens_per_s": "#e8833a",
                 "output_tokens_per_s": "#4c9f70"}
SERIES_PALETTE = ("#4c9f70", "#7d5ba6", "#c1666b", "#00a6a6", "#9c6644", "#5d737e")
def json_ready(obj: Any) -> Any:
    """Plain JSON copy: numpy scalars/arrays to Python, NaN/inf to null (JSON has neither)."""
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_ready(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


VERSION_LABELS = {"vllm": "vLLM", "torch": "PyTorch", "python": "Python", "vllm_kunlun": "vllm-kunlun",
                  "xpu_profiler": "xpu_profiler", "cuda": "CUDA", "xre": "XRE"}
DTYPE_KEYS = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
              "fp8": "fp8", "int8": "int8"}
BASIS_LABELS = {"device": "device kernel time", "host": "host op time (top-level CPU ops)"}


# -- small helpers ------------------------------------------------------------

_TEMPLATE_ARGS = re.compile(r"(?<=[\w:\x00])<(?!/)[^<>]*>")  # innermost ``ident<...>``


def _strip_call_args(s: str) -> str:
    """``f<T>(int, float*)`` → ``f<T>``: drop a trailing C++ argument list (no space before it)."""
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(s[i], 0)
        if depth == 0:
            return s[:i] if i > 0 and (s[i - 1].isalnum() or s[i - 1] in "_>") else s
    return s


def short_name(name: str, limit: int = SHORT_NAME_LEN) -> str:
    """A readable kernel name of at most ``limit`` chars.

    Drops a ``void`` return type and a trailing argument list, then collapses
    template arguments innermost first, only as far as needed to fit, and finally
    cuts the middle out.
    """
    s = _strip_call_args(re.sub(r"^\s*void\s+", "", (name or "").strip())).strip() or (name or "")
    while len(s.replace("\x00", "<…>")) > limit:
        t = _TEMPLATE_ARGS.sub("\x00", s)
        if t == s:
            break
        s = t
    s = s.replace("\x00", "<…>")
    if len(s) > limit:
        keep = limit - 1
        s = s[: keep - keep // 3] + "…" + s[len(s) - keep // 3:]
    return s


def fused_colors(names: Iterable[str]) -> dict[str, str]:
    """Colour of each fused op name (fixed for the taxonomy's names)."""
    out: dict[str, str] = {}
    spare = 0
    for n in names:
        if n in out:
            continue
        if n in FUSED_OP_COLORS:
            out[n] = FUSED_OP_COLORS[n]
        else:
            out[n] = FUSED_PALETTE[spare % len(FUSED_PALETTE)]
            spare += 1
    return out


def _reduce(x: np.ndarray, ys: list[np.ndarray], max_points: int, how: str = "mean"):
    """Average (or max) consecutive points into at most ``max_points`` buckets.

    Returns (x, ys, k): k is the bucket size (1 when nothing was reduced).
    """
    n = len(x)
    if n <= max_points:
        return x, ys, 1
    k = -(-n // max_points)
    idx = np.arange(0, n, k)
    counts = np.diff(np.append(idx, n))
    xr = np.add.reduceat(x.astype(np.float64), idx) / counts
    if how == "max":
        yr = [np.maximum.reduceat(y.astype(np.float64), idx) for y in ys]
    else:
        yr = [np.add.reduceat(y.astype(np.float64), idx) / counts for y in ys]
    return xr, yr, int(k)


def _layout(title: str | None = None, **kw: Any) -> dict[str, Any]:
    lay: dict[str, Any] = {
        "margin": {"l": 60, "r": 20, "t": 36, "b": 40},
        "font": {"family": "-apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif", "size": 12},
        "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)",
        "legend": {"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom", "traceorder": "normal"},
        "hoverlabel": {"namelength": -1},
    }
    if title:
        lay["title"] = {"text": title, "x": 0, "xanchor": "left", "font": {"size": 13}}
    lay.update(kw)
    return lay


def _axis(title: str, **kw: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "gridcolor": "#e6e8eb", "zerolinecolor": "#d0d4d9", **kw}


def _ms(ns: Any) -> float | None:
    v = _num(ns)
    return None if v is None else v / 1e6


# -- sections -----------------------------------------------------------------
# Names reach plotly only as data (trace names, tick labels), never inside a
# hovertemplate, where "%{...}" would be read as a reference.

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
        notes.append("The profile is incomplete" + (f" ({why})" if why else "")
                     + ": the figures cover only what was recorded.")
    if dev is not None and "placeholder" in dev.source:
        notes.append(f"Device spec: {dev.source}.")
    if not summary.has_timeline:
        notes.append("The sources carry no timeline (kernel logs only): no step or memory charts.")
    return {
        "title": str(run.model or _source_title(run.sources) or "xpu_profiler report"),
        "facts": items,
        "engine": [[str(k), _fmt_value(v)] for k, v in run.engine.items()],
        "workload": [[str(k), _fmt_value(v)] for k, v in run.workload.items()],
        "sources": [{"path": s.path, "format": s.format} for s in run.sources],
        "notes": notes,
    }


def _peak_flops(summary: Summary) -> tuple[float | None, str | None]:
    """The device's peak FLOP/s for the run's dtype (specs list one per dtype)."""
    peak = summary.device.peak_flops if summary.device is not None else {}
    dtype = str(summary.run.engine.get("dtype", ""))
    key = DTYPE_KEYS.get(dtype, dtype)
    if _num(peak.get(key)):
        return _num(peak[key]), key
    known = [(v, k) for k, v in peak.items() if _num(v)]
    return max(known) if known else (None, None)


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
        parts.append(f"{flops / 1e12:,.0f} TFLOP/s" + (f" {dtype}" if dtype else "") + " peak")
    if dev is not None and _num(dev.mem_bw_bytes_s):
        parts.append(f"{dev.mem_bw_bytes_s / 1e12:.2f} TB/s")
    if dev is not None and _num(dev.mem_bytes):
        parts.append(f"{dev.mem_bytes / 2**30:.0f} GiB")
    return " · ".join(parts)


def _utc(ns: Any) -> str | None:
    """Unix-epoch ns as ``2026-12-02 12:08:50 UTC``."""
    v = _num(ns)
    if not v:
        return None
    return datetime.fromtimestamp(v / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _source_title(sources: list[Source]) -> str:
    names = [Path(s.path).name for s in sources if s.path]
    if not names:
        return ""
    return names[0] + (f" and {len(names) - 1} more" if len(names) > 1 else "")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _fmt_value(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v))
    if isinstance(v, dict):
        return ", ".join(f"{k}={x}" for k, x in v.items())
    return str(v)


def build_headline(summary: Summary) -> dict[str, Any] | None:
    """Key figures as cards: ``{key, label, value, unit, sub}``; values are raw numbers."""
    tp, tot, dev = summary.throughput, summary.totals, summary.device
    cards: list[dict[str, Any]] = []

    def card(key: str, label: str, value: Any, unit: str, sub: str | None = None) -> None:
        v = _num(value)
        if v is not None:
            cards.append({"key": key, "label": label, "value": v, "unit": unit, "sub": sub})

    # a rate of 0 tok/s only means that the source has no token counts: no card then
    card("output_tok_s", "Output throughput", tp.output_tok_s or None, "tok/s",
         f"{tp.requests} requests" if tp.requests is not None else None)
    card("prefill_tok_s", "Prefill throughput", tp.prefill_tok_s or None, "tok/s",
         f"{tp.prefill_tokens:,} tokens" if tp.prefill_tokens is not None else None)
    card("decode_tok_s", "Decode throughput", tp.decode_tok_s or None, "tok/s",
         f"{tp.decode_tokens:,} tokens" if tp.decode_tokens is not None else None)
    for key, label, lat in (("ttft", "TTFT p50", tp.ttft_ns), ("tpot", "TPOT p50", tp.tpot_ns)):
        if lat is not None:
            p99 = _num(lat.p99)
            card(key, label, lat.p50, "ns", f"p99 {fmt_ns(p99)}" if p99 is not None else None)
    for ph in summary.phases:
        p99 = _num(ph.step_p99_ns)
        label = "Step p50" if ph.phase == "unknown" else f"{ph.phase.capitalize()} step p50"
        card(f"step_{ph.phase}", label, ph.step_p50_ns, "ns",
             f"p99 {fmt_ns(p99)} · {_plural(ph.steps, 'step')}" if p99 is not None else None)
    has_ops = bool(tot.op_time_ns)
    busy = _busy_share(summary) if has_ops else None
    card("busy", "Device busy" if summary.basis != "host" else "Host op busy", busy, "%",
         "share of wall time with work on the device" if summary.basis != "host"
         else "share of wall time inside top-level ops")
    peak = summary.memory.peak
    for name in ("device_allocated_bytes", "device_reserved_bytes"):
        if _num(peak.get(name)):
            cap = _num(dev.mem_bytes) if dev is not None else None
            card("peak_" + name, f"Peak {MEMORY_LABELS[name]}", peak[name], "bytes",
                 f"{100 * peak[name] / cap:.1f}% of {fmt_bytes(cap)}" if cap else None)
            break
    else:  # no device memory (CPU runs): the largest host process instead
        rss = [(v, name) for name, v in peak.items() if name.split(".", 1)[0] == "host_rss_bytes" and _num(v)]
        if rss:
            value, name = max(rss)
            process = name.partition(".")[2]
            card("peak_host_rss", "Peak host RSS", value, "bytes", f"{process} process" if process else None)
    if _num(peak.get("kv_cache_usage")) is not None:
        card("peak_kv", "Peak KV-cache usage", 100 * peak["kv_cache_usage"], "%")
    if has_ops:
        card("other_share", "Unattributed (\"other\")", 100 * tot.other_share, "%", "op time no fused op claimed")
    latency = []
    for label, lat in (("Time to first token", tp.ttft_ns), ("Time per output token", tp.tpot_ns),
                       ("End-to-end latency", tp.e2e_ns)):
        if lat is None:
            continue
        row = {"p50": _num(lat.p50), "p99": _num(lat.p99), "mean": _num(lat.mean)}
        if any(v is not None for v in row.values()):
            latency.append({"label": label, **row})
    if not cards and not latency:
        return None
    return {"cards": cards, "latency": latency}


def _busy_share(summary: Summary) -> float | None:
    ranks = [r.busy_share for r in summary.ranks if _num(r.busy_share) is not None]
    if ranks:
        return 100 * sum(ranks) / len(ranks)
    tot = summary.totals
    busy = tot.device_busy_ns if summary.basis != "host" else tot.host_op_ns
    if not tot.wall_ns:
        return None
    return 100 * min(busy / tot.wall_ns, 1.0)


def build_fused_ops(summary: Summary, colors: Mapping[str, str]) -> tuple[dict | None, dict]:
    if not summary.fused_ops:
        return None, {}
    rows = []
    for r in summary.fused_ops:
        rows.append({
            "fused_op": r.fused_op, "time_ns": float(r.time_ns), "count": r.count, "share": r.share,
            "by_phase": {p: float(r.time_ns_by_phase.get(p, 0)) for p in PHASES},
            "per_token_ns": {p: _num(r.per_token_ns_by_phase.get(p)) for p in TOKEN_PHASES},
            "color": colors.get(r.fused_op, OTHER_COLOR),
        })
    rows.sort(key=lambda r: -r["time_ns"])
    phases = [p for p in PHASES if any(r["by_phase"][p] for r in rows)]
    if phases == ["unknown"]:  # no phase split: the per-phase columns would repeat the time
        phases = []
    names = [r["fused_op"] for r in rows]
    data = []
    if phases:  # stacked by phase
        for p in phases:
            data.append({"type": "bar", "orientation": "h", "name": p, "y": names,
                         "x": [r["by_phase"][p] / 1e6 for r in rows], "marker": {"color": PHASE_COLORS[p]},
                         "hovertemplate": "%{y} · %{fullData.name}: %{x:.3f} ms<extra></extra>"})
    else:  # no phase information: one bar per op in its own colour
        data.append({"type": "bar", "orientation": "h", "name": "op time", "y": names,
                     "x": [r["time_ns"] / 1e6 for r in rows], "marker": {"color": [r["color"] for r in rows]},
                     "hovertemplate": "%{y}: %{x:.3f} ms<extra></extra>"})
    fig = {"data": data, "layout": _layout(
        barmode="stack", height=90 + 26 * max(len(rows), 3), bargap=0.25,
        xaxis=_axis("time (ms)"), yaxis={"automargin": True, "autorange": "reversed"},
        showlegend=len(data) > 1)}
    section = {"basis": BASIS_LABELS.get(summary.basis, "op time"),
               "total_ns": sum(r["time_ns"] for r in rows), "other_share": summary.totals.other_share,
               "phases": phases,
               "per_token_phases": [p for p in TOKEN_PHASES if any(r["per_token_ns"][p] is not None for r in rows)],
               "rows": rows, "figures": ["fused_ops"]}
    return section, {"fused_ops": fig}


def build_phases(summary: Summary, colors: Mapping[str, str]) -> tuple[dict | None, dict]:
    # a phase row without steps or tokens is only the op time outside every step
    rows_in = [p for p in summary.phases if p.steps or p.phase != "unknown"]
    if not rows_in:
        return None, {}
    # a source with steps but no op events (a live run without the torch profiler): no op time
    no_ops = summary.totals.op_time_ns == 0
    rows = [{
        "phase": p.phase, "steps": p.steps,
        "time_ns": None if no_ops else float(p.time_ns),
        "wall_ns": float(p.wall_ns) if p.steps else None,
        "tokens": float(p.tokens), "per_token_ns": None if no_ops else _num(p.per_token_ns),
        "step_p50_ns": _num(p.step_p50_ns), "step_p99_ns": _num(p.step_p99_ns),
        "color": PHASE_COLORS.get(p.phase, OTHER_COLOR),
    } for p in rows_in]
    order = {p: i for i, p in enumerate(PHASES)}
    rows.sort(key=lambda r: order.get(r["phase"], len(PHASES)))
    # Where each phase's op time goes: share of that phase's time per fused op.
    mix: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        per = [(f.fused_op, float(f.time_ns_by_phase.get(r["phase"], 0))) for f in summary.fused_ops]
        total = sum(v for _, v in per)
        if total > 0:
            mix[r["phase"]] = [{"fused_op": n, "time_ns": v, "share": v / total} for n, v in per if v > 0]
    figs: dict[str, Any] = {}
    if len(mix) > 1:
        phases = list(mix)
        data = []
        for op in (f.fused_op for f in summary.fused_ops):
            x = [next((m["share"] * 100 for m in mix[p] if m["fused_op"] == op), 0.0) for p in phases]
            if any(x):
                data.append({"type": "bar", "orientation": "h", "name": op, "y": phases, "x": x,
                             "marker": {"color": colors.get(op, OTHER_COLOR)},
                             "hovertemplate": "%{fullData.name} · %{y}: %{x:.1f}%<extra></extra>"})
        figs["phase_mix"] = {"data": data, "layout": _layout(
            barmode="stack", height=130 + 40 * len(phases), bargap=0.3,
            xaxis=_axis("", range=[0, 100], ticksuffix="%"),
            yaxis={"automargin": True, "autorange": "reversed"})}
    per_tok = [f for f in summary.fused_ops if any(_num(f.per_token_ns_by_phase.get(p)) for p in TOKEN_PHASES)]
    if per_tok:
        names = [f.fused_op for f in per_tok]
        data = []
        for p in TOKEN_PHASES:
            y = [_num(f.per_token_ns_by_phase.get(p)) for f in per_tok]
            if any(v for v in y if v):
                data.append({"type": "bar", "name": p, "x": names, "y": [None if v is None else v / 1e3 for v in y],
                             "marker": {"color": PHASE_COLORS[p]},
                             "hovertemplate": "%{x} · %{fullData.name}: %{y:.2f} µs/token<extra></extra>"})
        figs["per_token"] = {"data": data, "layout": _layout(
            barmode="group", height=320, yaxis=_axis("µs per token"), xaxis={"automargin": True})}
    known = any(r["phase"] != "unknown" for r in rows)
    section = {"rows": rows, "mix": mix, "known": known, "figures": list(figs)}
    return section, figs


ROW_CAPTIONS = {"tokens": "prefill and decode tokens per step", "requests": "running and waiting requests",
                "host overhead (ms)": "host overhead: the step's wall time with no op running"}


def build_steps(summary: Summary) -> tuple[dict | None, dict]:
    st = summary.steps
    n_all = len(st.wall_ns)
    if n_all < 2:  # one step is no timeline; the phase table shows it
        return None, {}

    def col(name: str) -> np.ndarray:
        a = np.asarray(getattr(st, name), dtype=np.float64)
        if name in ("running", "waiting"):
            a[a < 0] = np.nan  # -1: not known
        return a

    rank = col("rank")
    ranks = sorted(set(rank.tolist()))
    keep = rank == ranks[0]
    start = col("start_ns")[keep]
    use_time = bool(np.all(start >= 0))
    order = np.argsort(start, kind="stable") if use_time else np.arange(int(keep.sum()))
    phase = np.asarray(st.phase, dtype=object)[keep][order]
    # seconds on the profile's own clock, as in the memory and throughput charts
    x = (start / 1e9)[order] if use_time else np.arange(len(order), dtype=np.float64)
    get = {name: col(name)[keep][order] for name in
           ("wall_ns", "busy_ns", "idle_ns", "prefill_tokens", "decode_tokens", "running", "waiting")}
    if not np.nansum(get["busy_ns"]) > 0:  # no op time in any step: "overhead" would just repeat the wall time
        get["idle_ns"] = np.full(len(get["idle_ns"]), np.nan)
    rows: list[list[dict[str, Any]]] = []  # subplot rows, each a list of traces
    binned = 1
    wall_traces = []
    for p in PHASES:
        m = phase == p
        if not m.any():
            continue
        xr, (yr,), k = _reduce(x[m], [get["wall_ns"][m] / 1e6], MAX_POINTS)
        binned = max(binned, k)
        size = 7 if len(xr) < 200 else 5 if len(xr) < 1000 else 3
        wall_traces.append({"type": "scatter", "mode": "markers", "name": p, "x": xr, "y": yr,
                            "marker": {"color": PHASE_COLORS[p], "size": size}, "legendgroup": "phase",
                            "hovertemplate": "%{fullData.name} step: %{y:.3f} ms<extra></extra>"})
    rows.append(wall_traces)
    labels = ["step time (ms)"]

    def series(names: list[tuple[str, str, str]], scale: float, label: str, stack: bool = False) -> None:
        present = [(c, nm, color) for c, nm, color in names
                   if np.isfinite(get[c]).any() and np.nanmax(np.abs(get[c])) > 0]
        if not present:
            return
        nonlocal binned
        xr, ys, k = _reduce(x, [np.nan_to_num(get[c]) / scale for c, _, _ in present], MAX_POINTS)
        binned = max(binned, k)
        rows.append([{"type": "scatter", "mode": "lines", "name": nm, "x": xr, "y": y,
                      "line": {"color": color, "width": 1.5, "shape": "hv"},
                      **({"stackgroup": "tok"} if stack else {})}
                     for (_, nm, color), y in zip(present, ys)])
        labels.append(label)

    series([("prefill_tokens", "prefill tokens", PHASE_COLORS["prefill"]),
            ("decode_tokens", "decode tokens", PHASE_COLORS["decode"])], 1, "tokens", stack=True)
    series([("running", "running requests", "#2e86ab"), ("waiting", "waiting requests", "#d1495b")], 1, "requests")
    series([("idle_ns", "host overhead (wall − busy)", "#5d737e")], 1e6, "host overhead (ms)")
    gap = 0.06
    heights = [2.0] + [1.0] * (len(rows) - 1)
    unit = (1 - gap * (len(rows) - 1)) / sum(heights)
    layout = _layout(height=260 + 150 * (len(rows) - 1), hovermode="closest")
    top = 1.0
    data = []
    for i, (traces, h, lab) in enumerate(zip(rows, heights, labels)):
        ax = "" if i == 0 else str(i + 1)
        bottom = max(0.0, top - h * unit)
        layout["yaxis" + ax] = _axis(lab, domain=[bottom, top], anchor="x", rangemode="tozero")
        if i == 0:  # markers: leave room above the highest so none sits on the edge
            ys = np.concatenate([np.asarray(t["y"], dtype=np.float64) for t in traces] or [np.zeros(0)])
            top_ms = float(np.nanmax(ys)) if np.isfinite(ys).any() else 0.0
            if top_ms > 0:
                layout["yaxis"]["range"] = [0, 1.1 * float(top_ms)]
        for t in traces:
            t["yaxis"] = "y" + ax
            data.append(t)
        top = bottom - gap
    layout["xaxis"] = _axis("time (s)" if use_time else "step",
                            anchor="y" + (str(len(rows)) if len(rows) > 1 else ""))
    caption = "; ".join(["Step wall time coloured by phase"] + [ROW_CAPTIONS[lab] for lab in labels[1:]]) + "."
    section = {"steps": int(keep.sum()), "total_steps": n_all, "ranks": [int(r) for r in ranks],
               "caption": caption,
               "rank_shown": int(ranks[0]), "x": "time" if use_time else "step", "binned": binned,
               "figures": ["steps"]}
    return json_ready(section), json_ready({"steps": {"data": data, "layout": layout}})


def _series_kind(name: str) -> str | None:
    """How a counter series is plotted: "bytes", "kv" (a 0..1 fraction), "rate" (per s) or not at all."""
    base = name.split(".", 1)[0]
    if base == "kv_cache_usage":
        return "kv"
    if base.endswith("_bytes"):
        return "bytes"
    if base.endswith("_per_s"):
        return "rate"
    return None


def _series_label(name: str) -> str:
    """``host_rss_bytes.worker`` → ``host RSS (worker)``."""
    base, _, part = name.partition(".")
    label = MEMORY_LABELS.get(base) or RATE_LABELS.get(base) or base.replace("_", " ")
    return f"{label} ({part})" if part else label


def _counter_traces(series: list[Series], how: str) -> tuple[list[dict], int]:
    """One line per series (name × rank): x in s; y in GiB, % or per s."""
    ranks = sorted({s.rank for s in series})
    dashes = ("solid", "dot", "dash", "longdash", "dashdot")
    spare = iter(SERIES_PALETTE * 4)
    colors: dict[str, str] = {}
    data, binned = [], 1
    for s in series:
        name = s.name
        kind = _series_kind(name)
        scale = {"bytes": 1 / 2**30, "kv": 100.0}.get(kind or "", 1.0)
        t = np.asarray(s.t_ns, dtype=np.float64)
        v = np.asarray([np.nan if x is None else x for x in s.value], dtype=np.float64) * scale
        xr, (yr,), k = _reduce(t / 1e9, [v], MAX_POINTS, how=how)
        binned = max(binned, k)
        rank = s.rank
        label = _series_label(name) + (f" (rank {rank})" if len(ranks) > 1 else "")
        color = colors.setdefault(name, SERIES_COLORS.get(name) or next(spare))
        unit = {"bytes": " GiB", "kv": " %", "rate": " /s"}.get(kind or "", "")
        data.append({"type": "scatter", "mode": "lines", "name": label, "x": xr, "y": yr,
                     "line": {"color": color, "width": 1.5, "shape": "hv", "dash": dashes[ranks.index(rank) % 5]},
                     "yaxis": "y2" if kind == "kv" else "y",
                     "hovertemplate": "%{fullData.name}: %{y:.3~f}" + unit + "<extra></extra>"})
    return data, binned


def _timed(summary: Summary) -> list[Series]:
    return [s for s in summary.memory.series if s.t_ns and s.value]


def build_memory(summary: Summary) -> tuple[dict | None, dict]:
    """Peaks and a chart of device memory, host RSS (GiB) and KV-cache usage (%) over time."""
    series = [s for s in _timed(summary) if _series_kind(s.name) in ("bytes", "kv")]
    peak = summary.memory.peak
    peaks = [{"name": k, "label": _series_label(k), "kind": _series_kind(k), "value": _num(v)}
             for k, v in peak.items() if _series_kind(k) in ("bytes", "kv") and _num(v) is not None]
    if not series and not peaks:
        return None, {}
    figs = {}
    binned = 1
    if series:
        data, binned = _counter_traces(series, how="max")
        kinds = {_series_kind(s.name) for s in series}
        lay = _layout(height=360, hovermode="x unified", xaxis=_axis("time (s)"))
        kv_peak = max((p["value"] for p in peaks if p["kind"] == "kv"), default=0.0) * 100
        kv_axis = _axis("KV-cache usage", ticksuffix="%", tickmode="auto", nticks=6,
                        range=[0, min(100.0, max(5.0, 1.15 * kv_peak))])
        if "bytes" in kinds:
            lay["yaxis"] = _axis("GiB", rangemode="tozero")
            if "kv" in kinds:
                lay["yaxis2"] = {**kv_axis, "overlaying": "y", "side": "right", "showgrid": False}
                lay["margin"]["r"] = 70
        else:
            lay["yaxis"] = kv_axis
            for d in data:
                d["yaxis"] = "y"
        figs["memory"] = {"data": data, "layout": lay}
    return json_ready({"peaks": peaks, "binned": binned, "figures": list(figs)}), json_ready(figs)


def build_rates(summary: Summary) -> tuple[dict | None, dict]:
    """Token rates over time (the ``*_per_s`` counter series of a live run)."""
    series = [s for s in _timed(summary) if _series_kind(s.name) == "rate"]
    if not series:
        return None, {}
    data, binned = _counter_traces(series, how="mean")
    lay = _layout(height=320, hovermode="x unified", xaxis=_axis("time (s)"),
                  yaxis=_axis("tokens / s", rangemode="tozero"))
    return json_ready({"binned": binned, "figures": ["rates"]}), json_ready({"rates": {"data": data, "layout": lay}})


def build_kernels(summary: Summary, colors: Mapping[str, str]) -> dict | None:
    if not summary.top_kernels:
        return None
    rows = [{"name": r.name, "short": short_name(r.name), "fused_op": r.fused_op, "kind": r.kind,
             "count": r.count, "time_ns": float(r.time_ns), "mean_ns": r.mean_ns, "share": r.share}
            for r in summary.top_kernels]
    rows.sort(key=lambda r: -r["time_ns"])
    shown = rows[:MAX_KERNEL_ROWS]
    return {"rows": shown, "total": len(rows), "shown": len(shown),
            "fused_ops": sorted({r["fused_op"] for r in shown}, key=lambda n: (n == "other", n)),
            "colors": {n: colors.get(n, OTHER_COLOR) for n in {r["fused_op"] for r in shown}}}


def build_ranks(summary: Summary) -> tuple[dict | None, dict]:
    if len(summary.ranks) < 2:
        return None, {}
    rows = sorted(({"rank": r.rank, "op_time_ns": float(r.op_time_ns), "device_kernel_ns": float(r.device_kernel_ns),
                    "wall_ns": float(r.wall_ns) or None, "steps": r.steps, "busy_share": _num(r.busy_share)}
                   for r in summary.ranks), key=lambda r: r["rank"])
    op = [r["op_time_ns"] for r in rows]
    mean = sum(op) / len(op)
    for r, v in zip(rows, op):
        r["vs_mean"] = (v / mean - 1) if mean else None
    names = [f"rank {r['rank']}" for r in rows]
    data = [{"type": "bar", "name": "op time", "x": names, "y": [v / 1e6 for v in op],
             "marker": {"color": "#3b6fb6"}, "hovertemplate": "%{x}: %{y:.3f} ms<extra>op time</extra>"}]
    if any(r["wall_ns"] for r in rows):
        data.append({"type": "bar", "name": "wall", "x": names, "y": [_ms(r["wall_ns"]) for r in rows],
                     "marker": {"color": "#c4c4c4"}, "hovertemplate": "%{x}: %{y:.3f} ms<extra>wall</extra>"})
    fig = {"data": data, "layout": _layout(barmode="group", height=300, yaxis=_axis("time (ms)"))}
    spread = (max(op) - min(op)) / mean if mean else None
    return {"rows": rows, "spread": spread, "figures": ["ranks"]}, {"ranks": fig}


# -- the whole report -----------------------------------------------------------

SECTION_TITLES = {
    "headline": "Key figures", "fused_ops": "Time by fused op", "phases": "Prefill vs decode",
    "steps": "Step timeline", "rates": "Throughput", "memory": "Memory", "kernels": "Top kernels",
    "ranks": "Ranks",
}


def build_report(summary: Summary, *, plotly: PlotlyMode = "inline") -> dict[str, Any]:
    """All data of the report, JSON-ready; sections without data are None."""
    if plotly not in ("inline", "cdn"):
        raise ValueError(f"plotly must be 'inline' or 'cdn', not {plotly!r}")
    colors = fused_colors([f.fused_op for f in summary.fused_ops] + [k.fused_op for k in summary.top_kernels])
    figures: dict[str, Any] = {}
    from .. import __version__

    report: dict[str, Any] = {"schema": "xpu_profiler.report", "version": 1,
                              "generator": f"xpu_profiler {__version__}",
                              "header": build_header(summary), "headline": build_headline(summary)}
    for key, builder in (("fused_ops", lambda: build_fused_ops(summary, colors)),
                         ("phases", lambda: build_phases(summary, colors)),
                         ("steps", lambda: build_steps(summary)),
                         ("rates", lambda: build_rates(summary)),
                         ("memory", lambda: build_memory(summary))):
        section, figs = builder()
        report[key] = section
        figures.update(figs)
    report["kernels"] = build_kernels(summary, colors)
    report["ranks"], figs = build_ranks(summary)
    figures.update(figs)
    report["figures"] = figures
    report["colors"] = {"phases": PHASE_COLORS, "fused_ops": colors}
    report["warnings"] = list(summary.warnings)
    report["nav"] = [{"id": k, "title": t} for k, t in SECTION_TITLES.items() if report.get(k)]
    report["plotly"] = {"mode": plotly, "version": templates.plotly_version()}
    return json_ready(report)


def render(report: Mapping[str, Any]) -> str:
    """The HTML page of a report made by ``build_report``."""
    return templates.render(report)


def write(profile: Any, summary: Summary, path: str | Path, *, plotly: PlotlyMode = "inline") -> Path:
    """Write the report for ``summary`` to ``path`` (``profile`` is not needed)."""
    path = Path(path)
    html = render(build_report(summary, plotly=plotly))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path

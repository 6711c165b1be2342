"""Key figures: throughput, latency, step time, busy share, memory peaks, "other" share."""

from __future__ import annotations

from typing import Any

from ...core import fmt
from ...core.fmt import number
from ...summary import Summary
from .findings import mfu_cards
from .style import MEMORY_LABELS


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def build_headline(summary: Summary) -> dict[str, Any] | None:
    """Key figures as cards: ``{key, label, value, unit, sub}``; values are raw numbers."""
    cards: list[dict[str, Any]] = []
    _throughput_cards(cards, summary)
    _step_cards(cards, summary)
    has_ops = bool(summary.totals.op_time_ns)
    _card(
        cards,
        "busy",
        "Device busy" if summary.basis != "host" else "Host op busy",
        _busy_share(summary) if has_ops else None,
        "%",
        "share of wall time with work on the device"
        if summary.basis != "host"
        else "share of wall time inside top-level ops",
    )
    _memory_cards(cards, summary)
    for key, label, value, sub in mfu_cards(summary):
        _card(cards, key, label, value, "%", sub)
    if has_ops:
        _card(
            cards,
            "other_share",
            'Unattributed ("other")',
            100 * summary.totals.other_share,
            "%",
            "op time no fused op claimed",
        )
    latency = _latency_rows(summary)
    if not cards and not latency:
        return None
    return {"cards": cards, "latency": latency}


def _card(cards: list[dict[str, Any]], key: str, label: str, value: Any, unit: str, sub: str | None = None) -> None:
    """A card added to ``cards`` where its value is a number."""
    v = number(value)
    if v is not None:
        cards.append({"key": key, "label": label, "value": v, "unit": unit, "sub": sub})


def _throughput_cards(cards: list[dict[str, Any]], summary: Summary) -> None:
    """Output, prefill and decode throughput."""
    tp = summary.throughput
    # a rate of 0 tok/s only means that the source has no token counts: no card then
    _card(
        cards,
        "output_tok_s",
        "Output throughput",
        tp.output_tok_s or None,
        "tok/s",
        f"{tp.requests} requests" if tp.requests is not None else None,
    )
    _card(
        cards,
        "prefill_tok_s",
        "Prefill throughput",
        tp.prefill_tok_s or None,
        "tok/s",
        f"{tp.prefill_tokens:,} tokens over its steps" if tp.prefill_tokens is not None else None,
    )
    _card(
        cards,
        "decode_tok_s",
        "Decode throughput",
        tp.decode_tok_s or None,
        "tok/s",
        f"{tp.decode_tokens:,} tokens over its steps" if tp.decode_tokens is not None else None,
    )
    _card(
        cards,
        "span_tok_s",
        "Tokens over the window",
        tp.span_tok_s or None,
        "tok/s",
        f"first step to last, {fmt.ns(tp.duration_ns, fmt.REPORT)}, gaps included" if tp.duration_ns else None,
    )


def _step_cards(cards: list[dict[str, Any]], summary: Summary) -> None:
    """TTFT and TPOT, then each phase's median step time (p99 under them)."""
    tp = summary.throughput
    for key, label, lat in (("ttft", "TTFT p50", tp.ttft_ns), ("tpot", "TPOT p50", tp.tpot_ns)):
        if lat is not None:
            p99 = number(lat.p99)
            _card(cards, key, label, lat.p50, "ns", f"p99 {fmt.ns(p99, fmt.REPORT)}" if p99 is not None else None)
    for ph in summary.phases:
        p99 = number(ph.step_p99_ns)
        label = "Step p50" if ph.phase == "unknown" else f"{ph.phase.capitalize()} step p50"
        _card(
            cards,
            f"step_{ph.phase}",
            label,
            ph.step_p50_ns,
            "ns",
            f"p99 {fmt.ns(p99, fmt.REPORT)} · {_plural(ph.steps, 'step')}" if p99 is not None else None,
        )


def _memory_cards(cards: list[dict[str, Any]], summary: Summary) -> None:
    """The device memory peak (the largest host process's where there is none) and the
    KV-cache usage peak."""
    peak, dev = summary.memory.peak, summary.device
    for name in ("device_allocated_bytes", "device_reserved_bytes"):
        if number(peak.get(name)):
            cap = number(dev.mem_bytes) if dev is not None else None
            _card(
                cards,
                "peak_" + name,
                f"Peak {MEMORY_LABELS[name]}",
                peak[name],
                "bytes",
                f"{100 * peak[name] / cap:.1f}% of {fmt.size(cap, fmt.REPORT)}" if cap else None,
            )
            break
    else:  # no device memory (CPU runs): the largest host process instead
        rss = [(v, name) for name, v in peak.items() if name.split(".", 1)[0] == "host_rss_bytes" and number(v)]
        if rss:
            value, name = max(rss)
            process = name.partition(".")[2]
            _card(cards, "peak_host_rss", "Peak host RSS", value, "bytes", f"{process} process" if process else None)
    if number(peak.get("kv_cache_usage")) is not None:
        _card(cards, "peak_kv", "Peak KV-cache usage", 100 * peak["kv_cache_usage"], "%")


def _latency_rows(summary: Summary) -> list[dict[str, Any]]:
    """The latency table: p50, p99 and mean of TTFT, TPOT and end-to-end latency, where known."""
    tp = summary.throughput
    latency = []
    for label, lat in (
        ("Time to first token", tp.ttft_ns),
        ("Time per output token", tp.tpot_ns),
        ("End-to-end latency", tp.e2e_ns),
    ):
        if lat is None:
            continue
        row = {"p50": number(lat.p50), "p99": number(lat.p99), "mean": number(lat.mean)}
        if any(v is not None for v in row.values()):
            latency.append({"label": label, **row})
    return latency


def _busy_share(summary: Summary) -> float | None:
    ranks = [x for r in summary.ranks if (x := number(r.busy_share)) is not None]
    if ranks:
        return 100 * sum(ranks) / len(ranks)
    tot = summary.totals
    busy = tot.device_busy_ns if summary.basis != "host" else tot.host_op_ns
    if not tot.wall_ns:
        return None
    return 100 * min(busy / tot.wall_ns, 1.0)

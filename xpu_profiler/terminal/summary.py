"""The terminal summary: the same tables for `analyze` and live runs."""

from __future__ import annotations

from ..core import fmt
from ..summary import Summary
from ..summary.labels import ATTRIBUTION_SOURCES, BOUND
from .layers import render_layers
from .layout import (
    BAD,
    DIM,
    GOOD,
    NAME,
    VERDICT_STYLES,
    Block,
    Cell,
    cell,
    hanging,
    heading,
    line,
    table,
    titled,
    to_text,
)
from .ranks import render_ranks
from .screen import PLAIN, Screen
from .steps import step_lines, verdict_lines

PHASE_COLUMNS = ("prefill", "decode", "mixed", "unknown")
NAME_WIDTH = 70
FINDING_INDENT = 13  # a finding's fix and why, under its title


def fmt_ns(ns: float | None) -> str:
    return fmt.ns(ns, fmt.TERMINAL)


def _pct(share: float) -> str:
    return fmt.pct(share, fmt.TERMINAL)


def _name(name: str) -> str:
    """A name from a trace, clipped, with its control characters shown, not acted on."""
    return fmt.clip(fmt.plain(name), NAME_WIDTH)


def render_findings(summary: Summary) -> list[Block]:
    """The findings, first in every terminal summary: rank, time at stake, what, the fix."""
    if not summary.findings:
        if summary.step_search.message or not summary.totals.steps:
            return [heading("Findings: none of the rules fired, and the step-based ones had no steps to judge")]
        return [heading("Findings: none above 0.5% of step time")]
    out: list[Block] = [heading(f"Findings ({len(summary.findings)}, by the share of step time at stake)")]
    for i, f in enumerate(summary.findings, 1):
        where = f" [{f.phase}]" if f.phase else ""
        head = line(
            f"{i:2d}. ",
            (f"{_pct(f.at_stake_share):>6s}", "bold"),
            "  ",
            (f"{f.rule}{where}", NAME),
            f": {fmt.plain(f.title)}",
        )
        out.append(hanging(head, FINDING_INDENT))
        out.append(hanging(line(("fix:", GOOD), f" {fmt.plain(f.fix)}"), 5, FINDING_INDENT))
        if f.why:
            out.append(hanging(line(("why:", DIM), f" {fmt.plain(f.why)}"), 5, FINDING_INDENT))
    return out


def render_roofline(summary: Summary) -> list[Block]:
    """Achieved FLOP/s and bandwidth per phase against the device's peaks."""
    rows = []
    for r in summary.roofline:
        rows.append(
            [
                r.phase,
                r.component,
                r.source,
                fmt.count(r.flop_s and r.flop_s / 1e9, fmt.TERMINAL),
                fmt.count(r.bytes_s and r.bytes_s / 1e9, fmt.TERMINAL),
                _share(r.flops_share, r.over_peak, "FLOP/s"),
                _share(r.bw_share, r.over_peak, "bandwidth"),
                r.judged_by,
            ]
        )
    if not rows:
        return (
            ["", line(("MFU and bandwidth:", "bold"), f" {summary.roofline_missing}")]
            if summary.roofline_missing
            else []
        )
    out: list[Block] = titled("MFU and bandwidth (against the device's peak)")
    out += table(
        ["phase", "component", "source", "GFLOP/s", "GB/s", "of peak FLOP/s", "of peak BW", "bound by"],
        rows,
        "lllrrrrl",
    )
    notes = sorted({r.note for r in summary.roofline if r.note})
    over = [r.over_peak for r in summary.roofline if r.over_peak]
    return out + [f"  note: {n}" for n in notes] + [line(("  over peak: ", BAD), fmt.plain(x)) for x in over]


def _share(share: float | None, over_peak: str, figure: str) -> str:
    if share is not None:
        return _pct(share)
    return "over peak (wrong)" if f"{figure} " in over_peak else "unknown peak"


def render(summary: Summary, top: int = 10, screen: Screen = PLAIN) -> str:
    """The terminal summary as text for ``screen`` (plain, each line whole, by default)."""
    return to_text(blocks(summary, top), screen)


def blocks(summary: Summary, top: int = 10) -> list[Block]:
    """The terminal summary's lines and tables, in order (``layout.to_text`` lays them out)."""
    head = step_lines(summary) + verdict_lines(summary)
    out: list[Block] = head + ([""] if head else []) + render_findings(summary) + [""]
    out += op_time_lines(summary)
    out += fused_op_table(summary)
    out += top_kernel_table(summary, top)
    out += phase_table(summary)
    out += device_lines(summary)
    out += render_layers(summary)
    out += throughput_lines(summary)
    out += render_roofline(summary)
    out += render_ranks(summary)
    return out


def op_time_lines(summary: Summary) -> list[Block]:
    """The op time in all, how it was attributed, and whether the input has a timeline."""
    t = summary.totals
    basis = "device kernel" if summary.basis == "device" else "host op (top-level)"
    out: list[Block] = [
        f"Op time ({basis}): {fmt_ns(t.op_time_ns)} over {t.steps} engine steps, "
        f"{t.ranks} rank(s), {t.events:,} events; 'other' = {_pct(t.other_share)}"
    ]
    out += attribution_lines(summary)
    if not summary.has_timeline:
        out.append("No timeline in the input (kernel totals only): step and phase columns are empty.")
    return out


def fused_op_table(summary: Summary) -> list[Block]:
    """Time by fused op: in all, per phase, and what attributed it."""
    phases = [p for p in PHASE_COLUMNS if any(f.time_ns_by_phase.get(p) for f in summary.fused_ops)]
    rows = []
    for f in summary.fused_ops:
        rows.append(
            [fmt.plain(f.fused_op), fmt_ns(f.time_ns), _pct(f.share), f"{f.count:,}"]
            + [fmt_ns(f.time_ns_by_phase.get(p, 0)) for p in phases]
            + [_sources(f.time_ns_by_source)]
        )
    return titled("Time by fused op") + table(
        ["fused op", "time", "share", "count"] + phases + ["attributed by"], rows, "lrrr" + "r" * len(phases) + "l"
    )


def top_kernel_table(summary: Summary, top: int) -> list[Block]:
    """The ``top`` kernels (host ops on the host basis) by time."""
    if not summary.top_kernels:
        return []
    rows = [
        [_name(k.name), fmt.plain(k.fused_op), fmt_ns(k.time_ns), _pct(k.share), f"{k.count:,}", fmt_ns(k.mean_ns)]
        for k in summary.top_kernels[:top]
    ]
    label = "Top kernels" if summary.basis == "device" else "Top ops"
    return titled(label) + table(["name", "fused op", "time", "share", "count", "mean"], rows, "llrrrr")


def phase_table(summary: Summary) -> list[Block]:
    """Steps by phase (counts, tokens, step-time percentiles, per token), and the steps'
    wall time against their busy time where there is no device clock."""
    if not (summary.phases and summary.totals.steps):
        return []
    rows = [
        [
            p.phase + (" (inferred)" if p.inferred_from else ""),
            str(p.steps),
            f"{p.tokens:,}",
            fmt_ns(p.step_p50_ns),
            fmt_ns(p.step_p99_ns),
            fmt_ns(p.host_p50_ns),
            fmt_ns(p.step_per_token_ns),
            fmt_ns(p.per_token_ns),
        ]
        for p in summary.phases
        if p.steps
    ]
    clock = (
        "the longer of host range and device range"
        if any(p.step_clock == "critical_path" for p in summary.phases)
        else "host range"
    )
    out: list[Block] = titled(f"Steps by phase (step time: {clock})") + table(
        ["phase", "steps", "tokens", "p50 step", "p99 step", "host p50", "step/token", "op time/token"],
        rows,
        "lrrrrrrr",
    )
    st = summary.steps
    if st.wall_ns and not summary.device_steps.rank:
        wall, busy = sum(st.wall_ns), sum(st.busy_ns)
        out.append(
            f"Step wall {fmt_ns(wall)}, busy {fmt_ns(busy)} ({_pct(busy / wall if wall else 0)}), "
            f"host overhead/idle {fmt_ns(max(wall - busy, 0))}"
        )
    return out


def _rate(tok_s: float | None) -> str:
    return "unknown" if tok_s is None else f"{tok_s:,.1f} tok/s"


def throughput_lines(summary: Summary) -> list[Block]:
    """Token throughput and latency, and the requests seen."""
    out: list[Block] = []
    tp = summary.throughput
    if tp.duration_ns:
        parts = [
            f"prefill {_rate(tp.prefill_tok_s)}, decode {_rate(tp.decode_tok_s)} (over each phase's steps)",
        ]
        if tp.span_tok_s:
            parts.append(f"{tp.span_tok_s:,.1f} tok/s over the {fmt_ns(tp.duration_ns)} window")
        if tp.ttft_ns is not None and tp.ttft_ns.p50 is not None:
            parts.append(f"TTFT p50 {fmt_ns(tp.ttft_ns.p50)}")
        if tp.tpot_ns is not None and tp.tpot_ns.p50 is not None:
            parts.append(f"TPOT p50 {fmt_ns(tp.tpot_ns.p50)}")
        out += ["", line(("Throughput:", "bold"), " " + ", ".join(parts))]
    rq = summary.requests
    if rq.req:
        done = sum(e is not None for e in rq.e2e_ns)
        parts = [f"{len(rq.req)} seen, {done} finished"]
        for label, d in (("TTFT", tp.ttft_ns), ("TPOT", tp.tpot_ns), ("end to end", tp.e2e_ns)):
            if d is not None and d.p50 is not None:
                parts.append(f"{label} p50 {fmt_ns(d.p50)} p99 {fmt_ns(d.p99)}")
        out.append(line(("Requests:", "bold"), " " + ", ".join(parts) + " (each one in summary.json)"))
    return out


def _sources(by_source: dict[str, int]) -> str:
    """A fused-op row's time by attribution source: the two largest, as shares."""
    total = sum(by_source.values())
    top = sorted(by_source.items(), key=lambda kv: -kv[1])[:2]
    return ", ".join(f"{ATTRIBUTION_SOURCES.get(k, k)} {_pct(v / total)}" for k, v in top) if total else ""


def attribution_lines(summary: Summary) -> list[Block]:
    """How op time was attributed, and what graph replays hold."""
    out: list[Block] = []
    a, g = summary.attribution, summary.graphs
    if a.share_by_source:
        parts = [
            f"{ATTRIBUTION_SOURCES.get(k, k)} {_pct(v)}"
            for k, v in sorted(a.share_by_source.items(), key=lambda kv: -kv[1])
        ]
        out.append(f"Attributed by: {', '.join(parts)} (inferred from names only: {_pct(a.name_share)})")
    st = a.structure
    found = [
        f"{st['moe_blocks']} MoE blocks" if st.get("moe_blocks") else "",
        f"{st['moe_events']} kernels in them as MoE whatever their names" if st.get("moe_events") else "",
        f"{st['staging_copies']} staging copies of collectives" if st.get("staging_copies") else "",
        f"{st['attention_pre']} compiled kernels before attention as RoPE" if st.get("attention_pre") else "",
    ]
    if any(found):
        out.append("Kernel sequence: " + "; ".join(f for f in found if f))
    if g.replays:
        line = (
            f"Graph replays: {g.replays:,} ({g.launches:,} graph launches in the trace), {g.replayed_events:,} "
            f"kernels, {_pct(g.share)} of device time"
        )
        if g.matched_share is not None:
            line += (
                f"; capture traces: {g.captured_graphs} graph(s), {g.matched_events:,} of {g.replayed_events:,} "
                f"replayed kernels matched ({_pct(g.matched_share)}), {g.attributed_events:,} attributed "
                "through the captured launch"
            )
        else:
            line += "; no capture trace: replayed kernels attributed by name (--capture to match them)"
        out.append(line)
    return out


def device_lines(summary: Summary) -> list[Block]:
    """Per phase on the device's clock: busy, idle by cause, the verdict and its evidence;
    the idle breakdown per stream."""
    phases = [(p, p.device) for p in summary.phases if p.device is not None]
    if not phases:
        return []
    rows: list[list[Cell]] = []
    for p, d in phases:
        rows.append(
            [
                p.phase,
                str(p.steps),
                fmt_ns(d.period_ns),
                fmt_ns(d.busy_ns),
                fmt_ns(d.idle_ns + d.starved_ns),
                fmt_ns(d.host_wait_ns),
                fmt_ns(d.kernel_wait_ns),
                fmt_ns(d.other_ns),
                cell(BOUND.get(p.bound or "", f"{p.bound}-bound"), VERDICT_STYLES.get(p.bound or "", "")),
            ]
        )
    out: list[Block] = titled("Device time by phase (each step's own device work, on the device's clock)")
    out += table(
        ["phase", "steps", "device time", "busy", "idle", "host wait", "kernel wait", "other", "verdict"],
        rows,
        "lrrrrrrrl",
    )
    out += [f"  {fmt.plain(p.bound_evidence or '')}" for p, _ in phases]
    out.append(
        "  (kernel wait = launch latency, at most "
        f"{fmt_ns(summary.device_steps.kernel_wait_max_ns)}; other = dependency waits: work queued but not running)"
    )
    tw = summary.device_steps.twins
    if tw.get("steps"):
        out.append(
            f"  gpu_user_annotation twins: {tw['agree']} of {tw['steps']} steps agree with the "
            f"correlation-id spans (max difference {fmt_ns(tw.get('max_diff_ns'))})"
        )
    if summary.idle:
        rows = [
            [
                str(i.rank),
                str(i.stream),
                i.phase,
                fmt_ns(i.busy_ns),
                f"{i.gaps:,}",
                fmt_ns(i.host_wait_ns),
                fmt_ns(i.kernel_wait_ns),
                fmt_ns(i.other_ns),
            ]
            for i in summary.idle
        ]
        out += [
            "",
            heading(
                f"Idle per stream (gap before each kernel: host wait, kernel wait <= "
                f"{fmt_ns(summary.device_steps.kernel_wait_max_ns)}, other)"
            ),
        ]
        out += table(["rank", "stream", "phase", "busy", "gaps", "host wait", "kernel wait", "other"], rows, "rrlrrrrr")
    return out

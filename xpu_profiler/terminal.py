"""The terminal summary: the same tables for `analyze` and live runs."""

from __future__ import annotations

from . import fmt
from .summary import Summary

PHASE_COLUMNS = ("prefill", "decode", "mixed", "unknown")
NAME_WIDTH = 70


def fmt_ns(ns: float | None) -> str:
    return fmt.ns(ns, fmt.TERMINAL)


def _pct(share: float) -> str:
    return fmt.pct(share, fmt.TERMINAL)


def _table(headers: list[str], rows: list[list[str]], align: str) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align))

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def _name(name: str) -> str:
    """A name from a trace, clipped, with its control characters shown, not acted on."""
    return fmt.clip(fmt.plain(name), NAME_WIDTH)


def render_findings(summary: Summary) -> list[str]:
    """The findings, first in every terminal summary: rank, time at stake, what, the fix."""
    if not summary.findings:
        return ["Findings: none above 0.5% of step time"]
    out = [f"Findings ({len(summary.findings)}, by the share of step time at stake)"]
    for i, f in enumerate(summary.findings, 1):
        where = f" [{f.phase}]" if f.phase else ""
        out.append(f"{i:2d}. {_pct(f.at_stake_share):>6s}  {f.rule}{where}: {fmt.plain(f.title)}")
        out.append(f"             fix: {fmt.plain(f.fix)}")
        if f.why:
            out.append(f"             why: {fmt.plain(f.why)}")
    return out


def render_roofline(summary: Summary) -> list[str]:
    """Achieved FLOP/s and bandwidth per phase against the device's peaks."""
    rows = []
    for r in summary.roofline:
        rows.append([r.phase, r.component, r.source, fmt.count(r.flop_s and r.flop_s / 1e9, fmt.TERMINAL),
                     fmt.count(r.bytes_s and r.bytes_s / 1e9, fmt.TERMINAL),
                     _pct(r.flops_share) if r.flops_share is not None else "unknown peak",
                     _pct(r.bw_share) if r.bw_share is not None else "unknown peak", r.judged_by])
    if not rows:
        return []
    out = ["", "MFU and bandwidth (against the device's peak)"]
    out += _table(["phase", "component", "source", "GFLOP/s", "GB/s", "of peak FLOP/s", "of peak BW", "bound by"],
                  rows, "lllrrrrl")
    notes = sorted({r.note for r in summary.roofline if r.note})
    return out + [f"  note: {n}" for n in notes]


def render(summary: Summary, top: int = 10) -> str:
    out: list[str] = render_findings(summary) + [""]
    t = summary.totals
    basis = "device kernel" if summary.basis == "device" else "host op (top-level)"
    out.append(f"Op time ({basis}): {fmt_ns(t.op_time_ns)} over {t.steps} steps, "
               f"{t.ranks} rank(s), {t.events:,} events; 'other' = {_pct(t.other_share)}")
    if not summary.has_timeline:
        out.append("No timeline in the input (kernel totals only): step and phase columns are empty.")
    phases = [p for p in PHASE_COLUMNS if any(f.time_ns_by_phase.get(p) for f in summary.fused_ops)]
    rows = []
    for f in summary.fused_ops:
        rows.append([f.fused_op, fmt_ns(f.time_ns), _pct(f.share), f"{f.count:,}"]
                    + [fmt_ns(f.time_ns_by_phase.get(p, 0)) for p in phases])
    out += ["", "Time by fused op"] + _table(["fused op", "time", "share", "count"] + phases, rows,
                                              "lrrr" + "r" * len(phases))
    if summary.top_kernels:
        rows = [[_name(k.name), k.fused_op, fmt_ns(k.time_ns), _pct(k.share),
                 f"{k.count:,}", fmt_ns(k.mean_ns)] for k in summary.top_kernels[:top]]
        label = "Top kernels" if summary.basis == "device" else "Top ops"
        out += ["", label] + _table(["name", "fused op", "time", "share", "count", "mean"], rows, "llrrrr")
    if summary.phases and t.steps:
        rows = [[p.phase, str(p.steps), f"{p.tokens:,}", fmt_ns(p.step_p50_ns),
                 fmt_ns(p.step_p99_ns), fmt_ns(p.per_token_ns)] for p in summary.phases if p.steps]
        out += ["", "Steps by phase"] + _table(["phase", "steps", "tokens", "p50 step", "p99 step", "op time/token"],
                                               rows, "lrrrrr")
        st = summary.steps
        if st.wall_ns:
            wall, busy = sum(st.wall_ns), sum(st.busy_ns)
            out.append(f"Step wall {fmt_ns(wall)}, busy {fmt_ns(busy)} ({_pct(busy / wall if wall else 0)}), "
                       f"host overhead/idle {fmt_ns(max(wall - busy, 0))}")
    tp = summary.throughput
    if tp.duration_ns:
        parts = [f"prefill {tp.prefill_tok_s or 0:,.1f} tok/s", f"decode {tp.decode_tok_s or 0:,.1f} tok/s"]
        if tp.ttft_ns is not None and tp.ttft_ns.p50 is not None:
            parts.append(f"TTFT p50 {fmt_ns(tp.ttft_ns.p50)}")
        if tp.tpot_ns is not None and tp.tpot_ns.p50 is not None:
            parts.append(f"TPOT p50 {fmt_ns(tp.tpot_ns.p50)}")
        out += ["", "Throughput: " + ", ".join(parts)]
    out += render_roofline(summary)
    if len(summary.ranks) > 1:
        rows = [[str(r.rank), fmt_ns(r.op_time_ns), fmt_ns(r.wall_ns), str(r.steps)] for r in summary.ranks]
        out += ["", "Per rank"] + _table(["rank", "op time", "wall", "steps"], rows, "rrrr")
    return "\n".join(out)

"""The diff as terminal tables (names from traces escaped through ``fmt.plain``)."""

from __future__ import annotations

from ..core import fmt
from ..summary.diff import DiffReport, MetricDelta, OpDelta
from .layout import BAD, GOOD, Block, Cell, cell, line, table, titled, to_text
from .screen import PLAIN, Screen
from .summary import _name

TOP_ROWS = 10
TOP_PER_PHASE = 6


def _num(m: MetricDelta, v: float | None) -> str:
    if v is None:
        return "-"
    return fmt.ns(v, fmt.TERMINAL) if m.name.endswith("_ns") else fmt.count(v, fmt.TERMINAL)


def _verdict(regression: float | None) -> Cell:
    if regression is None or abs(regression) < 1e-9:
        return ""
    return cell("worse", BAD) if regression > 0 else cell("better", GOOD)


def _chg(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _op_rows(rows: list[OpDelta], n: int) -> list[list[Cell]]:
    return [
        [
            r.phase,
            _name(r.key),
            fmt.ns(r.base_per_token_ns, fmt.TERMINAL),
            fmt.ns(r.new_per_token_ns, fmt.TERMINAL),
            fmt.ns(r.delta_per_token_ns, fmt.TERMINAL),
            _chg(r.change),
            "-" if r.share_of_change is None else f"{100 * r.share_of_change:.0f}%",
            r.status,
        ]
        for r in rows[:n]
    ]


def render(report: DiffReport, screen: Screen = PLAIN) -> str:
    """The diff as text for ``screen`` (plain, each line whole, by default)."""
    return to_text(blocks(report), screen)


def blocks(report: DiffReport) -> list[Block]:
    """The diff's lines and tables, in order."""
    out = header_lines(report)
    out += settings_table(report)
    out += metric_table(report)
    out += split_table(report)
    out += host_table(report)
    out += op_tables(report)
    out += layer_table(report)
    out += added_removed_lines(report)
    out += findings_lines(report)
    out += gate_lines(report)
    return out


def header_lines(report: DiffReport) -> list[Block]:
    """The two runs, the headline change, why they cannot be compared (if so), vendors and engines."""
    out: list[Block] = [
        line(("BASE", "bold"), f" {fmt.plain(report.base)}"),
        line(("NEW ", "bold"), f" {fmt.plain(report.new)}"),
        "",
        line(("Change:", "bold"), f" {fmt.plain(report.headline)}"),
    ]
    if not report.comparable:
        out += ["", line(("CANNOT COMPARE these runs:", BAD))]
        out += [f"  - {fmt.plain(r)}" for r in report.reasons]
        out.append("  (the tables below show each side's numbers; no difference is measured between them)")
    v, e = report.vendors, report.engines
    if any(v.values()) or any(e.values()):
        out.append(
            f"BASE: {v.get('base') or '?'} / {e.get('base') or '?'};  NEW: {v.get('new') or '?'} / "
            f"{e.get('new') or '?'}  (vendor / engine); phases compared: {', '.join(report.phases_compared) or 'none'}"
            + (" (all steps pooled: the phases differ)" if report.pooled else "")
        )
    return out


def settings_table(report: DiffReport) -> list[Block]:
    """The run settings that differ between the two sides."""
    if not report.settings:
        return []
    return titled("Settings that differ") + table(
        ["setting", "base", "new"],
        [[fmt.plain(str(s.key)), fmt.plain(str(s.base)), fmt.plain(str(s.new))] for s in report.settings],
        "lll",
    )


def metric_table(report: DiffReport) -> list[Block]:
    """Step time, throughput and latency, side by side, with which way each moved."""
    rows = [
        [
            m.phase or "-",
            m.name,
            _num(m, m.base),
            _num(m, m.new),
            _chg(m.change),
            _verdict(m.regression),
        ]
        for m in report.metrics
        if m.name not in ("steps", "tokens")
    ]
    return titled("Step time, throughput, latency") + table(
        ["phase", "metric", "base", "new", "change", ""], rows, "llrrrl"
    )


def split_table(report: DiffReport) -> list[Block]:
    """Per phase: its step p50, the device's work per token and the host time it waited on
    per step, BASE → NEW."""
    if not report.steps:
        return []

    def arrow(b: float | None, n: float | None) -> str:
        return f"{fmt.ns(b, fmt.TERMINAL)} → {fmt.ns(n, fmt.TERMINAL)}"

    rows = [
        [
            s.phase,
            arrow(s.base_step_p50_ns, s.new_step_p50_ns),
            arrow(s.base_device_per_token_ns, s.new_device_per_token_ns),
            arrow(s.base_host_per_step_ns, s.new_host_per_step_ns),
        ]
        for s in report.steps
    ]
    return titled("Where the step time went (BASE → NEW)") + table(
        ["phase", "step p50", "device work per token", "exposed host time per step"], rows, "lrrr"
    )


def host_table(report: DiffReport) -> list[Block]:
    """Per phase, the causes of exposed host time whose time per step moved most."""
    rows = [
        [
            r.phase,
            fmt.plain(r.cause),
            _name(r.name) if r.name else "-",
            fmt.ns(r.base_per_step_ns, fmt.TERMINAL),
            fmt.ns(r.new_per_step_ns, fmt.TERMINAL),
            fmt.ns(r.delta_ns, fmt.TERMINAL),
            r.status,
        ]
        for r in report.host
        if r.cause != "all" and r.status != "unchanged"
    ]
    if not rows:
        return []
    return titled("Exposed host time per step, by cause (largest changes per phase)") + table(
        ["phase", "cause", "frame, op or call", "base/step", "new/step", "delta", ""], rows, "lllrrrl"
    )


def op_tables(report: DiffReport) -> list[Block]:
    """The fused ops (per phase) and the kernels whose time per token moved most."""
    out: list[Block] = []
    moved = [r for r in report.fused_ops if r.status != "unchanged"]
    if moved:
        per_phase = [
            r
            for ph in dict.fromkeys(r.phase for r in moved)
            for r in [x for x in moved if x.phase == ph][:TOP_PER_PHASE]
        ]
        out += titled("Fused ops per token (largest changes per phase)") + table(
            ["phase", "fused op", "base/token", "new/token", "delta", "change", "of phase change", ""],
            _op_rows(per_phase, len(per_phase)),
            "llrrrrrl",
        )
    k_moved = [r for r in report.kernels if r.status != "unchanged"]
    if k_moved:
        out += titled("Kernels per token (largest changes)") + table(
            ["phase", "kernel", "base/token", "new/token", "delta", "change", "of phase change", ""],
            _op_rows(k_moved, TOP_ROWS),
            "llrrrrrl",
        )
    return out


def layer_table(report: DiffReport) -> list[Block]:
    """One layer's cost per kind of layer, on each side."""
    if not report.layers:
        return []
    layer_rows = [
        [
            r.phase,
            _name(r.kind),
            f"{'-' if r.base_layers is None else r.base_layers}/{'-' if r.new_layers is None else r.new_layers}",
            fmt.ns(r.base_per_layer_ns, fmt.TERMINAL),
            fmt.ns(r.new_per_layer_ns, fmt.TERMINAL),
            _chg(r.change),
            r.per,
            fmt.plain(r.top_change),
        ]
        for r in report.layers
    ]
    return titled("Layers by kind (one layer's cost, per token of its phase or per step)") + table(
        ["phase", "kind", "layers", "base/layer", "new/layer", "change", "per", "moved most"],
        layer_rows,
        "llrrrrll",
    )


def added_removed_lines(report: DiffReport) -> list[Block]:
    """The kernel families and the kernels that only one side runs."""
    out: list[Block] = []
    for title, fams in (
        ("Kernel families added (fused ops only NEW runs)", report.families_added),
        ("Kernel families removed (fused ops only BASE runs)", report.families_removed),
    ):
        if fams:
            out += titled(title) + [
                f"  [{f.phase}] {fmt.plain(f.family)}: {fmt.ns(f.time_ns, fmt.TERMINAL)}"
                + (f", {fmt.ns(f.per_token_ns, fmt.TERMINAL)}/token" if f.per_token_ns is not None else "")
                for f in fams
            ]
    for title, rows_ in (("Kernels added", report.kernels_added), ("Kernels removed", report.kernels_removed)):
        if rows_:
            out += titled(f"{title} ({len(rows_)})") + [f"  [{r.phase}] {_name(r.key)}" for r in rows_[:TOP_ROWS]]
    return out


def findings_lines(report: DiffReport) -> list[Block]:
    """The findings that appeared or disappeared, and the diff's notes."""
    out: list[Block] = []
    changed = [f for f in report.findings if f.status != "kept"]
    if changed:
        out += titled("Findings that appeared or disappeared") + [
            f"  {f.status:11s} {f.rule}: {fmt.plain(f.title)}" for f in changed
        ]
    for n in report.notes:
        out.append(f"note: {fmt.plain(n)}")
    return out


def gate_lines(report: DiffReport) -> list[Block]:
    """The regression gate's outcome, when one was asked for."""
    g = report.gate
    if g is None:
        return []
    if g.reason:
        return ["", line(("Gate:", "bold"), " ", ("FAIL", BAD), f" ({fmt.plain(g.reason)})")]
    return [
        "",
        line(
            ("Gate:", "bold"),
            f" {g.metric}{f' ({g.phase})' if g.phase else ''} regressed {_chg(g.regression)} "
            f"(limit {100 * g.threshold:g}%): ",
            ("FAIL", BAD) if g.failed else ("ok", GOOD),
        ),
    ]

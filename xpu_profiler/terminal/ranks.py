"""The terminal's multi-rank tables: ranks side by side, collectives, stragglers, overlap,
parallel groups and pipeline stages (from the Summary, formatted through ``fmt``)."""

from __future__ import annotations

from ..core import fmt
from ..summary import Summary
from ..summary.labels import CLOCK_ALIGNMENT, COLLECTIVE_MATCH, STEP_ALIGNMENT
from .layout import Block, heading, line, table, titled

MAX_RANK_ROWS = 16  # more ranks: the first ones, and a line saying how many more
FUSED_COLUMNS = 6
MAX_COLLECTIVE_ROWS = 10


def _ns(v: float | None) -> str:
    return fmt.ns(v, fmt.TERMINAL)


def _pct(v: float | None) -> str:
    return "-" if v is None else fmt.pct(v, fmt.TERMINAL)


def render_ranks(summary: Summary) -> list[Block]:
    """The lines and tables of the multi-rank part (empty for one rank)."""
    if len(summary.ranks) < 2:
        return []
    t, al = summary.totals, summary.alignment
    out: list[Block] = [
        "",
        line(
            ("Ranks:", "bold"),
            f" {t.ranks}, {t.steps} engine steps ({t.step_rows} rows"
            + (f", {t.engines} engines" if t.engines > 1 else "")
            + "); steps aligned "
            + STEP_ALIGNMENT.get(al.steps, al.steps)
            + "; clock "
            + CLOCK_ALIGNMENT.get(al.clock, al.clock),
        ),
    ]
    shifts = {r: s for r, s in al.step_shift_by_rank.items() if s}
    if shifts:
        out.append("  step shift: " + ", ".join(f"rank {r} {s:+d}" for r, s in shifts.items()))
    offs = {r: v for r, v in al.clock_offset_ns_by_rank.items() if v}
    if offs and al.clock == "collective_ends":
        out.append("  clock offset: " + ", ".join(f"rank {r} {v / 1e6:+,.3f} ms" for r, v in list(offs.items())[:8]))
    comm = {(c.rank, c.phase): c for c in summary.comm.ranks}
    fused = [f.fused_op for f in summary.fused_ops[:FUSED_COLUMNS]]
    rows = []
    for r in summary.ranks[:MAX_RANK_ROWS]:
        c = comm.get((r.rank, "all"))
        group = fmt.place(r.groups, summary.parallel.sizes) or "-"
        rows.append(
            [
                str(r.rank),
                group,
                _ns(r.op_time_ns),
                _pct(r.busy_share),
                _ns(r.step_span_ns),
                str(r.slowest_steps),
                _ns(c.comm_ns if c else None),
                _ns(c.exposed_ns if c else None),
                _pct(c.exposed_share if c else None),
                _ns(c.wait_ns if c else None),
                _pct(c.arrived_last_share if c else None),
                _pct(c.arrived_first_share if c else None),
            ]
        )
    out += [
        "",
        heading("Per rank (comm: communication; exposed: not hidden by compute; last/first: arrival at collectives)"),
    ]
    out += table(
        [
            "rank",
            "group",
            "op time",
            "busy",
            "step time",
            "slowest",
            "comm",
            "exposed",
            "of step",
            "wait",
            "last",
            "first",
        ],
        rows,
        "llrrrrrrrrrr",
    )
    more = len(summary.ranks) - MAX_RANK_ROWS
    rows = [[str(r.rank)] + [_ns(r.time_ns_by_fused.get(f, 0)) for f in fused] for r in summary.ranks[:MAX_RANK_ROWS]]
    out += titled("Time by fused op per rank") + table(
        ["rank"] + [fmt.plain(f) for f in fused], rows, "r" * (len(fused) + 1)
    )
    if more > 0:
        out.append(f"... and {more} more ranks (summary.json and the report have them all)")
    out += _collectives(summary)
    out += _parallel(summary)
    return out


def _collectives(summary: Summary) -> list[Block]:
    cs = summary.comm.collectives
    if not cs:
        return []
    rows = []
    for c in cs[:MAX_COLLECTIVE_ROWS]:
        worst = max(c.wait_ns_by_rank.items(), key=lambda kv: kv[1], default=(None, 0))
        last = max(c.arrived_last_by_rank.items(), key=lambda kv: kv[1], default=(None, 0))
        rows.append(
            [
                fmt.plain(c.kind),
                fmt.clip(fmt.plain(c.group), 24),
                c.phase,
                f"{c.count:,}",
                _ns(c.mean_latency_ns),
                _ns(c.start_skew_mean_ns),
                _ns(c.end_skew_mean_ns),
                f"{_ns(worst[1])} (rank {worst[0]})" if worst[0] is not None else "-",
                f"rank {last[0]} ({last[1] / c.count:.0%})" if last[0] is not None and c.count else "-",
                "-" if c.bus_bytes_s is None else f"{c.bus_bytes_s / 1e9:,.1f} GB/s",
            ]
        )
    how = COLLECTIVE_MATCH.get(summary.alignment.collectives, summary.alignment.collectives)
    out: list[Block] = [
        "",
        heading(
            f"Collectives (matched across ranks {how}; {summary.comm.matched_events:,} of "
            f"{summary.comm.events:,} events matched)"
        ),
    ]
    out += table(
        ["kind", "group", "phase", "count", "latency", "start skew", "end skew", "most wait", "last most", "bus bw"],
        rows,
        "lllrrrrrrr",
    )
    return out


def _parallel(summary: Summary) -> list[Block]:
    par = summary.parallel
    out: list[Block] = []
    if par.groups:
        rows = [
            [
                fmt.plain(g.dim),
                fmt.plain(g.key),
                ",".join(map(str, g.ranks)),
                f"{g.collectives:,}",
                _ns(g.exposed_ns),
                _pct(g.exposed_share),
                _ns(g.wait_ns),
                "-" if g.straggler is None else f"rank {g.straggler} ({_pct(g.straggler_share)})",
            ]
            for g in par.groups[:MAX_RANK_ROWS]
        ]
        out += titled(f"Parallel groups (from {fmt.plain(par.source)})")
        out += table(
            ["dim", "group", "ranks", "collectives", "exposed", "of step", "wait", "straggler"], rows, "lllrrrrl"
        )
    if par.stages:
        rows = [
            [
                str(s.stage),
                ",".join(map(str, s.ranks)),
                _ns(s.busy_ns),
                _ns(s.wall_ns),
                _ns(s.bubble_ns),
                _pct(s.bubble_share),
            ]
            for s in par.stages
        ]
        out += titled("Pipeline stages") + table(
            ["stage", "ranks", "busy", "step wall", "bubble", "share"], rows, "rlrrrr"
        )
    return out

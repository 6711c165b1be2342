"""The terminal's first lines: how the steps were found, and each phase's verdict with the
gaps behind it (or, without steps, the one line that says so)."""

from __future__ import annotations

from ..core import fmt
from ..summary import Summary
from ..summary.labels import BOUND, STEP_EVIDENCE
from .layout import VERDICT_STYLES, Block, line

#: the verdicts as the terminal shows them: those that leave the device waiting in capitals
VERDICT_WORDS = {k: v if k == "device" else v.upper() for k, v in BOUND.items()}


def _ns(v: float | None) -> str:
    return fmt.ns(v, fmt.TERMINAL)


def step_lines(summary: Summary) -> list[Block]:
    """What found the steps (or the line that says none was found), the engine, the clock."""
    ss = summary.step_search
    if ss.message:
        return [fmt.plain(ss.message)]
    if not summary.totals.steps:
        return []
    layers = ", ".join(f"{n} by {STEP_EVIDENCE.get(k, k)}" for k, n in ss.found_by.items())
    text = f" {summary.totals.steps} engine step(s), found {layers}"
    if ss.empty_steps:
        text += f"; {ss.empty_steps} that launched nothing left out"
    if ss.engine:
        text += f"; engine: {ss.engine} ({fmt.plain(ss.engine_evidence or '')})"
    out: list[Block] = [line(("Steps:", "bold"), text)]
    if ss.step_clock == "critical_path":
        out.append(
            "  step time = the longer of each step's host range and its effective device range (first to last "
            "kernel of the work it launched): the device runs behind the host"
        )
    for phase, how in ss.phase_inferred.items():
        out.append(f"  phase {phase} inferred: {fmt.plain(how)}")
    return out


#: causes shown per phase: the host-bound phase's few, one for the others
HOST_CAUSES_SHOWN = 3


def host_lines(p) -> list[Block]:
    """What the host did while the device waited, the largest causes first (the why of a
    host-bound phase, with each cause's fix)."""
    h = p.host
    if h is None or not h.causes or h.exposed_per_step_ns <= 0:
        return []
    shown = h.causes[: HOST_CAUSES_SHOWN if p.bound == "host" else 1]
    out: list[Block] = [
        f"  host time the device waited for: {_ns(h.exposed_per_step_ns)} a step"
        + (", most of it:" if p.bound == "host" else ", the largest:")
    ]
    for c in shown:
        where = f" in {fmt.clip(fmt.plain(c.name), 70)}" if c.name else ""
        out.append(f"    {_ns(c.per_step_ns)} a step ({fmt.pct(c.share, fmt.TERMINAL)}) {fmt.plain(c.what)}{where}")
        if p.bound == "host" and c.fix:
            out.append(f"      fix: {fmt.plain(c.fix)}")
    return out


def verdict_lines(summary: Summary) -> list[Block]:
    """Per phase: its verdict, the shares behind it and the largest gaps, first."""
    out: list[Block] = []
    for p in summary.phases:
        if p.bound is None or p.device is None:
            continue
        d = p.device
        period = d.period_ns or 1
        share = (
            f"busy {fmt.pct(d.busy_ns / period, fmt.TERMINAL)}, waiting on the host "
            f"{fmt.pct(d.waiting_on_host_ns / period, fmt.TERMINAL)}, launch latency "
            f"{fmt.pct(d.kernel_wait_ns / period, fmt.TERMINAL)}, dependency waits "
            f"{fmt.pct(d.other_ns / period, fmt.TERMINAL)}, exposed collectives "
            f"{fmt.pct(d.exposed_comm_ns / period, fmt.TERMINAL)}"
        )
        inferred = " (phase inferred)" if p.inferred_from else ""
        out.append(
            line(
                (f"Verdict {p.phase}{inferred}:", "bold"),
                " ",
                (VERDICT_WORDS.get(p.bound, p.bound), VERDICT_STYLES.get(p.bound, "")),
                f" — {p.steps} step(s), step p50 {_ns(p.step_p50_ns)} (host range p50 {_ns(p.host_p50_ns)}); {share}",
            )
        )
        out += host_lines(p)
        for g in p.bound_gaps:
            parts = [f"host {_ns(g.host_wait_ns)}"] if g.host_wait_ns else []
            parts += [f"launch {_ns(g.launch_ns)}"] if g.launch_ns else []
            parts += [f"dependency {_ns(g.dependency_ns)}"] if g.dependency_ns else []
            out.append(
                f"    gap {_ns(g.dur_ns)} in step {g.step_id} ({', '.join(parts)}) before "
                f"{fmt.clip(fmt.plain(g.next_work), 60)}"
                + (f" via {fmt.plain(g.launched_by)}" if g.launched_by else "")
            )
    return out

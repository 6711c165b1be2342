"""The report's first section: how the steps were found and each phase's verdict with the
gaps that prove it (or the one line that says no step was found)."""

from __future__ import annotations

from typing import Any

from ...core import fmt
from ...knowledge.kernel_names import short_name
from ...summary import Summary
from ...summary.labels import BOUND, STEP_EVIDENCE


def build_verdicts(summary: Summary) -> dict[str, Any] | None:
    ss = summary.step_search
    if ss.message:
        return {"message": ss.message, "phases": [], "found": None, "answers": []}
    if not summary.totals.steps:
        return None
    found = ", ".join(f"{n} by {STEP_EVIDENCE.get(k, k)}" for k, n in ss.found_by.items())
    facts = [f"{summary.totals.steps} engine step(s), found {found}"]
    if ss.empty_steps:
        facts.append(f"{ss.empty_steps} that launched nothing left out")
    if ss.engine:
        facts.append(f"engine {ss.engine} ({ss.engine_evidence})")
    if ss.vendor:
        facts.append(f"device vendor {ss.vendor}")
    if ss.step_clock == "critical_path":
        facts.append("step time: the longer of each step's host range and its effective device range")
    phases = []
    for p in summary.phases:
        if p.bound is None or p.device is None:
            continue
        d = p.device
        period = d.period_ns or 1
        phases.append(
            {
                "phase": p.phase,
                "verdict": BOUND.get(p.bound, p.bound),
                "bound": p.bound,
                "steps": p.steps,
                "inferred_from": p.inferred_from,
                "step_p50": fmt.ns(p.step_p50_ns, fmt.REPORT),
                "host_p50": fmt.ns(p.host_p50_ns, fmt.REPORT),
                "shares": [
                    ["busy", fmt.pct(d.busy_ns / period, fmt.REPORT)],
                    ["waiting on the host", fmt.pct(d.waiting_on_host_ns / period, fmt.REPORT)],
                    ["launch latency", fmt.pct(d.kernel_wait_ns / period, fmt.REPORT)],
                    ["dependency waits", fmt.pct(d.other_ns / period, fmt.REPORT)],
                    ["exposed collectives", fmt.pct(d.exposed_comm_ns / period, fmt.REPORT)],
                ],
                "evidence": p.bound_evidence,
                "gaps": [
                    {
                        "step": g.step_id,
                        "dur": fmt.ns(g.dur_ns, fmt.REPORT),
                        "host": fmt.ns(g.host_wait_ns, fmt.REPORT),
                        "launch": fmt.ns(g.launch_ns, fmt.REPORT),
                        "dependency": fmt.ns(g.dependency_ns, fmt.REPORT),
                        "next": short_name(g.next_work),
                        "next_full": g.next_work,
                        "via": g.launched_by,
                    }
                    for g in p.bound_gaps
                ],
            }
        )
    inferred = [[ph, how] for ph, how in ss.phase_inferred.items()]
    answers = [a for p in summary.phases if (a := answer(summary, p)) is not None]
    return {"message": None, "found": "; ".join(facts), "inferred": inferred, "phases": phases, "answers": answers}


#: the share of a phase's exposed host time a cause needs to be named in its answer
NAMED_SHARE = 0.05


def answer(summary: Summary, p) -> dict[str, Any] | None:
    """Why a phase's steps take the time they take, and what to change: for a host-bound phase
    the host's causes (with their fixes), else where the device's time goes; the phase's
    largest finding's fix."""
    if p.bound is None or p.device is None:
        return None
    out: dict[str, Any] = {"phase": p.phase, "bound": p.bound, "verdict": BOUND.get(p.bound, p.bound)}
    out.update(causes=[], device=[], finding=None, waited="")
    out["step"] = fmt.ns(p.step_p50_ns, fmt.REPORT)
    h = p.host
    if p.bound == "host" and h is not None and h.causes:
        out["waited"] = fmt.ns(h.exposed_per_step_ns, fmt.REPORT)
        named = [c for c in h.causes if c.share >= NAMED_SHARE][:3] or h.causes[:1]
        out["causes"] = [
            {
                "what": c.what,
                "where": c.name,
                "short": short_name(c.name, 60) if c.name else "",
                "per_step": fmt.ns(c.per_step_ns, fmt.REPORT),
                "share": fmt.pct(c.share, fmt.REPORT),
                "fix": c.fix,
            }
            for c in named
        ]
    total = sum(f.time_ns for f in p.top_fused) or 0
    if total:
        out["device"] = [[f.fused_op, fmt.pct(f.time_ns / total, fmt.REPORT)] for f in p.top_fused[:4]]
    found = [f for f in summary.findings if f.phase in (p.phase, None, "")]
    if found:
        top = max(found, key=lambda f: f.at_stake_share)
        out["finding"] = {"rule": top.rule, "title": top.title, "fix": top.fix}
    return out

"""BASE vs NEW: two Summaries in, one DiffReport out (stateless).

Aligned by phase and fused op, normalised per token of the phase; step time per phase
(p50/p99, on each run's critical path: the device range where the device is
asynchronous), throughput, TTFT/TPOT, the settings that differ, and the findings that
appeared or disappeared. Kernel families (the fused op a kernel does) present on one side
only are listed; raw kernel names are aligned only when both runs ran on one vendor's
devices (names never match across vendors).

Runs that cannot be compared say so, never "no change": a side without steps, or no
phase with steps on both sides (``comparable`` False, ``reasons``); a ``--fail-on`` gate
fails then. A decode step of a different batch size is compared, with a note that its
per-token cost is the fairer figure.
"""

from __future__ import annotations

from typing import Any

from ..knowledge.kernel_names import strip_call_args
from ..summary import Summary
from ..summary.diff import DiffReport, Family, FindingDelta, Gate, MetricDelta, OpDelta, SettingDelta
from .layers import layer_deltas

PHASES = ("prefill", "decode", "mixed", "unknown")
#: metrics measured per phase (the others are per run)
PHASE_METRICS = ("step_p50_ns", "step_p99_ns", "step_per_token_ns", "per_token_ns")
#: relative changes below this count as no change (float noise, identical inputs)
NOISE = 1e-9


def _change(base: float | None, new: float | None) -> float | None:
    if base is None or new is None or not base:
        return None
    return new / base - 1.0


def _metric(name: str, base: Any, new: Any, phase: str | None = None, better: str = "lower") -> MetricDelta:
    b = float(base) if isinstance(base, (int, float)) else None
    n = float(new) if isinstance(new, (int, float)) else None
    return MetricDelta(name=name, phase=phase, base=b, new=n, change=_change(b, n), better=better)


def metrics(base: Summary, new: Summary) -> list[MetricDelta]:
    out = []
    bp = {p.phase: p for p in base.phases}
    np_ = {p.phase: p for p in new.phases}
    for ph in PHASES:
        b, n = bp.get(ph), np_.get(ph)
        if b is None and n is None:
            continue
        for name in PHASE_METRICS:
            out.append(_metric(name, getattr(b, name, None), getattr(n, name, None), ph))
        m = out[-1]
        if m.base is not None and m.new is not None and b is not None:
            m.impact_ns = (m.new - m.base) * b.tokens
        out.append(_metric("steps", getattr(b, "steps", None), getattr(n, "steps", None), ph, "higher"))
        out.append(_metric("tokens", getattr(b, "tokens", None), getattr(n, "tokens", None), ph, "higher"))
    bt, nt = base.throughput, new.throughput
    for name in ("window_output_tok_s", "output_tok_s", "prefill_tok_s", "decode_tok_s"):
        out.append(_metric(name, getattr(bt, name), getattr(nt, name), None, "higher"))
    for name in ("ttft_ns", "tpot_ns", "e2e_ns"):
        bd, nd = getattr(bt, name), getattr(nt, name)
        for q in ("p50", "p99"):
            out.append(
                _metric(
                    f"{name[:-3]}_{q}_ns", getattr(bd, q, None) if bd else None, getattr(nd, q, None) if nd else None
                )
            )
    return [m for m in out if m.base is not None or m.new is not None]


def _tokens(s: Summary) -> dict[str, int]:
    return {p.phase: p.tokens for p in s.phases}


def fused_deltas(base: Summary, new: Summary) -> list[OpDelta]:
    bt, nt = _tokens(base), _tokens(new)
    rows = []
    for ph in ("prefill", "decode", "mixed"):
        if not bt.get(ph) or not nt.get(ph):
            continue
        bmap = {
            f.fused_op: f.time_ns_by_phase.get(ph, 0) / bt[ph] for f in base.fused_ops if f.time_ns_by_phase.get(ph)
        }
        nmap = {f.fused_op: f.time_ns_by_phase.get(ph, 0) / nt[ph] for f in new.fused_ops if f.time_ns_by_phase.get(ph)}
        rows += _deltas(ph, bmap, nmap, "fused_op", {k: k for k in {**bmap, **nmap}})
    return rows


def _deltas(
    ph: str, bmap: dict[str, float], nmap: dict[str, float], kind: str, fused_of: dict[str, str]
) -> list[OpDelta]:
    total = sum(nmap.values()) - sum(bmap.values())
    rows = []
    for key in sorted(set(bmap) | set(nmap)):
        b, n = bmap.get(key), nmap.get(key)
        d = (n or 0.0) - (b or 0.0)
        status = (
            "added"
            if b is None
            else "removed"
            if n is None
            else ("unchanged" if abs(d) <= NOISE * max(abs(b), 1.0) else "changed")
        )
        rows.append(
            OpDelta(
                phase=ph,
                key=key,
                kind=kind,
                fused_op=fused_of.get(key, ""),
                base_per_token_ns=b,
                new_per_token_ns=n,
                delta_per_token_ns=d,
                change=_change(b, n),
                share_of_change=(d / total) if abs(total) > NOISE else None,
                status=status,
            )
        )
    rows.sort(key=lambda r: -abs(r.delta_per_token_ns or 0.0))
    return rows


def kernel_deltas(base: Summary, new: Summary) -> tuple[list[OpDelta], list[OpDelta], list[OpDelta], int]:
    """(in both, added, removed, kernels only one side's truncated list could show)."""
    bt, nt = _tokens(base), _tokens(new)

    def table(s: Summary, tokens: dict[str, int]) -> tuple[dict, dict, float]:
        out: dict[tuple[str, str], float] = {}
        fused: dict[str, str] = {}
        for k in s.top_kernels:
            key = strip_call_args(k.name)
            fused[key] = k.fused_op
            for ph, t in k.time_ns_by_phase.items():
                if tokens.get(ph):
                    out[(ph, key)] = out.get((ph, key), 0.0) + t / tokens[ph]
        complete = len(s.top_kernels) >= s.totals.kernel_names
        floor = 0.0 if complete or not s.top_kernels else float(min(k.time_ns for k in s.top_kernels))
        return out, fused, floor

    if not any(k.time_ns_by_phase for k in base.top_kernels) or not any(k.time_ns_by_phase for k in new.top_kernels):
        return [], [], [], 0
    bmap, bf, b_floor = table(base, bt)
    nmap, nf, n_floor = table(new, nt)
    both: list[OpDelta] = []
    added: list[OpDelta] = []
    removed: list[OpDelta] = []
    unlisted = 0
    for ph in ("prefill", "decode", "mixed", "unknown"):
        if not bt.get(ph) or not nt.get(ph):
            continue
        b = {k: v for (p, k), v in bmap.items() if p == ph}
        n = {k: v for (p, k), v in nmap.items() if p == ph}
        rows = _deltas(ph, b, n, "kernel", {**bf, **nf})
        for r in rows:
            # a kernel missing from one side's *truncated* list may only be below its cut
            if r.status == "added" and b_floor:
                unlisted += 1
            elif r.status == "removed" and n_floor:
                unlisted += 1
            else:
                (added if r.status == "added" else removed if r.status == "removed" else both).append(r)
    return both, added, removed, unlisted


def finding_deltas(base: Summary, new: Summary) -> list[FindingDelta]:
    b = {f.rule: f for f in base.findings}
    n = {f.rule: f for f in new.findings}
    out = []
    for rule in list(n) + [r for r in b if r not in n]:
        fb, fn = b.get(rule), n.get(rule)
        f = fn if fn is not None else b[rule]  # a rule of one side at least
        out.append(
            FindingDelta(
                rule=rule,
                status="kept" if fb and fn else "appeared" if fn else "disappeared",
                title=f.title,
                phase=f.phase,
                base_at_stake_share=fb.at_stake_share if fb else None,
                new_at_stake_share=fn.at_stake_share if fn else None,
            )
        )
    return out


def settings(base: Summary, new: Summary) -> list[SettingDelta]:
    out = []
    for section in ("engine", "workload"):
        b, n = getattr(base.run, section) or {}, getattr(new.run, section) or {}
        for k in sorted(set(b) | set(n)):
            if b.get(k) != n.get(k) and k not in ("model", "prompts_file"):
                out.append(SettingDelta(key=f"{section}.{k}", base=b.get(k), new=n.get(k)))
    for k in ("model", "detail_level", "device"):
        if getattr(base.run, k) != getattr(new.run, k):
            out.append(SettingDelta(key=k, base=getattr(base.run, k), new=getattr(new.run, k)))
    return out


def _headline(report: DiffReport) -> tuple[str, str | None]:
    """The phase whose per-token cost change moves the most op time, and its largest op."""
    if report.unchanged:
        return "no change", None
    per_tok = [(m, m.impact_ns) for m in report.metrics if m.name == "per_token_ns" and m.impact_ns is not None]
    if not per_tok:
        return "no phase with tokens in common", None
    m, impact_ns = max(per_tok, key=lambda mi: abs(mi[1]))
    step = next((x for x in report.metrics if x.name == "step_p50_ns" and x.phase == m.phase), None)
    text = f"{m.phase}: op time per token {100 * (m.change or 0):+.1f}% ({impact_ns / 1e6:+,.2f} ms at BASE's tokens)"
    if step is not None and step.change is not None:
        text += f", step p50 {100 * step.change:+.1f}%"
    op = next((r for r in report.fused_ops if r.phase == m.phase and r.status != "unchanged"), None)
    if op is not None and op.share_of_change is not None:
        text += (
            f"; largest part: {op.key} {op.delta_per_token_ns:+,.0f} ns/token "
            f"({100 * op.share_of_change:.0f}% of the phase's change)"
        )
    return text, m.phase


def comparability(base: Summary, new: Summary) -> tuple[list[str], list[str]]:
    """(reasons the runs cannot be compared, the phases both ran steps in)."""
    reasons = []
    for side, s in (("BASE", base), ("NEW", new)):
        if not s.totals.steps:
            msg = s.step_search.message or "no engine step was found in it"
            reasons.append(f"{side} has no steps ({msg.split(':')[0].lower()}): nothing per step or per token to align")
    bp = {p.phase for p in base.phases if p.steps}
    np_ = {p.phase for p in new.phases if p.steps}
    common = [p for p in PHASES if p in bp and p in np_]
    if not reasons and not common:
        reasons.append(
            f"the phases do not match: BASE ran {', '.join(sorted(bp)) or 'none'}, NEW ran "
            f"{', '.join(sorted(np_)) or 'none'}; no phase has steps on both sides"
        )
    return reasons, common


def families(base: Summary, new: Summary, phases: list[str]) -> tuple[list[Family], list[Family]]:
    """Kernel families (fused ops) with op time in a phase of one run only: (added, removed)."""

    def table(s: Summary) -> dict[tuple[str, str], tuple[int, float | None]]:
        out = {}
        for f in s.fused_ops:
            for ph in phases:
                t = f.time_ns_by_phase.get(ph, 0)
                if t:
                    out[(ph, f.fused_op)] = (t, f.per_token_ns_by_phase.get(ph))
        return out

    b, n = table(base), table(new)
    added = [Family(phase=k[0], family=k[1], time_ns=v[0], per_token_ns=v[1]) for k, v in n.items() if k not in b]
    removed = [Family(phase=k[0], family=k[1], time_ns=v[0], per_token_ns=v[1]) for k, v in b.items() if k not in n]
    return added, removed


def _batch_notes(base: Summary, new: Summary, phases: list[str]) -> list[str]:
    out = []
    bp, np_ = {p.phase: p for p in base.phases}, {p.phase: p for p in new.phases}
    for ph in phases:
        b, n = bp[ph], np_[ph]
        if b.steps and n.steps and b.tokens and n.tokens:
            tb, tn = b.tokens / b.steps, n.tokens / n.steps
            if abs(tn / tb - 1) > 0.1:
                out.append(
                    f"{ph} steps ran {tb:,.0f} tokens per step in BASE and {tn:,.0f} in NEW: step times compare "
                    "different batches, the per-token costs are the fairer figure"
                )
        for side, p in (("BASE", b), ("NEW", n)):
            if p.inferred_from:
                out.append(f"{side}'s {ph} phase was inferred ({p.inferred_from})")
    return out


def compare(base: Summary, new: Summary, base_label: str = "", new_label: str = "") -> DiffReport:
    reasons, common = comparability(base, new)
    vendors = {"base": base.step_search.vendor, "new": new.step_search.vendor}
    one_vendor = vendors["base"] == vendors["new"] or None in vendors.values()
    both, added, removed, unlisted = kernel_deltas(base, new) if one_vendor else ([], [], [], 0)
    fam_added, fam_removed = families(base, new, common)
    report = DiffReport(
        base=base_label,
        new=new_label,
        base_run=_run_facts(base),
        new_run=_run_facts(new),
        settings=settings(base, new),
        metrics=metrics(base, new),
        fused_ops=fused_deltas(base, new),
        kernels=both,
        kernels_added=added,
        kernels_removed=removed,
        kernels_unlisted=unlisted,
        findings=finding_deltas(base, new),
        comparable=not reasons,
        reasons=reasons,
        phases_compared=common,
        families_added=fam_added,
        families_removed=fam_removed,
        vendors=vendors,
        engines={"base": base.step_search.engine, "new": new.step_search.engine},
    )
    report.layers, layer_notes = layer_deltas(base, new)
    report.notes += layer_notes
    moved = [m for m in report.metrics if m.change is not None and abs(m.change) > NOISE]
    report.unchanged = (
        report.comparable
        and not moved
        and not added
        and not removed
        and not fam_added
        and not fam_removed
        and all(r.status == "unchanged" for r in report.fused_ops + report.kernels)
    )
    if report.comparable:
        report.headline, report.headline_phase = _headline(report)
    else:
        report.headline, report.headline_phase = "cannot compare: " + "; ".join(reasons), None
    if not one_vendor:
        report.notes.append(
            f"the runs ran on different vendors' devices ({vendors['base']} vs {vendors['new']}): kernel names "
            "are not aligned (they never match across vendors); compare the fused ops and kernel families"
        )
    if report.engines["base"] != report.engines["new"] and None not in report.engines.values():
        report.notes.append(f"different engines: {report.engines['base']} vs {report.engines['new']}")
    report.notes += _batch_notes(base, new, common)
    for side, s in (("BASE", base), ("NEW", new)):
        if s.top_kernels and not any(k.time_ns_by_phase for k in s.top_kernels):
            report.notes.append(
                f"{side} has no per-phase kernel times (a summary.json of an older "
                "xpu_profiler): kernels are not compared"
            )
    if unlisted:
        report.notes.append(
            f"{unlisted} kernels appear in one run's top-kernels list only while the other's "
            "list is cut: they may be below its cut rather than added or removed"
        )
    return report


def _run_facts(s: Summary) -> dict[str, Any]:
    return {
        "model": s.run.model,
        "device": s.run.device,
        "vendor": s.step_search.vendor,
        "engine": s.step_search.engine,
        "detail_level": s.run.detail_level,
        "steps": s.totals.steps,
        "ranks": s.totals.ranks,
    }


def gate(report: DiffReport, pct: float, phase: str = "decode", metric: str = "per_token_ns") -> Gate:
    """Fail when ``metric`` (of ``phase`` for per-phase metrics) regressed by more than ``pct`` %,
    or when the runs cannot be compared."""
    if not report.comparable:
        return Gate(
            metric=metric,
            phase=phase if metric in PHASE_METRICS else None,
            threshold=pct / 100.0,
            failed=True,
            reason="cannot compare: " + "; ".join(report.reasons),
        )
    m = next(
        (m for m in report.metrics if m.name == metric and m.phase == (phase if metric in PHASE_METRICS else None)),
        None,
    )
    reg = m.regression if m is not None else None
    return Gate(
        metric=metric,
        phase=m.phase if m is not None else phase,
        threshold=pct / 100.0,
        regression=reg,
        failed=reg is not None and reg > pct / 100.0,
    )

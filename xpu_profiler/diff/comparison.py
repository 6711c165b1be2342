"""BASE vs NEW: two Summaries in, one DiffReport out (stateless).

Aligned by phase and fused op, normalised per token of the phase; step time per phase
(p50/p99, on each run's critical path: the device range where the device is
asynchronous), split into the device's work per token and the host time it waited on per
step, by cause (``split``); throughput, TTFT/TPOT, the settings that differ, and the
findings that appeared or disappeared. Kernel families (the fused op a kernel does) present
on one side only are listed; raw kernel names are aligned only when both runs ran on one
vendor's devices (names never match across vendors).

Phases inferred on either side are compared as recorded ones (a note says how each was
inferred); runs whose phases differ altogether (one side's steps of an unknown phase) are
compared over all their steps pooled (``pooled``). Runs that cannot be compared say so,
never "no change", and measure no difference: only a side without steps makes them so
(``comparable`` False, ``reasons``); a ``--fail-on`` gate fails then. A decode step of a
different batch size is compared, with a note that its per-token cost is the fairer figure.
"""

from __future__ import annotations

from typing import Any

from ..knowledge.kernel_names import strip_call_args
from ..summary import Summary
from ..summary.diff import DiffReport, Family, FindingDelta, Gate, MetricDelta, OpDelta, SettingDelta
from .layers import layer_deltas
from .pooled import ALL, pooled
from .split import headline, host_deltas, status_of, step_splits

PHASES = ("prefill", "decode", "mixed", "unknown", ALL)
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
    for name in ("window_output_tok_s", "output_tok_s", "prefill_tok_s", "decode_tok_s", "span_tok_s"):
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
    for ph in ("prefill", "decode", "mixed", ALL):
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
        status = status_of(b, n)
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
    for ph in PHASES:
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


def comparability(base: Summary, new: Summary) -> tuple[list[str], list[str]]:
    """(reasons the runs cannot be compared, the phases both ran steps in: none when their
    phases differ, and ``compare`` pools them)."""
    reasons = []
    for side, s in (("BASE", base), ("NEW", new)):
        if not s.totals.steps:
            msg = s.step_search.message or "no engine step was found in it"
            reasons.append(f"{side} has no steps ({msg.split(':')[0].lower()}): nothing per step or per token to align")
    bp = {p.phase for p in base.phases if p.steps}
    np_ = {p.phase for p in new.phases if p.steps}
    common = [p for p in PHASES if p in bp and p in np_]
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
    for side, s in (("BASE", base), ("NEW", new)):
        inferred = [f"{p.phase} {p.inferred_from}" for p in s.phases if p.phase in phases and p.inferred_from]
        if inferred:
            out.append(f"{side}'s phases were inferred: " + "; ".join(inferred))
    return out


def _pooled_note(base: Summary, new: Summary) -> str:
    def ran(s: Summary) -> str:
        return ", ".join(p.phase for p in s.phases if p.steps) or "none"

    return (
        f"the phases differ (BASE ran {ran(base)}, NEW ran {ran(new)}): the runs are compared over all their "
        'steps pooled (phase "all"); per-phase figures would need the phases on both sides'
    )


def compare(base: Summary, new: Summary, base_label: str = "", new_label: str = "") -> DiffReport:
    reasons, common = comparability(base, new)
    report = DiffReport(base=base_label, new=new_label, base_run=_run_facts(base), new_run=_run_facts(new))
    if not reasons and not common:  # steps on both sides, in no phase of both: all steps pooled
        report.notes.append(_pooled_note(base, new))
        base, new = pooled(base), pooled(new)
        reasons, common = comparability(base, new)
        report.pooled = True
    vendors = {"base": base.step_search.vendor, "new": new.step_search.vendor}
    one_vendor = vendors["base"] == vendors["new"] or None in vendors.values()
    both, added, removed, unlisted = kernel_deltas(base, new) if one_vendor and not reasons else ([], [], [], 0)
    fam_added, fam_removed = families(base, new, common)
    report.settings = settings(base, new)
    report.metrics = metrics(base, new)
    report.findings = finding_deltas(base, new)
    report.comparable, report.reasons, report.phases_compared = not reasons, reasons, common
    report.families_added, report.families_removed = fam_added, fam_removed
    report.vendors = vendors
    report.engines = {"base": base.step_search.engine, "new": new.step_search.engine}
    if reasons:  # each side's numbers, no difference measured between them
        for m in report.metrics:
            m.change = m.impact_ns = None
        report.headline = "cannot compare: " + "; ".join(reasons)
    else:
        report.fused_ops = fused_deltas(base, new)
        report.kernels, report.kernels_added, report.kernels_removed = both, added, removed
        report.kernels_unlisted = unlisted
        report.layers, layer_notes = layer_deltas(base, new)
        report.notes += layer_notes
        report.steps = step_splits(base, new, common)
        report.host, host_unlisted = host_deltas(base, new, common)
        if host_unlisted:
            report.notes.append(
                f"{host_unlisted} host time cause(s) appear in one run's list only while the other's list is "
                "cut: they may be below its cut rather than added or removed"
            )
        report.unchanged = _unchanged(report)
        report.headline, report.headline_phase = headline(report)
    report.notes += _vendor_notes(report, base, new, one_vendor, unlisted)
    report.notes += _batch_notes(base, new, common)
    report.notes += _selection_notes(base, new)
    return report


def _selection_notes(base: Summary, new: Summary) -> list[str]:
    """A side that is part of its trace (``analyze --steps`` / ``--max-events``)."""
    out = []
    for side, sel in (("BASE", base.selection), ("NEW", new.selection)):
        if sel is not None:
            part = [f"steps {sel.steps}"] if sel.steps is not None else []
            part += [f"at most {sel.max_events:,} events"] if sel.max_events is not None else []
            out.append(
                f"{side} is part of its trace ({' and '.join(part)}: {sel.events_kept:,} of {sel.events_total:,} "
                "events kept): its figures are that part's, not the whole run's"
            )
    return out


def _unchanged(report: DiffReport) -> bool:
    """Nothing moved beyond the noise floor: no metric, op, kernel, layer or host cause."""
    moved = [m for m in report.metrics if m.change is not None and abs(m.change) > NOISE]
    rows = report.fused_ops + report.kernels
    return (
        not moved
        and not report.kernels_added
        and not report.kernels_removed
        and not report.families_added
        and not report.families_removed
        and all(r.status == "unchanged" for r in rows)
        and all(r.status == "unchanged" for r in report.host)
    )


def _vendor_notes(report: DiffReport, base: Summary, new: Summary, one_vendor: bool, unlisted: int) -> list[str]:
    notes = []
    vendors = report.vendors
    if not one_vendor:
        notes.append(
            f"the runs ran on different vendors' devices ({vendors['base']} vs {vendors['new']}): kernel names "
            "are not aligned (they never match across vendors); compare the fused ops and kernel families"
        )
    if report.engines["base"] != report.engines["new"] and None not in report.engines.values():
        notes.append(f"different engines: {report.engines['base']} vs {report.engines['new']}")
    for side, s in (("BASE", base), ("NEW", new)):
        if s.top_kernels and not any(k.time_ns_by_phase for k in s.top_kernels):
            notes.append(
                f"{side} has no per-phase kernel times (a summary.json of an older "
                "xpu_profiler): kernels are not compared"
            )
    if unlisted:
        notes.append(
            f"{unlisted} kernels appear in one run's top-kernels list only while the other's "
            "list is cut: they may be below its cut rather than added or removed"
        )
    return notes


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
    """Fail when ``metric`` (of ``phase`` for per-phase metrics; of all the steps when the runs
    were compared pooled) regressed by more than ``pct`` %, or when the runs cannot be compared."""
    if report.pooled and metric in PHASE_METRICS:
        phase = ALL
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

"""BASE vs NEW: two Summaries in, one DiffReport out (stateless).

Aligned on (phase, fused op) and (phase, kernel name with its argument list stripped),
normalised per token of the phase; step time per phase (p50/p99), throughput,
TTFT/TPOT, the settings that differ, and the findings that appeared or disappeared.
"""

from __future__ import annotations

from typing import Any

from ..knowledge.kernel_names import strip_call_args
from ..summary import Summary
from ..summary.diff import DiffReport, FindingDelta, Gate, MetricDelta, OpDelta, SettingDelta
from .layers import layer_deltas

PHASES = ("prefill", "decode", "mixed", "unknown")
#: metrics measured per phase (the others are per run)
PHASE_METRICS = ("step_p50_ns", "step_p99_ns", "per_token_ns")
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
    both, added, removed = [], [], []
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
        f = fn or fb
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
    per_tok = [m for m in report.metrics if m.name == "per_token_ns" and m.impact_ns is not None]
    if not per_tok:
        return "no phase with tokens in common", None
    m = max(per_tok, key=lambda m: abs(m.impact_ns))
    step = next((x for x in report.metrics if x.name == "step_p50_ns" and x.phase == m.phase), None)
    text = f"{m.phase}: op time per token {100 * (m.change or 0):+.1f}% ({m.impact_ns / 1e6:+,.2f} ms at BASE's tokens)"
    if step is not None and step.change is not None:
        text += f", step p50 {100 * step.change:+.1f}%"
    op = next((r for r in report.fused_ops if r.phase == m.phase and r.status != "unchanged"), None)
    if op is not None and op.share_of_change is not None:
        text += (
            f"; largest part: {op.key} {op.delta_per_token_ns:+,.0f} ns/token "
            f"({100 * op.share_of_change:.0f}% of the phase's change)"
        )
    return text, m.phase


def compare(base: Summary, new: Summary, base_label: str = "", new_label: str = "") -> DiffReport:
    both, added, removed, unlisted = kernel_deltas(base, new)
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
    )
    report.layers, layer_notes = layer_deltas(base, new)
    report.notes += layer_notes
    moved = [m for m in report.metrics if m.change is not None and abs(m.change) > NOISE]
    report.unchanged = (
        not moved
        and not added
        and not removed
        and all(r.status == "unchanged" for r in report.fused_ops + report.kernels)
    )
    report.headline, report.headline_phase = _headline(report)
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
        "detail_level": s.run.detail_level,
        "steps": s.totals.steps,
        "ranks": s.totals.ranks,
    }


def gate(report: DiffReport, pct: float, phase: str = "decode", metric: str = "per_token_ns") -> Gate:
    """Fail when ``metric`` (of ``phase`` for per-phase metrics) regressed by more than ``pct`` %."""
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

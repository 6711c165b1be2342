"""Why a phase's step time moved: its change split into the device's work per token (op time
per token, by fused op) and the host time the device waited on per step (exposed host time,
by cause: ``Phase.host``), and the headline that says which one moved and what moved it."""

from __future__ import annotations

from ..core import fmt
from ..knowledge.runtime_api import neutral_call
from ..summary import HostCause, HostTime, Phase, Summary
from ..summary.diff import DiffReport, HostDelta, StepSplit

#: changes below this (relative) count as none
NOISE = 1e-9
#: causes per phase kept in the host table (the largest moves)
MAX_CAUSES = 8


def step_splits(base: Summary, new: Summary, phases: list[str]) -> list[StepSplit]:
    """Per phase compared: the step p50, op time per token and exposed host time per step on
    each side, and the step time the change moves at BASE's steps (what ranks the phases)."""
    bp, np_ = {p.phase: p for p in base.phases}, {p.phase: p for p in new.phases}
    out = []
    for ph in phases:
        b, n = bp.get(ph), np_.get(ph)
        if b is None or n is None:
            continue
        out.append(
            StepSplit(
                phase=ph,
                base_step_p50_ns=b.step_p50_ns,
                new_step_p50_ns=n.step_p50_ns,
                base_device_per_token_ns=b.per_token_ns,
                new_device_per_token_ns=n.per_token_ns,
                base_host_per_step_ns=_host(b),
                new_host_per_step_ns=_host(n),
                tokens_per_step=b.tokens / b.steps if b.steps and b.tokens else None,
                impact_ns=_impact(b, n),
            )
        )
    return out


def _host(p: Phase) -> float | None:
    return p.host.exposed_per_step_ns if p.host is not None else None


def _impact(b: Phase, n: Phase) -> float | None:
    """Step time moved over BASE's steps: by the step time per token where both count tokens
    (runs of other lengths compare), else by the step p50."""
    if b.step_per_token_ns is not None and n.step_per_token_ns is not None and b.tokens:
        return (n.step_per_token_ns - b.step_per_token_ns) * b.tokens
    if b.step_p50_ns is not None and n.step_p50_ns is not None:
        return (n.step_p50_ns - b.step_p50_ns) * b.steps
    return None


def host_deltas(base: Summary, new: Summary, phases: list[str]) -> tuple[list[HostDelta], int]:
    """Per phase: its exposed host time per step on each side, then each cause (the frame, op
    or call that held it) that either side has, largest move first; and how many causes one
    side lists while the other's list is cut (``HostTime.causes`` keeps the largest): those
    may only be below its cut, so they are counted, not shown as added or removed."""
    bp, np_ = {p.phase: p for p in base.phases}, {p.phase: p for p in new.phases}
    out: list[HostDelta] = []
    unlisted = 0
    for ph in phases:
        hb = bp[ph].host if ph in bp else None
        hn = np_[ph].host if ph in np_ else None
        if hb is None or hn is None:
            continue
        out.append(_row(ph, "all", "exposed host time", "", hb.exposed_per_step_ns, hn.exposed_per_step_ns))
        b, n = _by_key(hb.causes), _by_key(hn.causes)
        rows = []
        for key in dict.fromkeys([*n, *b]):
            if (key not in b and _cut(hb)) or (key not in n and _cut(hn)):
                unlisted += 1
                continue
            c = n[key][0] if key in n else b[key][0]
            name = c.name if key not in b or b[key][0].name == c.name else f"{b[key][0].name} → {c.name}"
            rows.append(
                _row(ph, c.cause, c.what, name, b[key][1] if key in b else None, n[key][1] if key in n else None)
            )
        rows.sort(key=lambda r: -abs(r.delta_ns or 0.0))
        out += rows[:MAX_CAUSES]
    return out, unlisted


def _cut(h: HostTime) -> bool:
    """Whether a phase's causes leave some of its exposed host time out (its list was cut)."""
    listed = sum(c.per_step_ns for c in h.causes)
    return h.exposed_per_step_ns - listed > NOISE * max(h.exposed_per_step_ns, 1.0) + 1e-6


def _by_key(causes: list[HostCause]) -> dict[tuple[str, str], tuple[HostCause, float]]:
    """Causes aligned across runs, with their time per step: a runtime call by what it is on
    any vendor's runtime (``cuLaunchKernel`` and ``cudaLaunchKernel`` are one launch, as
    ``hipLaunchKernel`` is), named by its largest call."""
    out: dict[tuple[str, str], tuple[HostCause, float]] = {}
    for c in causes:  # the largest first
        key = (c.cause, neutral_call(c.name) if c.evidence == "runtime" else c.name)
        first, t = out.get(key, (c, 0.0))
        out[key] = (first, t + c.per_step_ns)
    return out


def status_of(b: float | None, n: float | None) -> str:
    """added, removed, unchanged (within the noise floor) or changed: a row of the diff."""
    if b is None:
        return "added"
    if n is None:
        return "removed"
    return "unchanged" if abs(n - b) <= NOISE * max(abs(b), 1.0) else "changed"


def _row(ph: str, cause: str, what: str, name: str, b: float | None, n: float | None) -> HostDelta:
    d = (n or 0.0) - (b or 0.0)
    status = status_of(b, n)
    return HostDelta(
        phase=ph, cause=cause, what=what, name=name, base_per_step_ns=b, new_per_step_ns=n, delta_ns=d, status=status
    )


def headline(report: DiffReport) -> tuple[str, str | None]:
    """The phase whose step time moved the most, its step p50 before and after, and the
    change split into exposed host time per step (its largest cause) and device work per
    token (its largest fused op), the larger part first."""
    if report.unchanged:
        return "no change", None
    moved = [s for s in report.steps if s.impact_ns is not None]
    if not moved:
        return "no phase with steps in common", None
    s = max(moved, key=lambda x: abs(x.impact_ns or 0.0))
    text = f"{s.phase}: step p50 {_arrow(s.base_step_p50_ns, s.new_step_p50_ns)}"
    parts = [p for p in (_host_part(report, s), _device_part(report, s)) if p is not None]
    parts.sort(key=lambda p: -abs(p[0]))
    if parts:
        text += "; " + "; ".join(p[1] for p in parts)
    return text, s.phase


def _host_part(report: DiffReport, s: StepSplit) -> tuple[float, str] | None:
    b, n = s.base_host_per_step_ns, s.new_host_per_step_ns
    if b is None or n is None:
        return None
    text = f"exposed host time per step {_ns(b)} → {_ns(n)} ({_signed(n - b)})"
    top = next((r for r in report.host if r.phase == s.phase and r.cause != "all" and r.status != "unchanged"), None)
    if top is not None and abs(top.delta_ns or 0.0) > NOISE:
        words = top.what.split(" (")[0].split(", ")[0]
        text += f", largest: {words}{f' ({top.name})' if top.name else ''} {_signed(top.delta_ns)}"
    return n - b, text


def _device_part(report: DiffReport, s: StepSplit) -> tuple[float, str] | None:
    b, n = s.base_device_per_token_ns, s.new_device_per_token_ns
    if b is None or n is None:
        return None
    per_step = (n - b) * (s.tokens_per_step or 1.0)
    change = f"{100 * (n / b - 1):+.1f}%" if b else "new"
    text = f"device work per token {_ns(b)} → {_ns(n)} ({change})"
    op = next((r for r in report.fused_ops if r.phase == s.phase and r.status != "unchanged"), None)
    if op is not None and op.share_of_change is not None:
        text += f", largest: {op.key} {_signed(op.delta_per_token_ns)}/token"
    return per_step, text


def _arrow(b: float | None, n: float | None) -> str:
    if b is None or n is None:
        return f"{_ns(b)} → {_ns(n)}"
    return f"{_ns(b)} → {_ns(n)} ({100 * (n / b - 1):+.1f}%)" if b else f"{_ns(b)} → {_ns(n)}"


def _ns(v: float | None) -> str:
    return fmt.ns(v, fmt.TERMINAL)


def _signed(v: float | None) -> str:
    if v is None:
        return "-"
    return ("+" if v >= 0 else "−") + _ns(abs(v))

"""Evaluate the rule table on a Summary: stateless, no plotting.

Every enabled rule's check runs with its thresholds; what fires becomes a ``Finding``
with the evidence, the share of step time at stake, the fix and why. Findings are
ranked by time at stake (largest first, the table's order breaking ties) and those
under ``min_at_stake`` (0.5% by default) are dropped. A check that fails on an odd
summary is skipped and named in the summary's warnings, never fatal.
"""

from __future__ import annotations

import math

from ..summary import Finding, Summary
from .base import Context
from .config import DEFAULT, FindingsConfig
from .rules import RULES


def evaluate(summary: Summary, config: FindingsConfig | None = None, reference: Summary | None = None) -> list[Finding]:
    """The findings of ``summary`` (``reference``: a basic-level run of the same workload)."""
    config = config or DEFAULT
    ctx = Context(reference=reference)
    ranked = []
    for order, rule in enumerate(RULES):
        if rule.id in config.disabled:
            continue
        th = config.for_rule(rule.id)
        try:
            hit = rule.check(summary, th, ctx)
        except (ArithmeticError, ValueError, TypeError, KeyError, IndexError) as e:
            summary.warnings.append(f"finding rule {rule.id} skipped ({type(e).__name__}: {e})")
            continue
        if hit is None or not math.isfinite(hit.at_stake) or hit.at_stake < config.min_at_stake:
            continue
        ranked.append(
            (
                -min(hit.at_stake, 1.0),
                order,
                Finding(
                    rule=rule.id,
                    title=hit.title,
                    phase=hit.phase,
                    at_stake_share=min(max(hit.at_stake, 0.0), 1.0),
                    trigger=rule.trigger_text(th),
                    evidence=_plain(hit.evidence),
                    fix=hit.fix or rule.fix,
                    why=hit.why or rule.why,
                    steps=list(hit.steps),
                    ranks=list(hit.ranks),
                ),
            )
        )
    ranked.sort(key=lambda t: t[:2])
    return [f for *_, f in ranked]


def attach(summary: Summary, config: FindingsConfig | None = None, reference: Summary | None = None) -> Summary:
    """Fill ``summary.findings``; returns the summary."""
    summary.findings = evaluate(summary, config, reference)
    return summary


def _plain(d: dict) -> dict:
    """Evidence as JSON-ready values (numpy scalars to Python, NaN to None)."""
    out = {}
    for k, v in d.items():
        if hasattr(v, "item") and not isinstance(v, (list, dict)):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[k] = _plain(v) if isinstance(v, dict) else v
    return out

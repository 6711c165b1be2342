"""The report's first section, the findings; and the MFU / bandwidth table."""

from __future__ import annotations

from typing import Any

from ...core import fmt
from ...core.fmt import number
from ...summary import Summary

MAX_STEPS_SHOWN = 12


def _value(key: str, v: Any) -> str:
    """An evidence value as the report writes numbers (times by their ``_ns`` keys)."""
    if isinstance(v, bool) or v is None:
        return fmt.REPORT.missing if v is None else str(v).lower()
    if isinstance(v, (int, float)):
        if key.endswith("_ns"):
            return fmt.ns(v, fmt.REPORT)
        if key.endswith(("share", "usage_p50", "usage_max", "drop")) and abs(v) <= 1:
            return fmt.pct(v, fmt.REPORT)
        return fmt.count(v, fmt.REPORT)
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_value(key, x)}" for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(str(x) for x in v)
    return str(v)


def build_findings(summary: Summary) -> dict[str, Any] | None:
    """``{rows: [...]}``: one row per finding, in rank order; None when there are none."""
    if not summary.findings:
        return None
    rows = []
    for i, f in enumerate(summary.findings, 1):
        rows.append(
            {
                "rank": i,
                "rule": f.rule,
                "title": f.title,
                "phase": f.phase,
                "at_stake_share": f.at_stake_share,
                "trigger": f.trigger,
                "fix": f.fix,
                "why": f.why,
                "ranks": f.ranks,
                "steps": f.steps[:MAX_STEPS_SHOWN],
                "steps_total": len(f.steps),
                "evidence": [[k, _value(k, v)] for k, v in f.evidence.items()],
                "evidence_raw": f.evidence,
            }
        )
    return {"rows": rows}


def build_roofline(summary: Summary) -> dict[str, Any] | None:
    """Achieved FLOP/s and bytes/s per phase and component, with their share of the peaks."""
    if not summary.roofline:
        return None  # the header says why, where steps counted tokens (``roofline_missing``)
    dev = summary.device
    rows = [
        {
            "phase": r.phase,
            "component": r.component,
            "source": r.source,
            "time_ns": float(r.time_ns),
            "flop_s": number(r.flop_s),
            "bytes_s": number(r.bytes_s),
            "flops_share": number(r.flops_share),
            "bw_share": number(r.bw_share),
            "judged_by": r.judged_by,
            "over_peak": r.over_peak,
            "over_flops": "FLOP/s " in r.over_peak,
            "over_bw": "bandwidth " in r.over_peak,
        }
        for r in summary.roofline
    ]
    return {
        "rows": rows,
        "notes": sorted({r.note for r in summary.roofline if r.note}),
        "over_peak": [r.over_peak for r in summary.roofline if r.over_peak],
        "device": dev.name if dev is not None else None,
        "peak_flop_s": next((number(r.peak_flop_s) for r in summary.roofline if r.peak_flop_s), None),
        "peak_bytes_s": next((number(r.peak_bytes_s) for r in summary.roofline if r.peak_bytes_s), None),
    }


def mfu_cards(summary: Summary) -> list[tuple[str, str, float, str]]:
    """(key, label, percent, sub) for the headline: MFU of compute-bound phases, bandwidth
    of decode; only where the device's peak is known."""
    out = []
    for r in summary.roofline:
        if r.component != "step":
            continue
        if r.judged_by == "flops" and r.flops_share is not None and r.flop_s is not None:
            out.append(
                (
                    f"mfu_{r.phase}",
                    f"MFU ({r.phase})",
                    100 * r.flops_share,
                    f"{fmt.count(r.flop_s / 1e12, fmt.REPORT)} TFLOP/s, {r.source}",
                )
            )
        elif r.judged_by == "bandwidth" and r.bw_share is not None and r.bytes_s is not None:
            out.append(
                (
                    f"bw_{r.phase}",
                    f"Memory bandwidth ({r.phase})",
                    100 * r.bw_share,
                    f"{fmt.count(r.bytes_s / 1e9, fmt.REPORT)} GB/s, {r.source}",
                )
            )
    return out

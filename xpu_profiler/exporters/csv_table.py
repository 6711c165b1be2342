"""CSV of the fused-op × phase table: one row per (fused op, phase) with time and count."""

from __future__ import annotations

import csv
from pathlib import Path

from ..core import atomic_write
from ..core.profile import PHASES, Profile
from ..summary import Summary

NAME = "csv"
SUFFIXES = (".csv",)
COLUMNS = ("fused_op", "phase", "time_ns", "count", "share", "per_token_ns")


def rows(summary: Summary) -> list[dict]:
    op_time = summary.totals.op_time_ns
    out = []
    for f in summary.fused_ops:
        for phase in PHASES:
            t = f.time_ns_by_phase.get(phase, 0)
            if not t:
                continue
            per_token = f.per_token_ns_by_phase.get(phase)
            out.append(
                {
                    "fused_op": f.fused_op,
                    "phase": phase,
                    "time_ns": t,
                    "count": f.count_by_phase.get(phase, 0),
                    "share": f"{t / op_time:.6f}" if op_time else "",
                    "per_token_ns": "" if per_token is None else f"{per_token:.3f}",
                }
            )
        out.append(
            {
                "fused_op": f.fused_op,
                "phase": "all",
                "time_ns": f.time_ns,
                "count": f.count,
                "share": f"{f.share:.6f}",
                "per_token_ns": "",
            }
        )
    return out


def write(profile: Profile, summary: Summary, path: str | Path) -> Path:
    path = Path(path)
    with atomic_write.replacing(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows(summary))
    return path

"""The findings as instant markers on a "findings" track of each rank, at the start of
the steps where each was seen (the Perfetto trace's part of the findings)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from ..core.profile import Profile
from ..summary import Summary
from .chrome_device import DEVICE_STEP_TID, MAX_STEP_LANES

FINDINGS_TID = DEVICE_STEP_TID + MAX_STEP_LANES  # after the device-step lanes, below the host threads
MAX_MARKERS = 200  # per finding and rank: a finding seen in every step marks the first ones

_enc = msgspec.json.Encoder()


def markers(
    profile: Profile, summary: Summary | None, pid_of: dict[int, int]
) -> tuple[list[dict], list[str], np.ndarray]:
    """(metadata events, instant events as JSON text, their timestamps in ns)."""
    if summary is None or not summary.findings or not len(profile.steps):
        return [], [], np.zeros(0, np.int64)
    st = profile.steps
    texts: list[str] = []
    ts: list[int] = []
    used: set[int] = set()
    for rank_no, f in enumerate(summary.findings, 1):
        ranks = f.ranks or sorted(pid_of)
        for r in ranks:
            if r not in pid_of:
                continue
            rows = np.flatnonzero(st["rank"] == r)
            if not len(rows):
                continue
            if f.steps:  # where it was seen; else (a finding about the whole run) its first step
                rows = rows[np.isin(st["step_id"][rows], np.asarray(f.steps, np.int64))]
            else:
                rows = rows[[int(np.argmin(st["start"][rows]))]]
            for t in np.sort(st["start"][rows])[:MAX_MARKERS].tolist():
                args: dict[str, Any] = {
                    "rule": f.rule,
                    "rank": rank_no,
                    "at_stake_share": round(f.at_stake_share, 4),
                    "fix": f.fix,
                }
                texts.append(
                    _enc.encode(
                        {
                            "ph": "i",
                            "s": "t",
                            "name": f"{f.rule}: {f.title}",
                            "pid": pid_of[r],
                            "tid": FINDINGS_TID,
                            "ts": int(t) / 1000.0,
                            "args": args,
                        }
                    ).decode()
                )
                ts.append(int(t))
                used.add(r)
    meta = []
    for r in sorted(used):
        meta.append(
            {"ph": "M", "pid": pid_of[r], "tid": FINDINGS_TID, "name": "thread_name", "args": {"name": "findings"}}
        )
        meta.append(
            {
                "ph": "M",
                "pid": pid_of[r],
                "tid": FINDINGS_TID,
                "name": "thread_sort_index",
                "args": {"sort_index": FINDINGS_TID},
            }
        )
    return meta, texts, np.asarray(ts, np.int64)

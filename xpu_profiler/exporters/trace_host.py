"""The host's critical path as a track of each rank: the stretches of host time the device
waited for, each named by its cause and the frame, op or call that held it (``Summary.host_path``)."""

from __future__ import annotations

import msgspec
import numpy as np

from ..summary import Summary
from .trace_layers import LAYERS_TID

HOST_PATH_TID = LAYERS_TID + 1  # below the host threads (HOST_TID0 = 100)
HOST_PATH_CAT = "host_critical_path"

_enc = msgspec.json.Encoder()


def host_path_slices(
    summary: Summary | None, pid_of: dict[int, int]
) -> tuple[list[dict], list[str], np.ndarray, np.ndarray]:
    """(metadata events, slices as JSON text, their ts and dur in ns)."""
    hp = summary.host_path if summary is not None else None
    if hp is None or not hp.start_ns:
        return [], [], np.zeros(0, np.int64), np.zeros(0, np.int64)
    texts: list[str] = []
    ts: list[int] = []
    durs: list[int] = []
    used: set[int] = set()
    for r, s, d, cause, name in zip(hp.rank, hp.start_ns, hp.dur_ns, hp.cause, hp.name):
        if r not in pid_of or d <= 0:
            continue
        label = f"{cause}: {name}" if name else cause
        texts.append(
            _enc.encode(
                {
                    "ph": "X",
                    "cat": HOST_PATH_CAT,
                    "name": label,
                    "pid": pid_of[r],
                    "tid": HOST_PATH_TID,
                    "ts": s / 1000.0,
                    "dur": d / 1000.0,
                }
            ).decode()
        )
        ts.append(s)
        durs.append(d)
        used.add(r)
    meta = []
    for r in sorted(used):
        pid = pid_of[r]
        meta.append(
            {"ph": "M", "pid": pid, "tid": HOST_PATH_TID, "name": "thread_name", "args": {"name": "host critical path"}}
        )
        meta.append(
            {
                "ph": "M",
                "pid": pid,
                "tid": HOST_PATH_TID,
                "name": "thread_sort_index",
                "args": {"sort_index": HOST_PATH_TID},
            }
        )
    return meta, texts, np.asarray(ts, np.int64), np.asarray(durs, np.int64)

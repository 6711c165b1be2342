"""The decoder layers as a "layers" track of each rank: one slice per layer of each step
counted, on the device's clock, from its first device work's start to its last one's end
(the Perfetto trace's part of the layer view). A slice that would overlap the next one on
the track (work of another stream that ends later) is cut at the next one's start, so the
track nests cleanly."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from ..summary import Summary
from .trace_findings import FINDINGS_TID

LAYERS_TID = FINDINGS_TID + 1  # below the host threads (HOST_TID0 = 100)

_enc = msgspec.json.Encoder()


def layer_slices(
    summary: Summary | None, pid_of: dict[int, int]
) -> tuple[list[dict], list[str], np.ndarray, np.ndarray]:
    """(metadata events, slices as JSON text, their ts and dur in ns)."""
    lay = summary.layers if summary is not None else None
    if lay is None or not lay.spans.start_ns:
        return [], [], np.zeros(0, np.int64), np.zeros(0, np.int64)
    sp = lay.spans
    rank = np.asarray(sp.rank, np.int64)
    start = np.asarray(sp.start_ns, np.int64)
    end = np.asarray(sp.end_ns, np.int64)
    order = np.lexsort((start, rank))
    texts: list[str] = []
    ts: list[int] = []
    durs: list[int] = []
    used: set[int] = set()
    evidence = {p.phase: p for p in lay.phases}
    for k, i in enumerate(order.tolist()):
        r = int(rank[i])
        if r not in pid_of:
            continue
        e = int(end[i])
        if k + 1 < len(order) and int(rank[order[k + 1]]) == r:
            e = min(e, int(start[order[k + 1]]))  # never into the next layer's slice
        s = int(start[i])
        if e <= s:
            continue
        args: dict[str, Any] = {"layer": sp.index[i], "kind": sp.kind[i]}
        if sp.step_id[i] >= 0:
            args["step_id"] = sp.step_id[i]
        texts.append(
            _enc.encode(
                {
                    "ph": "X",
                    "name": f"layer {sp.index[i]} · {sp.kind[i]}",
                    "pid": pid_of[r],
                    "tid": LAYERS_TID,
                    "ts": s / 1000.0,
                    "dur": (e - s) / 1000.0,
                    "args": args,
                }
            ).decode()
        )
        ts.append(s)
        durs.append(e - s)
        used.add(r)
    inferred = any(p.inferred for p in evidence.values())
    label = "layers (inferred)" if inferred else "layers"
    meta = []
    for r in sorted(used):
        meta.append({"ph": "M", "pid": pid_of[r], "tid": LAYERS_TID, "name": "thread_name", "args": {"name": label}})
        meta.append(
            {
                "ph": "M",
                "pid": pid_of[r],
                "tid": LAYERS_TID,
                "name": "thread_sort_index",
                "args": {"sort_index": LAYERS_TID},
            }
        )
    return meta, texts, np.asarray(ts, np.int64), np.asarray(durs, np.int64)

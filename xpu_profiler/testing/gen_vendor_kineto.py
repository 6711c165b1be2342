"""The torch.profiler (Kineto) trace of the same synthetic run ``vendor_workload`` builds: the
twin of an Nsight Systems export or a rocprofv3 output, for comparing runs across profilers.

One ``*.pt.trace.json`` per rank, laid out as Kineto writes it (``libkineto/src/
output_json.cpp``): ``X`` events in µs relative to ``baseTimeNanoseconds``, kernels and copies
on the device's pid and the stream's tid with ``args.correlation``, runtime calls
(``cuda_runtime``) and ranges (``user_annotation``) on the process's pid and thread.
"""

from __future__ import annotations

import json
from pathlib import Path

from .vendor_workload import PID0, Rec, Workload, build

COPY_NAMES = {"HtoD": "Memcpy HtoD (Pinned -> Device)", "DtoH": "Memcpy DtoH (Device -> Pinned)"}


def _event(r: Rec, base: int) -> dict | None:
    ts, dur = (r.start - base) / 1000, (r.end - r.start) / 1000
    if r.kind == "kernel" and r.graph < 0:
        return {
            "ph": "X",
            "cat": "kernel",
            "name": r.name,
            "pid": r.device,
            "tid": r.stream,
            "ts": ts,
            "dur": dur,
            "args": {"correlation": r.corr, "device": r.device, "stream": r.stream},
        }
    if r.kind == "memcpy":
        return {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": COPY_NAMES[r.name],
            "pid": r.device,
            "tid": r.stream,
            "ts": ts,
            "dur": dur,
            "args": {"correlation": r.corr, "device": r.device, "stream": r.stream, "bytes": r.nbytes},
        }
    if r.kind == "runtime":
        return {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": r.name,
            "pid": r.pid,
            "tid": r.tid,
            "ts": ts,
            "dur": dur,
            "args": {"correlation": r.corr},
        }
    if r.kind == "range":
        return {"ph": "X", "cat": "user_annotation", "name": r.name, "pid": r.pid, "tid": r.tid, "ts": ts, "dur": dur}
    return None


def write(out_dir: str | Path, w: Workload | None = None) -> dict:
    """``rank{r}.pt.trace.json`` per rank in ``out_dir``; returns the truth."""
    w = w or Workload()
    run = build(w)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = w.t0 - 1_000_000
    for rank in range(w.ranks):
        events = [e for r in run.records if r.pid == PID0 + rank and (e := _event(r, base)) is not None]
        doc = {
            "schemaVersion": 1,
            "deviceProperties": [
                {
                    "id": rank,
                    "name": "NVIDIA H100 80GB HBM3",
                    "totalGlobalMem": 85520809984,
                    "computeMajor": 9,
                    "computeMinor": 0,
                    "numSms": 132,
                    "warpSize": 32,
                }
            ],
            "distributedInfo": {"rank": rank, "world_size": w.ranks},
            "baseTimeNanoseconds": 1_764_633_600_000_000_000 + base,
            "traceEvents": events,
        }
        (out / f"rank{rank}.pt.trace.json").write_text(json.dumps(doc))
    return run.truth

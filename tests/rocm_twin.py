"""A ROCm-style twin of the real vLLM Llama TP=4 H100 trace (rank 0), made by rules written for
that trace, with the host stall a new user saw on MI300X put in where they saw it.

- **ROCm's names**: runtime calls ``cuda*`` → ``hip*``; the pinned host-to-device input copies
  are labelled ``Memcpy DtoD (Device -> Device)`` as ROCm's runtime labels them, and the
  ``hipMemcpyAsync`` call that made each carries ``kind: 1`` (host to device); the device is an
  MI300X.
- **The stall** (``stall_us`` > 0): in every decode step (each ``gpu_worker.py(263):
  execute_model`` frame after the first, which is the prefill; the last one launched nothing),
  the model's forward frame ``llama.py(343): forward`` stops for ``stall_us`` at the first instant
  no frame, op or call below it covers: every later event moves that much later, the frames and
  ops that span the instant grow by it. The stall is the forward frame's own time, as the MI300X
  trace's 22-28 ms per step was.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

STEP_FRAME = "vllm/v1/worker/gpu_worker.py(263): execute_model"
FORWARD_FRAME = "vllm/model_executor/models/llama.py(343): forward"
HOST_CATS = ("python_function", "cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")


def _is_h2d(name: str) -> bool:
    return name.startswith("Memcpy HtoD")


def make(src: Path, dst: Path, stall_us: float = 0.0, kind: bool = True) -> dict:
    """Write the twin; returns the rule's facts: the stall instants (µs, on the source's clock)
    and the stall. ``kind=False`` leaves the copy calls without their ``kind`` argument (a
    trace whose copies only their labels describe)."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    ev = doc["traceEvents"]
    _rename(ev, kind)
    doc["deviceProperties"] = [{**p, "name": "AMD Instinct MI300X"} for p in doc.get("deviceProperties", [])]
    stalls = _stall_points(ev) if stall_us else []
    for t in sorted(stalls, reverse=True):  # the latest first: each shift leaves the earlier points in place
        for e in ev:
            ts = e.get("ts")
            if not isinstance(ts, (int, float)):
                continue
            if ts >= t:
                e["ts"] = ts + stall_us
            elif e.get("ph") == "X" and e.get("cat") in HOST_CATS and ts + e.get("dur", 0) > t:
                e["dur"] = e["dur"] + stall_us
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return {"stalls": stalls, "stall_us": stall_us}


def _rename(ev: list[dict], kind: bool) -> None:
    copy_calls = set()
    for e in ev:
        if e.get("cat") == "gpu_memcpy" and _is_h2d(e.get("name", "")):
            copy_calls.add(e.get("args", {}).get("correlation"))
            e["name"] = "Memcpy DtoD (Device -> Device)"
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            name = e.get("name", "")
            if name.startswith("cuda"):
                e["name"] = "hip" + name[4:]
            elif name.startswith("cu"):
                e["name"] = "hip" + name[2:]
            args = e.setdefault("args", {})
            if kind and args.get("correlation") in copy_calls and "Memcpy" in e["name"]:
                args["kind"] = "1"


def _stall_points(ev: list[dict]) -> list[float]:
    """The first uncovered instant (µs) inside the forward frame of each decode step."""
    steps = sorted((e for e in ev if e.get("name") == STEP_FRAME), key=lambda e: e["ts"])
    decode = steps[1:-1]
    points = []
    for s in decode:
        fwd = next(
            e
            for e in ev
            if e.get("name") == FORWARD_FRAME and s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"]
        )
        t0, t1, tid = fwd["ts"], fwd["ts"] + fwd["dur"], fwd["tid"]
        inside = sorted(
            (e["ts"], e["ts"] + e.get("dur", 0))
            for e in ev
            if e.get("ph") == "X"
            and e.get("tid") == tid
            and e.get("cat") in HOST_CATS
            and e is not fwd
            and t0 <= e["ts"] < t1
        )
        cur = t0
        for a, b in inside:
            if a > cur:
                break
            cur = max(cur, b)
        points.append(cur + 0.5)  # half a µs after the last covered instant
    return points

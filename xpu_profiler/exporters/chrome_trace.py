"""Chrome / Perfetto trace JSON (`.json`, `.json.gz`) that imports with zero errors.

Layout: one process per rank; in it one track for engine steps (slices named by
phase, tokens in args), one per host thread, one per device stream (with extra
"lane" tracks where kernels on a stream overlap), and counter tracks for memory,
KV-cache usage and throughput. The rules followed are those of Perfetto's JSON
importer: `traceEvents` first, integer-derived µs with at most 3 decimals,
events sorted by (ts, -dur), exactly one name per process and thread, no
partially overlapping slices on a track, no NaN.
"""

from __future__ import annotations

import gzip
import io
import math
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ..profile import DEVICE_KINDS, K_ANNOTATION, KINDS, PHASES, Profile
from ..taxonomy import FUSED_OPS
from ..validate import JS_SAFE

NAME = "perfetto"
SUFFIXES = (".json", ".json.gz", ".trace.json", ".trace.json.gz")

STEP_TID = 1
HOST_TID0 = 100
DEVICE_TID0 = 10_000
MAX_DEPTH = 500  # Perfetto drops slices deeper than 512

_encoder = msgspec.json.Encoder()


def _us(ns: int) -> float:
    """Integer ns → µs with at most 3 decimals (exact: relative times stay small)."""
    return ns / 1000.0


def _lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Lane per interval so that every lane holds only properly nested slices.

    Fast path: a track of disjoint slices is one lane. Otherwise each slice goes to the
    first lane whose innermost open slice holds it (or that has none open).
    """
    n = len(start)
    lanes = np.zeros(n, np.int64)
    if n < 2:
        return lanes
    order = np.lexsort((-end, start))
    s, e = start[order], end[order]
    prev_end = np.maximum.accumulate(np.concatenate(([np.iinfo(np.int64).min], e[:-1])))
    if (s >= prev_end).all():  # disjoint slices (a device stream, usually): one lane
        return lanes
    stacks: list[list[int]] = []
    out = np.zeros(n, np.int64)
    for k, (a, b) in enumerate(zip(s.tolist(), e.tolist())):
        for li, st in enumerate(stacks):
            while st and st[-1] <= a:
                st.pop()
            if (not st or b <= st[-1]) and len(st) < MAX_DEPTH:
                st.append(b)
                out[k] = li
                break
        else:
            stacks.append([b])
            out[k] = len(stacks) - 1
    lanes[order] = out
    return lanes


def build_events(profile: Profile, summary: dict | None = None) -> list[dict[str, Any]]:
    """All trace events as plain dicts, in the order they are written."""
    ev, steps, strings = profile.events, profile.steps, profile.strings
    thread_names = profile.run.get("thread_names", {})
    out: list[dict[str, Any]] = []
    meta: list[dict[str, Any]] = []
    ranks = profile.ranks or [0]
    pid_of = {r: i + 1 for i, r in enumerate(ranks)}
    for r in ranks:
        pid = pid_of[r]
        meta.append({"ph": "M", "pid": pid, "tid": pid, "name": "process_name", "args": {"name": f"rank {r}"}})
        meta.append({"ph": "M", "pid": pid, "tid": pid, "name": "process_sort_index", "args": {"sort_index": r}})

    timed = ev["start"] >= 0
    exported = timed & (ev["kind"] != K_ANNOTATION) | (timed & (ev["kind"] == K_ANNOTATION) & (ev["device"] < 0))
    idx = np.flatnonzero(exported)
    rank = ev["rank"][idx]
    is_dev = np.isin(ev["kind"][idx], DEVICE_KINDS) | (ev["device"][idx] >= 0)
    device = ev["device"][idx]
    track = ev["track"][idx]
    start = ev["start"][idx]
    end = start + ev["dur"][idx]

    # tracks: (rank, is_device, device, track) → tid
    keys = np.stack([rank.astype(np.int64), is_dev.astype(np.int64), device.astype(np.int64), track], axis=1) \
        if len(idx) else np.zeros((0, 4), np.int64)
    uniq, inv = (np.unique(keys, axis=0, return_inverse=True) if len(idx) else (keys, np.zeros(0, np.int64)))
    inv = inv.reshape(-1)
    tid = np.zeros(len(idx), np.int64)
    next_host: dict[int, int] = {}
    next_dev: dict[int, int] = {}
    for u, (r, dev, d, tr) in enumerate(uniq.tolist()):
        m = np.flatnonzero(inv == u)
        lanes = _lanes(start[m], end[m])
        pid = pid_of[r]
        n_lanes = int(lanes.max()) + 1 if len(lanes) else 1
        if dev:
            base = DEVICE_TID0 + next_dev.get(r, 0)
            next_dev[r] = next_dev.get(r, 0) + n_lanes
            label = f"device {d} stream {tr}"
        else:
            base = HOST_TID0 + next_host.get(r, 0)
            next_host[r] = next_host.get(r, 0) + n_lanes
            tname = thread_names.get(str(r), {})
            label = next((v for k, v in tname.items() if k.endswith(f":{tr}")), None) or f"thread {tr}"
        tid[m] = base + lanes
        for lane in range(n_lanes):
            t = base + lane
            meta.append({"ph": "M", "pid": pid, "tid": t, "name": "thread_name",
                         "args": {"name": label if lane == 0 else f"{label} (lane {lane + 1})"}})
            meta.append({"ph": "M", "pid": pid, "tid": t, "name": "thread_sort_index", "args": {"sort_index": t}})

    names = strings.strings
    kinds = ev["kind"][idx].tolist()
    fused = ev["fused"][idx].tolist()
    phase = ev["phase"][idx].tolist()
    step = ev["step"][idx].tolist()
    corr = ev["corr"][idx].tolist()
    name_ids = ev["name"][idx].tolist()
    pids = [pid_of[r] for r in rank.tolist()]
    for k, (s, e, t, p) in enumerate(zip(start.tolist(), end.tolist(), tid.tolist(), pids)):
        args: dict[str, Any] = {"kind": KINDS[kinds[k]]}
        if fused[k] >= 0:
            args["fused_op"] = FUSED_OPS[fused[k]]
        if step[k] >= 0:
            args["step"] = step[k]
            args["phase"] = PHASES[phase[k]]
        if 0 <= corr[k] < JS_SAFE:  # larger ids lose precision in JavaScript viewers
            args["correlation"] = corr[k]
        out.append({"ph": "X", "name": names[name_ids[k]] or "[no name]", "pid": p, "tid": t,
                    "ts": _us(s), "dur": _us(e - s), "args": args})

    # engine steps
    if len(steps):
        for i in range(len(steps)):
            r = int(steps["rank"][i])
            if r not in pid_of:
                continue
            ph = PHASES[int(steps["phase"][i])]
            pt, dt = int(steps["prefill_tokens"][i]), int(steps["decode_tokens"][i])
            args = {"step_id": int(steps["step_id"][i]), "phase": ph, "prefill_tokens": pt,
                    "decode_tokens": dt, "prefill_reqs": int(steps["prefill_reqs"][i]),
                    "decode_reqs": int(steps["decode_reqs"][i]), "busy_us": _us(int(steps["busy"][i]))}
            for c in ("running", "waiting"):
                if steps[c][i] >= 0:
                    args[c] = int(steps[c][i])
            kv = float(steps["kv_usage"][i])
            if math.isfinite(kv):
                args["kv_usage"] = kv
            s = int(steps["start"][i])
            out.append({"ph": "X", "name": f"{ph} step {int(steps['step_id'][i])} ({pt + dt} tok)",
                        "pid": pid_of[r], "tid": STEP_TID, "ts": _us(s), "dur": _us(int(steps["dur"][i])),
                        "args": args})
        for r in ranks:
            meta.append({"ph": "M", "pid": pid_of[r], "tid": STEP_TID, "name": "thread_name",
                         "args": {"name": "engine steps"}})
            meta.append({"ph": "M", "pid": pid_of[r], "tid": STEP_TID, "name": "thread_sort_index",
                         "args": {"sort_index": STEP_TID}})

    # counters (one series per event: the set of keys is fixed by the first event)
    c = profile.counters
    if len(c):
        cn = c["name"].tolist()
        for r_, n_, t_, v_ in zip(c["rank"].tolist(), cn, c["t"].tolist(), c["value"].tolist()):
            if r_ not in pid_of or t_ < 0 or not math.isfinite(v_):
                continue
            out.append({"ph": "C", "name": names[n_], "pid": pid_of[r_], "tid": pid_of[r_], "ts": _us(t_),
                        "args": {"value": v_}})

    out.sort(key=lambda d: (d["ts"], -d.get("dur", 0.0)))
    return meta + out


def to_bytes(profile: Profile, summary: dict | None = None) -> bytes:
    doc = {
        "traceEvents": build_events(profile, summary),
        "displayTimeUnit": "ns",
        "metadata": {
            "producer": "xpu_profiler",
            # a string: as a JSON number it would exceed 2^53 and lose precision in JS viewers
            "base_time_ns": str(int(profile.base_ns)),
            "has_timeline": profile.has_timeline,
            "model": str(profile.run.get("model", "")),
            "device": str(profile.run.get("device", "")),
        },
    }
    return _encoder.encode(doc)


def write(profile: Profile, summary: dict | None, path: str | Path) -> Path:
    path = Path(path)
    data = to_bytes(profile, summary)
    if path.name.endswith(".gz"):
        buf = io.BytesIO()
        # mtime=0 and no file name: the same input gives the same bytes
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
            gz.write(data)
        data = buf.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path

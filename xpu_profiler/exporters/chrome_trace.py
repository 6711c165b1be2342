"""Chrome / Perfetto trace JSON (`.json`, `.json.gz`) that imports with zero errors.

Layout: one process per rank; in it one track for engine steps (slices named by
phase, tokens in args), one for the steps' device spans, one per host thread, one
per device stream (with extra "lane" tracks where kernels on a stream overlap),
counter tracks for memory, KV-cache usage, throughput and each step's device idle
by cause, and flow arrows from each launch to its device work (``chrome_device``). The rules followed are those of Perfetto's JSON
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

from .. import atomic_write
from ..aggregate.intervals import distinct_rows, lanes
from ..fmt import place
from .chrome_device import device_step_tracks, flows
from ..profile import DEVICE_KINDS, K_ANNOTATION, KINDS, PHASES, Profile
from ..summary import Summary
from ..taxonomy import FUSED_OPS
from ..validate import JS_SAFE
from .trace_findings import markers

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


def _us_text(ns: int) -> str:
    """Integer ns → µs text with exactly 3 decimals (no float rounding on the way)."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def build(profile: Profile, summary: Summary | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Metadata events (dicts) and every other event as JSON text, in the order written.
    With the summary, each rank's process says its place in the parallel layout.

    Slices are formatted straight from the columns: one f-string per event, no dict per
    event, so million-event profiles export in seconds.
    """
    ev, steps, strings = profile.events, profile.steps, profile.strings
    thread_names = profile.run.get("thread_names", {})
    meta: list[dict[str, Any]] = []
    ranks = profile.ranks or [0]
    pid_of = {r: i + 1 for i, r in enumerate(ranks)}
    places = {row.rank: place(row.groups, summary.parallel.sizes) for row in summary.ranks} \
        if summary is not None else {}
    for r in ranks:
        pid = pid_of[r]
        label = f"rank {r} ({places[r]})" if places.get(r) else f"rank {r}"
        meta.append({"ph": "M", "pid": pid, "tid": pid, "name": "process_name", "args": {"name": label}})
        meta.append({"ph": "M", "pid": pid, "tid": pid, "name": "process_sort_index", "args": {"sort_index": r}})

    timed = ev["start"] >= 0
    host_ann = (ev["kind"] == K_ANNOTATION) & (ev["device"] < 0)
    idx = np.flatnonzero(timed & ((ev["kind"] != K_ANNOTATION) | host_ann))  # no gpu_user_annotation twins
    rank = ev["rank"][idx].astype(np.int64)
    is_dev = (np.isin(ev["kind"][idx], DEVICE_KINDS) | (ev["device"][idx] >= 0)).astype(np.int64)
    device = ev["device"][idx].astype(np.int64)
    track = ev["track"][idx]
    start = ev["start"][idx]
    dur = ev["dur"][idx]

    # tracks: (rank, host/device, device, thread or stream) → tid, with lanes where slices overlap
    uniq, inv = distinct_rows(rank, is_dev, device, track)
    by_track = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[by_track], np.arange(len(uniq) + 1))
    tid = np.zeros(len(idx), np.int64)
    next_tid: dict[tuple[int, int], int] = {}
    for u, (r, dev, d, tr) in enumerate(uniq.tolist()):
        m = by_track[bounds[u]:bounds[u + 1]]
        lane_of = lanes(start[m], start[m] + dur[m], MAX_DEPTH)
        n_lanes = int(lane_of.max()) + 1 if len(lane_of) else 1
        base = (DEVICE_TID0 if dev else HOST_TID0) + next_tid.get((r, dev), 0)
        next_tid[(r, dev)] = next_tid.get((r, dev), 0) + n_lanes
        if dev:
            label = f"device {d} stream {tr}"
        else:
            tname = thread_names.get(str(r), {})
            label = next((v for k, v in tname.items() if k.endswith(f":{tr}")), None) or f"thread {tr}"
        tid[m] = base + lane_of
        for lane in range(n_lanes):
            t = base + lane
            meta.append({"ph": "M", "pid": pid_of[r], "tid": t, "name": "thread_name",
                         "args": {"name": label if lane == 0 else f"{label} (lane {lane + 1})"}})
            meta.append({"ph": "M", "pid": pid_of[r], "tid": t, "name": "thread_sort_index", "args": {"sort_index": t}})

    enc = _encoder.encode
    name_json = {int(i): enc(strings[int(i)] or "[no name]").decode() for i in np.unique(ev["name"][idx])}
    kind_json = [f'"kind":"{k}"' for k in KINDS]
    fused_json = [f',"fused_op":"{f}"' for f in FUSED_OPS]
    pid_col = np.array([pid_of[r] for r in ranks], np.int64)[np.searchsorted(np.array(ranks), rank)] \
        if len(idx) else np.zeros(0, np.int64)
    texts: list[str] = []
    append = texts.append
    for s, d, t, p, nid, k, f, st, ph, c in zip(
            start.tolist(), dur.tolist(), tid.tolist(), pid_col.tolist(), ev["name"][idx].tolist(),
            ev["kind"][idx].tolist(), ev["fused"][idx].tolist(), ev["step"][idx].tolist(),
            ev["phase"][idx].tolist(), ev["corr"][idx].tolist()):
        a = kind_json[k]
        if f >= 0:
            a += fused_json[f]
        if st >= 0:
            a += f',"step":{st},"phase":"{PHASES[ph]}"'
        if 0 <= c < JS_SAFE:  # larger ids lose precision in JavaScript viewers
            a += f',"correlation":{c}'
        append(f'{{"ph":"X","name":{name_json[nid]},"pid":{p},"tid":{t},'
               f'"ts":{s // 1000}.{s % 1000:03d},"dur":{d // 1000}.{d % 1000:03d},"args":{{{a}}}}}')
    ts_all, dur_all = [start], [dur]
    flow_texts, flow_ts = flows(profile, idx, tid, pid_col)  # launch → device work arrows
    texts += flow_texts
    ts_all.append(flow_ts)
    dur_all.append(np.zeros(len(flow_ts), np.int64))
    d_meta, d_texts, d_ts, d_dur = device_step_tracks(summary, pid_of, enc)  # steps on the device's clock
    meta += d_meta
    texts += d_texts
    ts_all.append(d_ts)
    dur_all.append(d_dur)

    # engine steps
    engine_of = profile.step_engine if len(profile.step_engine) == len(steps) else None
    if len(steps):
        s_ts, s_dur = [], []
        for i in range(len(steps)):
            r = int(steps["rank"][i])
            if r not in pid_of:
                continue
            ph = PHASES[int(steps["phase"][i])]
            pt, dt = int(steps["prefill_tokens"][i]), int(steps["decode_tokens"][i])
            args = {"step_id": int(steps["step_id"][i]), "phase": ph, "prefill_tokens": pt,
                    "decode_tokens": dt, "prefill_reqs": int(steps["prefill_reqs"][i]),
                    "decode_reqs": int(steps["decode_reqs"][i]), "busy_us": _us(int(steps["busy"][i]))}
            if engine_of is not None and engine_of[i] >= 0:
                args["engine_step"] = int(engine_of[i])
            for c in ("running", "waiting"):
                if steps[c][i] >= 0:
                    args[c] = int(steps[c][i])
            kv = float(steps["kv_usage"][i])
            if math.isfinite(kv):
                args["kv_usage"] = kv
            s, d = int(steps["start"][i]), int(steps["dur"][i])
            append(enc({"ph": "X", "name": f"{ph} step {int(steps['step_id'][i])} ({pt + dt} tok)",
                        "pid": pid_of[r], "tid": STEP_TID, "ts": _us(s), "dur": _us(d), "args": args}).decode())
            s_ts.append(s)
            s_dur.append(d)
        ts_all.append(np.array(s_ts, np.int64))
        dur_all.append(np.array(s_dur, np.int64))
        for r in ranks:
            meta.append({"ph": "M", "pid": pid_of[r], "tid": STEP_TID, "name": "thread_name",
                         "args": {"name": "engine steps"}})
            meta.append({"ph": "M", "pid": pid_of[r], "tid": STEP_TID, "name": "thread_sort_index",
                         "args": {"sort_index": STEP_TID}})

    # counters (one series per event: the set of keys is fixed by the first event)
    c = profile.counters
    if len(c):
        ok = np.isin(c["rank"], ranks) & (c["t"] >= 0) & np.isfinite(c["value"])
        cname = {int(i): enc(strings[int(i)]).decode() for i in np.unique(c["name"][ok])}
        for r_, n_, t_, v_ in zip(c["rank"][ok].tolist(), c["name"][ok].tolist(), c["t"][ok].tolist(),
                                  c["value"][ok].tolist()):
            append(f'{{"ph":"C","name":{cname[n_]},"pid":{pid_of[r_]},"tid":{pid_of[r_]},'
                   f'"ts":{_us_text(t_)},"args":{{"value":{enc(v_).decode()}}}}}')
        ts_all.append(c["t"][ok])
        dur_all.append(np.zeros(int(ok.sum()), np.int64))

    f_meta, f_texts, f_ts = markers(profile, summary, pid_of)  # findings at the steps where seen
    meta += f_meta
    texts += f_texts
    ts_all.append(f_ts)
    dur_all.append(np.zeros(len(f_ts), np.int64))

    ts_cat, dur_cat = np.concatenate(ts_all), np.concatenate(dur_all)
    order = np.lexsort((-dur_cat, ts_cat))  # by ts, longer first: parents before children
    return meta, [texts[i] for i in order.tolist()]


def to_bytes(profile: Profile, summary: Summary | None = None) -> bytes:
    meta, texts = build(profile, summary)
    head = {
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
    # traceEvents first: Perfetto sniffs the first bytes to pick its JSON importer
    parts = [_encoder.encode(m).decode() for m in meta] + texts
    tail = _encoder.encode(head).decode()[1:]  # drop the "{"
    return ('{"traceEvents":[\n' + ",\n".join(parts) + "\n]," + tail).encode("utf-8")


def write(profile: Profile, summary: Summary | None, path: str | Path) -> Path:
    path = Path(path)
    data = to_bytes(profile, summary)
    if path.name.endswith(".gz"):
        buf = io.BytesIO()
        # mtime=0 and no file name: the same input gives the same bytes
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=1) as gz:  # fast: traces are large
            gz.write(data)
        data = buf.getvalue()
    return atomic_write.write_bytes(path, data)

"""Kunlun XProfiler traces: `xprofiler.trace.json` (and its `xprofiler.settings.json`).

XProfiler (Kunlun's system profiler, vLLM-Kunlun
``docs/source/developer_guide/performance/performance_benchmark/benchmark_kernel.md``)
writes two files: ``xprofiler.settings.json`` (which event classes were traced)
and ``xprofiler.trace.json`` (the events), the latter for chrome://tracing or
Perfetto, i.e. Chrome Trace Event JSON. Its categories and args are not
documented, so this reader maps what it can recognise and keeps the rest:

- the Kunlun runtime's own tracing interface (XPTI, as read by Paddle's
  ``paddle/fluid/platform/profiler/xpu_tracer.cc``) has four record types,
  API, KERNEL, MEMCPY and WAIT, carrying name, start/end, pid/tid, device id,
  stream id and a ``token`` that links an API call to its kernel. Categories
  and args spelled like those (any case; ``stream``/``stream_id``,
  ``device``/``device_id``, ``correlation``/``token``...) are mapped to the
  event kinds runtime, kernel, memcpy and runtime (wait);
- without a recognised category, a C++-mangled name (``_Z...``) is a device
  kernel and an ``xpu_*`` function name is a runtime API call; mangled names
  are demangled as the ``[XPURT_PROF]`` reader does, so both name a kernel alike;
- a process named like ``XPU 3`` / ``device 3`` gives the device index of the
  events in it;
- everything else is kept as an event of kind "unknown" with its category, and
  counted in the run's source record; odd events never make the read fail.

Chrome-trace times are microseconds (``ts``, ``dur``), converted to integer ns.
``B``/``E`` pairs are joined per thread; ``C`` events become counters; ``M``
events name processes; instant and flow events are counted, not kept.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from ..core.errors import TraceError
from ..core.profile import (
    COUNTER_SCHEMA,
    EVENT_SCHEMA,
    K_COMM,
    K_KERNEL,
    K_MEMCPY,
    K_MEMSET,
    K_RUNTIME,
    K_UNKNOWN,
    Profile,
    Table,
)
from ..knowledge.kernel_names import demangle_names
from .base import ReadOptions, has_kineto_markers, is_chrome_json, resolve_rank
from .content import read_bytes
from .kineto.columns import MAX_DUR_US, MAX_US
from .kineto.tolerant import NOT_OBJECT, add_skip, generic, skip_lines

NAME = "xprofiler"

SETTINGS_NAME = "xprofiler.settings.json"

# Names and categories specific to the Kunlun runtime / XProfiler.
_XPU_MARKERS = re.compile(
    rb'"(?:xpu_launch[a-z_]*|xpu_wait|xpu_memcpy[a-z_]*|xpu_malloc|xpu_free|xpurt[a-z_]*|'
    rb'XPTI[A-Za-z_]*|xpti[a-z_]*|XPURT[A-Z_]*|SSE|SDNN|sdnn[a-z_]*|XPU ?\d+)"'
)

# category (lower case) → kind
CATEGORY_KINDS = {
    "api": K_RUNTIME,
    "runtime": K_RUNTIME,
    "runtime api": K_RUNTIME,
    "driver": K_RUNTIME,
    "driver api": K_RUNTIME,
    "xpu_api": K_RUNTIME,
    "xpu_runtime": K_RUNTIME,
    "xpurt": K_RUNTIME,
    "xpu_driver": K_RUNTIME,
    "wait": K_RUNTIME,
    "sync": K_RUNTIME,
    "synchronize": K_RUNTIME,
    "kernel": K_KERNEL,
    "xpu_kernel": K_KERNEL,
    "device_kernel": K_KERNEL,
    "kernels": K_KERNEL,
    "memcpy": K_MEMCPY,
    "xpu_memcpy": K_MEMCPY,
    "gpu_memcpy": K_MEMCPY,
    "memory copy": K_MEMCPY,
    "memset": K_MEMSET,
    "xpu_memset": K_MEMSET,
    "gpu_memset": K_MEMSET,
    "bkcl": K_COMM,
    "xccl": K_COMM,
    "communication": K_COMM,
    "collective": K_COMM,
}
_DEVICE_KEYS = ("device", "device_id", "deviceId", "dev", "xpu", "devid")
_STREAM_KEYS = ("stream", "stream_id", "streamId", "hwq", "queue")
_CORR_KEYS = ("correlation", "correlation_id", "correlationId", "corr", "token")
_DEVICE_PROCESS = re.compile(r"(?:xpu|device|card|gpu|kunlun)\s*[:#_-]?\s*(\d+)", re.I)
_XPU_API_NAME = re.compile(r"xpu[A-Za-z]*_[A-Za-z0-9_]+|xpu[A-Z][A-Za-z0-9]+")


def _is_settings(path: Path, head: bytes) -> bool:
    h = head.lstrip()
    return path.name.lower() == SETTINGS_NAME and h.startswith(b"{") and b'"traceEvents"' not in head


def sniff(path: Path, head: bytes) -> bool:
    if _is_settings(path, head):
        return True
    # Kineto writes its markers near the top of every trace: such files are not XProfiler's
    if has_kineto_markers(head) or not is_chrome_json(head):
        return False
    if "xprofiler" in path.name.lower() or (path.parent / SETTINGS_NAME).is_file():
        return True
    return bool(_XPU_MARKERS.search(head))


def _int(v, default: int = -1) -> int:
    """An id from a JSON value; one beyond int64 (or no number at all) is ``default``."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        v = int(v) if math.isfinite(v) else default
    elif isinstance(v, str):
        try:
            v = int(v[:40], 0) if len(v) <= 40 else default
        except ValueError:
            m = re.search(r"-?\d{1,19}", v)
            v = int(m.group()) if m else default
    elif not isinstance(v, int):
        return default
    return v if -INT64 <= v < INT64 else default


def _num(v) -> float | None:
    """A finite number from a JSON value (numbers, numeric strings), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        try:
            x = float(v)
        except OverflowError:  # an integer of hundreds of digits: out of range, not unusable
            return 1e308
    elif isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            return None
    else:
        return None
    return x if math.isfinite(x) else None


INT64 = 1 << 63


def _time(e: dict, ts: float | None, dur: float | None) -> str | None:
    """Why an event's times are unusable (the kind of a skip), or None."""
    if ts is None:
        return "with no usable 'ts' (missing, not a number, NaN or Infinity)"
    if dur is None:
        return "with no usable 'dur' (missing, not a number, NaN or Infinity)"
    if abs(ts) > MAX_US or dur > MAX_DUR_US:
        return "with a time out of range"
    if dur < 0:
        return "with a negative duration"
    return None


def _key(v):
    """A pid/tid usable as a dict key whatever JSON put there."""
    return v if isinstance(v, (int, float, str)) or v is None else repr(v)


def _first(args: dict, keys: tuple[str, ...]) -> int:
    for k in keys:
        if k in args:
            v = _int(args[k])
            if v != -1:
                return v
    return -1


def _kind(cat: str, name: str, has_device: bool) -> int:
    c = cat.strip().lower()
    k = CATEGORY_KINDS.get(c)
    if k is None and c:
        if "kernel" in c:
            k = K_KERNEL
        elif "memcpy" in c or "memory copy" in c:
            k = K_MEMCPY
        elif "memset" in c:
            k = K_MEMSET
        elif c.endswith("api") or "runtime" in c or c.startswith("wait"):
            k = K_RUNTIME
    if k == K_MEMCPY and not has_device:
        return K_RUNTIME  # the host side of a copy (XPTI MEMCPY records carry pid/tid only)
    if k is not None:
        return k
    if name.startswith("_Z"):
        return K_KERNEL
    if _XPU_API_NAME.fullmatch(name):
        return K_RUNTIME
    return K_UNKNOWN


def _decode(path: Path, data: bytes):
    if not data.strip():
        raise TraceError(path, "empty file")
    doc = generic(path, data)  # NaN, huge numbers: read here, skipped by the checks
    if isinstance(doc, list):
        return {}, doc
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        return doc, doc["traceEvents"]
    raise TraceError(path, "JSON is not an XProfiler trace (no traceEvents array)")


def _load_settings(path: Path) -> dict | None:
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else {"value": doc}


def read(path: Path, options: ReadOptions) -> Profile:
    if path.name.lower() == SETTINGS_NAME:
        return _read_settings(path)
    data = read_bytes(path, options.progress)
    doc, events = _decode(path, data)
    del data
    prof = Profile()
    strings = prof.strings
    rank = resolve_rank(path, options) or 0  # file or directory name (rank_3/), else --rank

    # process names: which pids are devices
    pid_device: dict = {}
    pid_names: dict = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name":
            args = e.get("args")
            pname = str(args.get("name", "")) if isinstance(args, dict) else ""
            pid_names[_key(e.get("pid"))] = pname
            m = _DEVICE_PROCESS.search(pname)
            if m and len(m.group(1)) < 10:
                pid_device[_key(e.get("pid"))] = int(m.group(1))

    names: list[str] = []
    cats: list[str] = []
    kinds: list[int] = []
    starts: list[float] = []
    durs: list[float] = []
    devices: list[int] = []
    tracks: list[int] = []
    corrs: list[int] = []
    c_names: list[str] = []
    c_t: list[float] = []
    c_v: list[float] = []
    open_b: dict = {}
    counts = {
        "complete": 0,
        "begin_end": 0,
        "counter": 0,
        "metadata": 0,
        "instant": 0,
        "flow": 0,
        "skipped": 0,
        "unmatched_begin_end": 0,
    }

    def add(e: dict, ts: float, dur: float) -> None:
        name = e.get("name")
        name = name if isinstance(name, str) else str(name) if name is not None else ""
        cat = e.get("cat")
        cat = cat if isinstance(cat, str) else "" if cat is None else str(cat)
        args = e.get("args")
        args = args if isinstance(args, dict) else {}
        dev = _first(args, _DEVICE_KEYS)
        if dev == -1:
            dev = pid_device.get(_key(e.get("pid")), -1)
        stream = _first(args, _STREAM_KEYS)
        kind = _kind(cat, name, dev != -1 or stream != -1)
        names.append(name)
        cats.append(cat)
        kinds.append(kind)
        starts.append(ts)
        durs.append(dur)
        devices.append(dev if kind in (K_KERNEL, K_MEMCPY, K_MEMSET, K_COMM) or dev != -1 else -1)
        tracks.append(stream if stream != -1 else _int(e.get("tid"), 0))
        corrs.append(_first(args, _CORR_KEYS))

    skips: dict = {}

    def skip(kind: str, i: int, e) -> None:
        counts["skipped"] += 1
        add_skip(skips, kind, i, e.get("name") if isinstance(e, dict) else "")

    for i, e in enumerate(events):
        if not isinstance(e, dict):
            skip(NOT_OBJECT, i, e)
            continue
        ph = e.get("ph")
        ts = _num(e.get("ts"))
        if ph == "X":
            dur = _num(e.get("dur"))
            why = _time(e, ts, dur)
            if why:
                skip(why, i, e)
                continue
            counts["complete"] += 1
            add(e, ts, dur)
        elif ph == "B":
            why = _time(e, ts, 0.0)
            if why:
                skip(why, i, e)
                continue
            open_b.setdefault((_key(e.get("pid")), _key(e.get("tid"))), []).append((e, ts))
        elif ph == "E":
            stack = open_b.get((_key(e.get("pid")), _key(e.get("tid"))))
            # an E closes the innermost open B of the same name (or any, if it has none)
            name = e.get("name")
            j = next(
                (k for k in range(len(stack or []) - 1, -1, -1) if not name or stack[k][0].get("name") == name), None
            )
            if ts is None or j is None:
                counts["unmatched_begin_end"] += 1
                continue
            b, t0 = stack.pop(j)
            why = _time(e, ts, ts - t0)
            if why:
                skip(why, i, e)
                continue
            counts["begin_end"] += 1
            add(b, t0, ts - t0)
        elif ph == "C":
            args = e.get("args")
            if _time(e, ts, 0.0) or not isinstance(args, dict):
                skip(
                    "with odd counter args or time"
                    if isinstance(args, dict) or args is None
                    else "with odd counter args or time",
                    i,
                    e,
                )
                continue
            counts["counter"] += 1
            base = e.get("name") if isinstance(e.get("name"), str) else "counter"
            for k, v in args.items():
                x = _num(v)
                if x is not None and abs(x) < 2.0**62:
                    c_names.append(base if len(args) == 1 else f"{base}.{k}")
                    c_t.append(ts)
                    c_v.append(x)
        elif ph == "M":
            counts["metadata"] += 1
        elif ph in ("i", "I", "n"):
            counts["instant"] += 1
        elif ph in ("s", "t", "f"):
            counts["flow"] += 1
        elif ph is None:
            skip("with no 'ph' field", i, e)
        else:
            skip("with a phase this reader cannot map", i, e)
    counts["unmatched_begin_end"] += sum(len(s) for s in open_b.values())

    ts_all = np.array(starts + c_t, dtype=np.float64)
    t0_us = float(ts_all.min()) if len(ts_all) else 0.0
    # epoch-like microsecond stamps (after 2001) give an absolute base; else times stay relative
    # relative times stay as they are, unless they start below 0 (-1 means "no time")
    origin = t0_us if (t0_us > 1e15 or t0_us < 0) else 0.0
    if t0_us > 1e15:
        prof.base_ns = int(round(t0_us * 1000))

    n = len(names)
    mangled = sorted({x for x in names if x.startswith("_Z")})
    if mangled:  # same readable names as the [XPURT_PROF] reader gives
        pretty, _ = demangle_names(mangled)
        rename = dict(zip(mangled, pretty))
        names = [rename.get(x, x) for x in names]
    start_ns = np.rint((np.array(starts, dtype=np.float64) - origin) * 1000).astype(np.int64)
    dur_ns = np.rint(np.array(durs, dtype=np.float64) * 1000).astype(np.int64)
    prof.events = Table(
        EVENT_SCHEMA,
        {
            "name": strings.intern_many(names) if n else np.zeros(0, np.int32),
            "kind": np.array(kinds, dtype=np.int8),
            "start": start_ns,
            "dur": dur_ns,
            "rank": np.full(n, rank, dtype=np.int32),
            "device": np.array(devices, dtype=np.int32),
            "track": np.array(tracks, dtype=np.int64),
            "corr": np.array(corrs, dtype=np.int64),
            "cat": strings.intern_many(cats) if n else np.zeros(0, np.int32),
        },
        n=n,
    )
    if c_names:
        m = len(c_names)
        prof.counters = Table(
            COUNTER_SCHEMA,
            {
                "rank": np.full(m, rank, dtype=np.int32),
                "name": strings.intern_many(c_names),
                "t": np.rint((np.array(c_t) - origin) * 1000).astype(np.int64),
                "value": np.array(c_v, dtype=np.float64),
            },
            n=m,
        )

    kinds_arr = prof.events["kind"]
    unknown = int((kinds_arr == K_UNKNOWN).sum())
    by_kind = {
        k: int((kinds_arr == i).sum())
        for i, k in (
            (K_KERNEL, "kernel"),
            (K_RUNTIME, "runtime"),
            (K_MEMCPY, "memcpy"),
            (K_MEMSET, "memset"),
            (K_COMM, "communication"),
            (K_UNKNOWN, "unknown"),
        )
    }
    info = {"path": str(path), "format": NAME, "rank": rank, "events": n, "by_kind": by_kind, **counts}
    settings_path = path.parent / SETTINGS_NAME
    settings = _load_settings(settings_path) if settings_path.is_file() else None
    if settings is not None:
        info["settings"] = str(settings_path)
        prof.run["xprofiler_settings"] = settings
    prof.run["sources"] = [info]
    prof.run.setdefault("device", "kunlun_p800")
    if pid_names:
        prof.run["xprofiler_processes"] = {str(k): v for k, v in pid_names.items()}
    if isinstance(doc, dict):
        other = {k: v for k, v in doc.items() if k != "traceEvents" and isinstance(v, (str, int, float))}
        if other:
            prof.run["xprofiler_trace_fields"] = other
    if n and unknown:
        cats_unknown = sorted({c for c, k in zip(cats, kinds) if k == K_UNKNOWN})[:10]
        prof.warn(
            f"{path.name}: {unknown} of {n} XProfiler events have no known kind "
            f"(categories {', '.join(repr(c) for c in cats_unknown)}); kept as 'unknown'"
        )
    if counts["unmatched_begin_end"]:
        prof.warn(f"{path.name}: {counts['unmatched_begin_end']} begin/end event(s) without a partner skipped")
    for line in skip_lines(path.name, skips):
        prof.warn(line)
    if n == 0 and skips and not c_names:
        raise TraceError(
            path,
            f"not a valid trace: no usable event, all {counts['skipped']} skipped "
            f"({'; '.join(x.removeprefix(': skipped ') for x in skip_lines('', skips))})",
        )
    if n == 0:
        prof.warn(f"{path.name}: no duration events in the XProfiler trace")
    return prof


def _read_settings(path: Path) -> Profile:
    prof = Profile()
    settings = _load_settings(path)
    if settings is None:
        raise TraceError(path, "XProfiler settings file is not valid JSON")
    prof.run["xprofiler_settings"] = settings
    prof.run["sources"] = [{"path": str(path), "format": NAME, "settings_only": True}]
    trace = path.parent / "xprofiler.trace.json"
    if not trace.is_file() and not (path.parent / "xprofiler.trace.json.gz").is_file():
        prof.warn(f"{path.name}: XProfiler settings without the trace (xprofiler.trace.json) next to it")
    return prof

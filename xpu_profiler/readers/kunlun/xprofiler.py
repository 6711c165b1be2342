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
``B``/``E`` pairs are joined per thread (``begin_end``); ``C`` events become counters; ``M``
events name processes; instant and flow events are counted, not kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...core.errors import TraceError
from ...core.profile import (
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
from ...knowledge.kernel_names import demangle_names
from ..base import MAX_DEVICE, NO_DEVICE, ReadOptions, resolve_rank
from ..begin_end import Mark, pair
from ..content import read_bytes
from ..kineto.tolerant import NOT_OBJECT, add_skip, generic, skip_lines
from .xprofiler_fields import (  # noqa: F401  (sniff: this reader's, for the registry)
    _CORR_KEYS,
    _DEVICE_KEYS,
    _DEVICE_PROCESS,
    _STREAM_KEYS,
    SETTINGS_NAME,
    _first,
    _int,
    _key,
    _kind,
    _num,
    _time,
    sniff,
)

NAME = "xprofiler"


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
    rank = resolve_rank(path, options) or 0  # file or directory name (rank_3/), else --rank
    pid_device, pid_names = _processes(events)
    got = _Events(pid_device)
    got.take_all(events)
    origin = _time_origin(prof, got)
    _add_tables(prof, got, rank, origin)
    _note_run(prof, path, doc, got, rank, pid_names)
    _warn(prof, path, got)
    return prof


def _processes(events: list) -> tuple[dict, dict]:
    """From the process-name metadata: which pids are devices (pid → device index), and
    every process's name (pid → name)."""
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
    return pid_device, pid_names


class _Events:
    """The events of one trace as columns in the making (times in µs), its counter samples,
    and what was counted or skipped on the way."""

    def __init__(self, pid_device: dict):
        self.pid_device = pid_device
        self.names: list[str] = []
        self.cats: list[str] = []
        self.kinds: list[int] = []
        self.starts: list[float] = []
        self.durs: list[float] = []
        self.devices: list[int] = []
        self.tracks: list[int] = []
        self.corrs: list[int] = []
        self.c_names: list[str] = []
        self.c_t: list[float] = []
        self.c_v: list[float] = []
        self.marks: list[Mark] = []
        self.counts = {
            "complete": 0,
            "begin_end": 0,
            "counter": 0,
            "metadata": 0,
            "instant": 0,
            "flow": 0,
            "skipped": 0,
            "unmatched_begin_end": 0,
        }
        self.skips: dict = {}

    def add(self, i: int, e: dict, ts: float, dur: float) -> bool:
        """One slice (#``i``): its name, category, kind, times, device, track and correlation
        id; False when its device is no device's index (skipped and counted)."""
        name = e.get("name")
        name = name if isinstance(name, str) else str(name) if name is not None else ""
        cat = e.get("cat")
        cat = cat if isinstance(cat, str) else "" if cat is None else str(cat)
        args = e.get("args")
        args = args if isinstance(args, dict) else {}
        dev = _first(args, _DEVICE_KEYS)
        if dev == -1:
            dev = self.pid_device.get(_key(e.get("pid")), -1)
        if not -1 <= dev < MAX_DEVICE:  # (a handle, a garbled number: the int32 column would wrap)
            self.skip(f"with {NO_DEVICE}", i, e)
            return False
        stream = _first(args, _STREAM_KEYS)
        kind = _kind(cat, name, dev != -1 or stream != -1)
        self.names.append(name)
        self.cats.append(cat)
        self.kinds.append(kind)
        self.starts.append(ts)
        self.durs.append(dur)
        self.devices.append(dev if kind in (K_KERNEL, K_MEMCPY, K_MEMSET, K_COMM) or dev != -1 else -1)
        self.tracks.append(stream if stream != -1 else _int(e.get("tid"), 0))
        self.corrs.append(_first(args, _CORR_KEYS))
        return True

    def skip(self, kind: str, i: int, e) -> None:
        """An odd event left out, counted by the kind of oddity."""
        self.counts["skipped"] += 1
        add_skip(self.skips, kind, i, e.get("name") if isinstance(e, dict) else "")

    def take_all(self, events: list) -> None:
        """Every event by its phase, then the begin/end pairs as slices."""
        for i, e in enumerate(events):
            if not isinstance(e, dict):
                self.skip(NOT_OBJECT, i, e)
                continue
            self.take(i, e)
        slices, unmatched = pair(self.marks)
        self.counts["unmatched_begin_end"] += unmatched
        for sl in slices:
            i, e = sl.payload
            why = _time(e, sl.start, sl.dur)
            if why:
                self.skip(why, i, e)
                continue
            self.counts["begin_end"] += self.add(i, e, sl.start, sl.dur)

    def take(self, i: int, e: dict) -> None:
        """One event (#``i``) by its phase: a slice, a begin/end mark, a counter sample, or counted."""
        ph = e.get("ph")
        ts = _num(e.get("ts"))
        if ph == "X":
            dur = _num(e.get("dur"))
            why = _time(e, ts, dur)
            if why:
                self.skip(why, i, e)
                return
            assert ts is not None and dur is not None  # _time found both usable
            self.counts["complete"] += self.add(i, e, ts, dur)
        elif ph in ("B", "E"):
            self.take_mark(i, e, ph, ts)
        elif ph == "C":
            self.take_counter(i, e, ts)
        elif ph == "M":
            self.counts["metadata"] += 1
        elif ph in ("i", "I", "n"):
            self.counts["instant"] += 1
        elif ph in ("s", "t", "f"):
            self.counts["flow"] += 1
        elif ph is None:
            self.skip("with no 'ph' field", i, e)
        else:
            self.skip("with a phase this reader cannot map", i, e)

    def take_mark(self, i: int, e: dict, ph: str, ts: float | None) -> None:
        """A begin or end event, kept for pairing per thread."""
        name = e.get("name")
        name = name if isinstance(name, str) else ""
        if ts is None or (ph == "B" and _time(e, ts, 0.0)):
            if ph == "B":
                self.skip(_time(e, ts, 0.0) or "with no 'ts' field", i, e)
            else:
                self.counts["unmatched_begin_end"] += 1
            return
        self.marks.append(Mark((_key(e.get("pid")), _key(e.get("tid"))), name, ts, ph == "B", (i, e)))

    def take_counter(self, i: int, e: dict, ts: float | None) -> None:
        """A counter event: one sample per numeric arg (``name.arg`` when it has several)."""
        args = e.get("args")
        if _time(e, ts, 0.0) or not isinstance(args, dict):
            self.skip("with odd counter args or time", i, e)
            return
        assert ts is not None  # _time found it usable
        self.counts["counter"] += 1
        label = e.get("name")
        base = label if isinstance(label, str) else "counter"
        for k, v in args.items():
            x = _num(v)
            if x is not None and abs(x) < 2.0**62:
                self.c_names.append(base if len(args) == 1 else f"{base}.{k}")
                self.c_t.append(ts)
                self.c_v.append(x)


def _time_origin(prof: Profile, got: _Events) -> float:
    """The time (µs) that becomes 0: the first one when the stamps are epoch-like (which also
    gives the profile its base) or start below 0, else 0 (relative times stay as they are)."""
    ts_all = np.array(got.starts + got.c_t, dtype=np.float64)
    t0_us = float(ts_all.min()) if len(ts_all) else 0.0
    # epoch-like microsecond stamps (after 2001) give an absolute base; else times stay relative
    # relative times stay as they are, unless they start below 0 (-1 means "no time")
    origin = t0_us if (t0_us > 1e15 or t0_us < 0) else 0.0
    if t0_us > 1e15:
        prof.base_ns = int(round(t0_us * 1000))
    return origin


def _add_tables(prof: Profile, got: _Events, rank: int, origin: float) -> None:
    """The events and counters tables, in ns from ``origin``; mangled names demangled."""
    strings = prof.strings
    names = got.names
    n = len(names)
    mangled = sorted({x for x in names if x.startswith("_Z")})
    if mangled:  # same readable names as the [XPURT_PROF] reader gives
        pretty, _ = demangle_names(mangled)
        rename = dict(zip(mangled, pretty))
        names = [rename.get(x, x) for x in names]
    start_ns = np.rint((np.array(got.starts, dtype=np.float64) - origin) * 1000).astype(np.int64)
    dur_ns = np.rint(np.array(got.durs, dtype=np.float64) * 1000).astype(np.int64)
    prof.events = Table(
        EVENT_SCHEMA,
        {
            "name": strings.intern_many(names) if n else np.zeros(0, np.int32),
            "kind": np.array(got.kinds, dtype=np.int8),
            "start": start_ns,
            "dur": dur_ns,
            "rank": np.full(n, rank, dtype=np.int32),
            "device": np.array(got.devices, dtype=np.int32),
            "track": np.array(got.tracks, dtype=np.int64),
            "corr": np.array(got.corrs, dtype=np.int64),
            "cat": strings.intern_many(got.cats) if n else np.zeros(0, np.int32),
        },
        n=n,
    )
    if got.c_names:
        n_c = len(got.c_names)
        prof.counters = Table(
            COUNTER_SCHEMA,
            {
                "rank": np.full(n_c, rank, dtype=np.int32),
                "name": strings.intern_many(got.c_names),
                "t": np.rint((np.array(got.c_t) - origin) * 1000).astype(np.int64),
                "value": np.array(got.c_v, dtype=np.float64),
            },
            n=n_c,
        )


def _note_run(prof: Profile, path: Path, doc, got: _Events, rank: int, pid_names: dict) -> None:
    """The run record: the file's source entry (events by kind, what was counted), the settings
    beside it, the process names and the trace's other top-level fields."""
    kinds_arr = prof.events["kind"]
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
    n = len(got.names)
    info = {"path": str(path), "format": NAME, "rank": rank, "events": n, "by_kind": by_kind, **got.counts}
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


def _warn(prof: Profile, path: Path, got: _Events) -> None:
    """One warning per kind of oddity; a trace with nothing usable at all is an error."""
    n = len(got.names)
    unknown = int((prof.events["kind"] == K_UNKNOWN).sum())
    if n and unknown:
        cats_unknown = sorted({c for c, k in zip(got.cats, got.kinds) if k == K_UNKNOWN})[:10]
        prof.warn(
            f"{path.name}: {unknown} of {n} XProfiler events have no known kind "
            f"(categories {', '.join(repr(c) for c in cats_unknown)}); kept as 'unknown'"
        )
    counts, skips = got.counts, got.skips
    if counts["unmatched_begin_end"]:
        prof.warn(f"{path.name}: {counts['unmatched_begin_end']} begin/end event(s) without a partner skipped")
    for line in skip_lines(path.name, skips):
        prof.warn(line)
    if n == 0 and skips and not got.c_names:
        raise TraceError(
            path,
            f"not a valid trace: no usable event, all {counts['skipped']} skipped "
            f"({'; '.join(x.removeprefix(': skipped ') for x in skip_lines('', skips))})",
        )
    if n == 0:
        prof.warn(f"{path.name}: no duration events in the XProfiler trace")


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

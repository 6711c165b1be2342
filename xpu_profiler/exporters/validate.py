"""A checker for Chrome trace JSON against the rules Perfetto's importer applies.

Every rule here is one that, broken, makes Perfetto drop an event, mis-nest
slices, mis-name a track or fail the import (see the project's reference notes
on Perfetto's JSON importer). Returns a list of problems; empty means clean.
"""

from __future__ import annotations

import bisect
import gzip
import json
import math
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import compression
from ..core.errors import TraceError
from ..core.regular import require_regular
from .validate_text import NO_EVENTS, check_bytes, no_json_text

MAX_DEPTH = 512
UINT32_MAX = 4_294_967_295
KNOWN_METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


MAX_TS_US = 1e12  # relative times: beyond this, 3 decimals of a double are no longer exact
JS_SAFE = 2**53
_PHASES = set("XBEiICMstfben")


def _first_big_int(x: Any) -> int | None:
    """The first integer anywhere in the document beyond what a JavaScript number holds."""
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            if abs(v) >= JS_SAFE:
                return v
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def validate_bytes(data: bytes, where: str = "trace") -> list[str]:
    """The problems of a trace file's bytes (gzip-compressed or not); empty means clean."""
    problems: list[str] = []
    data = check_bytes(data, problems)
    try:
        doc = json.loads(data, parse_constant=_reject_constant)
    except ValueError as err:
        return problems + [f"not valid JSON: {err}"]
    if isinstance(doc, list):  # the JSON Array Format: Perfetto imports it (a warning above)
        events = doc
        if not events:
            problems.append("traceEvents is empty")
    elif isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        _check_document(doc, problems)
        events = doc["traceEvents"]
    elif isinstance(doc, dict) and "traceEvents" not in doc:
        return problems + [NO_EVENTS]
    else:
        return problems + ["traceEvents is not an array"]
    seen = _Seen()
    for i, e in enumerate(events):
        _check_event(i, e, seen, problems)
    _check_names(seen, problems)
    problems += _check_flows(seen.flows, seen.slices)
    _check_nesting(seen.slices, problems)
    return problems


def _check_document(doc: dict[str, Any], problems: list[str]) -> None:
    """The document's top-level keys, time unit, integers and events array."""
    for key in ("meta", "libs"):
        if key in doc:
            problems.append(f"top-level key {key!r} makes another importer claim the file")
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        problems.append(f"displayTimeUnit {doc['displayTimeUnit']!r} is not 'ms' or 'ns'")
    big = _first_big_int(doc)
    if big is not None:
        problems.append(f"integer {big} is beyond 2^53: JavaScript viewers lose its precision")
    if not doc["traceEvents"]:
        problems.append("traceEvents is empty")


@dataclass
class _Seen:
    """What the events seen so far named and used, for the checks across events."""

    named_pids: set = field(default_factory=set)
    named_threads: set = field(default_factory=set)
    used_pids: set = field(default_factory=set)
    used_threads: set = field(default_factory=set)
    names: dict[tuple, list[object]] = field(default_factory=lambda: defaultdict(list))  # the names given (one allowed)
    slices: dict[tuple, list[tuple[int, int, int]]] = field(default_factory=lambda: defaultdict(list))
    counter_keys: dict[tuple, set] = field(default_factory=dict)
    flows: dict[tuple, list[tuple]] = field(default_factory=lambda: defaultdict(list))
    last_x: tuple[float, float] | None = None


#: the fields that place and name an event, and what each must be
_IDENTITY = {
    "pid": "an integer or a string",
    "tid": "an integer or a string",
    "name": "a string",
    "cat": "a string",
    "id": "an integer or a string",
}


def _short(v: Any) -> str:
    text = json.dumps(v)
    return text if len(text) <= 40 else text[:39] + "…"


def _check_event(i: int, e: Any, seen: _Seen, problems: list[str]) -> None:
    """One event: what every event needs (a known phase, pid/tid, ts), then its phase's rules."""
    if not isinstance(e, dict) or not e:
        problems.append(f"event #{i}: empty or not an object")
        return
    ph = e.get("ph")
    if not isinstance(ph, str) or not ph:
        problems.append(f"event #{i}: missing ph")
        return
    if ph not in _PHASES:
        problems.append(f"event #{i}: phase {ph!r} is not one Perfetto and Catapult both read")
        return
    odd = next((k for k in _IDENTITY if isinstance(e.get(k), (list, dict))), None)
    if odd is not None:
        v = e[odd]
        problems.append(
            f"event #{i}: {odd} {_short(v)} is an {'array' if isinstance(v, list) else 'object'}, "
            f"not {_IDENTITY[odd]} (the event's track and name: checked no further)"
        )
        return
    if ph != "M":
        seen.used_pids.add(e.get("pid"))
    for key in ("pid", "tid"):
        v = e.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > UINT32_MAX):
            problems.append(f"event #{i}: {key} {v!r} is not an integer in 0..2^32-1")
    if ph != "M" and not _check_ts(i, e, problems):
        return
    check = _BY_PHASE.get(ph)
    if check is not None:
        check(i, e, seen, problems)


def _check_ts(i: int, e: dict[str, Any], problems: list[str]) -> bool:
    """A timed event's ts: False when it has none to check the event further with."""
    ts = e.get("ts")
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not math.isfinite(ts):
        problems.append(f"event #{i} ({e.get('name')!r}): ts missing or not a number")
        return False
    if ts < 0:
        problems.append(f"event #{i} ({e.get('name')!r}): negative ts is dropped")
    elif ts >= MAX_TS_US:
        problems.append(
            f"event #{i} ({e.get('name')!r}): ts {ts} is not relative to a base (3 decimals would not stay exact)"
        )
    return True


def _check_slice(i: int, e: dict[str, Any], seen: _Seen, problems: list[str]) -> None:
    """A complete (X) event: its dur, name and track, its place in the (ts, -dur) order."""
    dur = e.get("dur")
    if not isinstance(dur, (int, float)) or isinstance(dur, bool) or not math.isfinite(dur):
        problems.append(f"event #{i} ({e.get('name')!r}): X event without a numeric dur")
        return
    if dur < 0:
        problems.append(f"event #{i} ({e.get('name')!r}): negative dur")
    if not isinstance(e.get("name"), str) or not e.get("name"):
        problems.append(f"event #{i}: X event without a name")
    if "pid" not in e or "tid" not in e:
        problems.append(f"event #{i}: X event without pid/tid")
        return
    order = (e["ts"], -dur)
    if seen.last_x is not None and order < seen.last_x:
        problems.append(f"event #{i} ({e.get('name')!r}): X events not sorted by (ts, -dur)")
    seen.last_x = order
    tid = e["tid"] or e["pid"]
    seen.used_threads.add((e["pid"], tid))
    ts_ns = round(e["ts"] * 1000)  # Perfetto converts ts and dur to ns separately
    seen.slices[(e["pid"], tid)].append((ts_ns, ts_ns + round(dur * 1000), i))


def _check_metadata(i: int, e: dict[str, Any], seen: _Seen, problems: list[str]) -> None:
    """A metadata (M) event: one Perfetto reads, with the args it needs and no ts."""
    n = e.get("name")
    if n not in KNOWN_METADATA:
        problems.append(f"event #{i}: metadata {n!r} is ignored by Perfetto")
        return
    args = e.get("args")
    if not isinstance(args, dict):
        problems.append(f"event #{i}: metadata without args")
        return
    if n in ("process_name", "thread_name"):
        if not isinstance(args.get("name"), str) or not args["name"]:
            problems.append(f"event #{i}: {n} needs a non-empty string args.name")
        scope = (n, e.get("pid")) if n == "process_name" else (n, e.get("pid"), e.get("tid"))
        seen.names[scope].append(args.get("name"))
        if n == "process_name":
            seen.named_pids.add(e.get("pid"))
        else:
            seen.named_threads.add((e.get("pid"), e.get("tid") or e.get("pid")))
    elif not isinstance(args.get("sort_index"), int) or isinstance(args.get("sort_index"), bool):
        problems.append(f"event #{i}: {n} needs an integer args.sort_index")
    if e.get("ts", 0) != 0:
        problems.append(f"event #{i}: metadata with a ts: a later one would win, not this one")


def _check_counter(i: int, e: dict[str, Any], seen: _Seen, problems: list[str]) -> None:
    """A counter (C) event: numeric values, the same series as its first event's."""
    args = e.get("args")
    if not isinstance(args, dict) or not args:
        problems.append(f"event #{i} ({e.get('name')!r}): counter without args")
        return
    for k, v in args.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            problems.append(f"event #{i} ({e.get('name')!r}): counter value {k}={v!r} is not a number")
    ck = (e.get("pid"), e.get("name"), e.get("id"))
    keys = set(args)
    if ck in seen.counter_keys and seen.counter_keys[ck] != keys:
        problems.append(f"event #{i} ({e.get('name')!r}): counter series set differs from the first event's")
    seen.counter_keys.setdefault(ck, keys)


def _check_instant(i: int, e: dict[str, Any], seen: _Seen, problems: list[str]) -> None:
    """An instant (i, I) event: a thread-scoped one needs its thread."""
    if e.get("s", "t") == "t" and "tid" not in e:
        problems.append(f"event #{i}: thread-scoped instant without tid")


def _check_async(i: int, e: dict[str, Any], seen: _Seen, problems: list[str]) -> None:
    """An async (b, e, n) event: an id and a category."""
    if "id" not in e and "id2" not in e:
        problems.append(f"event #{i}: async event without id/id2")
    if not e.get("cat"):
        problems.append(f"event #{i}: async event without cat")


def _check_flow(i: int, e: dict[str, Any], seen: _Seen, problems: list[str]) -> None:
    """A v1 flow (s, t, f) event: an integer id, cat, name and track; an end bound to its own slice."""
    if "id" not in e or not e.get("cat") or not e.get("name"):
        problems.append(f"event #{i}: flow event needs id, cat and name")
        return
    fid = e["id"]
    if not isinstance(fid, int) or isinstance(fid, bool) or not 0 <= fid < JS_SAFE:
        problems.append(f"event #{i}: flow id {fid!r} is not an integer in 0..2^53 (a string is read as hex)")
        return
    if e["ph"] == "f" and e.get("bp") != "e":
        problems.append(f'event #{i}: flow end without "bp": "e" binds to the next slice, not its own')
    if "tid" not in e or "pid" not in e:
        problems.append(f"event #{i}: flow event without pid/tid")
        return
    seen.flows[(e["cat"], e["name"], fid)].append((e["ph"], round(e["ts"] * 1000), e["pid"], e["tid"] or e["pid"], i))


def _check_fragile(i: int, e: dict[str, Any], seen: _Seen, problems: list[str]) -> None:
    """Phases read, but better not written: B/E pairs and T."""
    if e["ph"] in ("B", "E"):
        problems.append(f"event #{i}: B/E pairs are fragile; emit X events")
    else:
        problems.append(f"event #{i}: 'T' means different things to Perfetto and Catapult")


#: the checks of each phase beyond what every event needs
_BY_PHASE: dict[str, Callable[[int, dict[str, Any], _Seen, list[str]], None]] = {
    "X": _check_slice,
    "M": _check_metadata,
    "C": _check_counter,
    **dict.fromkeys("iI", _check_instant),
    **dict.fromkeys("ben", _check_async),
    **dict.fromkeys("stf", _check_flow),
    **dict.fromkeys("BET", _check_fragile),
}


def _check_names(seen: _Seen, problems: list[str]) -> None:
    """Every process and every thread with slices named, and each exactly once."""
    for pid in sorted(seen.used_pids - seen.named_pids, key=str):
        problems.append(f"pid {pid} has no process_name")
    for pid, tid in sorted(seen.used_threads - seen.named_threads, key=str):
        problems.append(f"pid {pid} tid {tid} carries slices but has no thread_name")
    for scope, vals in seen.names.items():
        if len(vals) > 1:
            problems.append(f"{scope[0]} given {len(vals)} times for {scope[1:]}: exactly one allowed")


def _check_nesting(slices: dict[tuple, list[tuple[int, int, int]]], problems: list[str]) -> None:
    """On each track: no slice partially overlapping its parent, nesting no deeper than Perfetto keeps."""
    for (pid, tid), sl in slices.items():
        sl.sort(key=lambda x: (x[0], -x[1]))
        stack: list[int] = []
        for s, e_, i in sl:
            while stack and stack[-1] <= s:
                stack.pop()
            if stack and e_ > stack[-1]:
                problems.append(
                    f"event #{i}: slice on pid {pid} tid {tid} partially overlaps its parent "
                    f"(Perfetto spills or drops it)"
                )
                continue
            stack.append(e_)
            if len(stack) > MAX_DEPTH:
                problems.append(f"event #{i}: nesting deeper than {MAX_DEPTH} on pid {pid} tid {tid}")


def _check_flows(flows: dict[tuple, list[tuple]], slices: dict[tuple, list[tuple[int, int, int]]]) -> list[str]:
    """v1 flows: one start and at most one end per (cat, name, id), the start not after the
    end, and each bound inside a slice of its own track ([ts, ts + dur), as Perfetto binds)."""
    problems: list[str] = []
    unions: dict[tuple, tuple[list[int], list[int]]] = {}

    def inside(pid: int, tid: int, t: int) -> bool:
        key = (pid, tid)
        if key not in unions:  # the union of the track's slices, as sorted disjoint runs
            runs: list[list[int]] = []
            for s, e, _ in sorted(slices.get(key, [])):
                if e <= s:
                    continue
                if runs and s <= runs[-1][1]:
                    runs[-1][1] = max(runs[-1][1], e)
                else:
                    runs.append([s, e])
            unions[key] = ([r[0] for r in runs], [r[1] for r in runs])
        starts, ends = unions[key]
        k = bisect.bisect_right(starts, t) - 1
        return k >= 0 and t < ends[k]

    for (cat, name, fid), evs in flows.items():
        begins = [x for x in evs if x[0] == "s"]
        ends = [x for x in evs if x[0] == "f"]
        if len(begins) != 1 or len(ends) > 1:
            problems.append(
                f"flow {cat}/{name} id {fid}: {len(begins)} starts and {len(ends)} ends "
                "(exactly one start, at most one end; Perfetto reports a duplicate id)"
            )
            continue
        if ends and ends[0][1] < begins[0][1]:
            problems.append(f"flow {cat}/{name} id {fid}: ends before it starts")
        for ph, t, pid, tid, i in evs:
            if not inside(pid, tid, t):
                problems.append(
                    f"event #{i}: flow {ph!r} of id {fid} is inside no slice on pid {pid} tid {tid} "
                    "(Perfetto: flow_no_enclosing_slice)"
                )
    return problems


def validate_file(path: str | Path) -> list[str]:
    """The problems of a trace file (see ``validate_bytes``). TraceError for what is no trace
    Perfetto opens at all: not a regular file (a FIFO would wait for a writer, a device never
    end), another compression than gzip, binary content."""
    path = Path(path)
    try:
        require_regular(path, "pass a trace file")
        data = path.read_bytes()
    except OSError as e:
        raise TraceError(path, e.strerror or str(e)) from None
    kind = compression.kind_of(data[:6])
    try:
        text = gzip.decompress(data) if kind == compression.GZIP else data
    except (OSError, EOFError, zlib.error) as e:
        raise TraceError(path, f"cannot decompress ({e})") from None
    why = no_json_text(text, kind)
    if why:
        raise TraceError(path, why)
    try:
        return validate_bytes(text, str(path))
    except RecursionError:
        raise TraceError(path, "nested too deeply to be a trace") from None

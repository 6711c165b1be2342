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
import re
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..core.errors import TraceError

MAX_DEPTH = 512
UINT32_MAX = 4_294_967_295
KNOWN_METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}
_TS_DECIMALS = re.compile(rb'"(?:ts|dur)":\s*-?\d+\.(\d{4,})')


MAX_TS_US = 1e12  # relative times: beyond this, 3 decimals of a double are no longer exact
JS_SAFE = 2**53
_PHASES = set("XBEiICMstfben")
_SURROGATE = re.compile(rb"\\u[dD][89abAB]")


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
    problems: list[str] = []
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data.startswith(b"\xef\xbb\xbf"):
        problems.append("starts with a UTF-8 BOM: Perfetto will not detect it as JSON")
        data = data[3:]
    head = data[:128].lstrip()
    if not head.startswith(b'{"traceEvents"'):
        problems.append(
            'must start with {"traceEvents" (object form, traceEvents first) so no other importer claims it'
        )
    m = _TS_DECIMALS.search(data)
    if m:
        problems.append(f"a ts/dur has more than 3 decimals ({m.group(0)[:40]!r}): nanosecond fractions are lost")
    if _SURROGATE.search(data):
        problems.append("a surrogate escape (\\uD800-\\uDFFF): Perfetto rejects them; write UTF-8")
    try:
        doc = json.loads(data, parse_constant=_reject_constant)
    except ValueError as err:
        return problems + [f"not valid JSON: {err}"]
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return problems + ["traceEvents is not an array"]
    for key in ("meta", "libs"):
        if key in doc:
            problems.append(f"top-level key {key!r} makes another importer claim the file")
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        problems.append(f"displayTimeUnit {doc['displayTimeUnit']!r} is not 'ms' or 'ns'")
    big = _first_big_int(doc)
    if big is not None:
        problems.append(f"integer {big} is beyond 2^53: JavaScript viewers lose its precision")
    events = doc["traceEvents"]
    if not events:
        problems.append("traceEvents is empty")
    named_pids: set = set()
    named_threads: set = set()
    used_pids: set = set()
    used_threads: set = set()

    names: dict[tuple, list[object]] = defaultdict(list)  # the names given (one allowed)
    slices: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
    counter_keys: dict[tuple, set] = {}
    flows: dict[tuple, list[tuple]] = defaultdict(list)
    last_x: tuple[float, float] | None = None
    for i, e in enumerate(events):
        if not isinstance(e, dict) or not e:
            problems.append(f"event #{i}: empty or not an object")
            continue
        ph = e.get("ph")
        if not isinstance(ph, str) or not ph:
            problems.append(f"event #{i}: missing ph")
            continue
        if ph not in _PHASES:
            problems.append(f"event #{i}: phase {ph!r} is not one Perfetto and Catapult both read")
            continue
        if ph != "M":
            used_pids.add(e.get("pid"))
        for key in ("pid", "tid"):
            v = e.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > UINT32_MAX):
                problems.append(f"event #{i}: {key} {v!r} is not an integer in 0..2^32-1")
        if ph != "M":
            ts = e.get("ts")
            if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not math.isfinite(ts):
                problems.append(f"event #{i} ({e.get('name')!r}): ts missing or not a number")
                continue
            if ts < 0:
                problems.append(f"event #{i} ({e.get('name')!r}): negative ts is dropped")
            elif ts >= MAX_TS_US:
                problems.append(
                    f"event #{i} ({e.get('name')!r}): ts {ts} is not relative to a base "
                    "(3 decimals would not stay exact)"
                )
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or isinstance(dur, bool) or not math.isfinite(dur):
                problems.append(f"event #{i} ({e.get('name')!r}): X event without a numeric dur")
                continue
            if dur < 0:
                problems.append(f"event #{i} ({e.get('name')!r}): negative dur")
            if not isinstance(e.get("name"), str) or not e.get("name"):
                problems.append(f"event #{i}: X event without a name")
            if "pid" not in e or "tid" not in e:
                problems.append(f"event #{i}: X event without pid/tid")
                continue
            order = (e["ts"], -dur)
            if last_x is not None and order < last_x:
                problems.append(f"event #{i} ({e.get('name')!r}): X events not sorted by (ts, -dur)")
            last_x = order
            tid = e["tid"] or e["pid"]
            used_threads.add((e["pid"], tid))
            ts_ns = round(e["ts"] * 1000)  # Perfetto converts ts and dur to ns separately
            slices[(e["pid"], tid)].append((ts_ns, ts_ns + round(dur * 1000), i))
        elif ph == "M":
            n = e.get("name")
            if n not in KNOWN_METADATA:
                problems.append(f"event #{i}: metadata {n!r} is ignored by Perfetto")
                continue
            args = e.get("args")
            if not isinstance(args, dict):
                problems.append(f"event #{i}: metadata without args")
                continue
            if n in ("process_name", "thread_name"):
                if not isinstance(args.get("name"), str) or not args["name"]:
                    problems.append(f"event #{i}: {n} needs a non-empty string args.name")
                scope = (n, e.get("pid")) if n == "process_name" else (n, e.get("pid"), e.get("tid"))
                names[scope].append(args.get("name"))
                if n == "process_name":
                    named_pids.add(e.get("pid"))
                else:
                    named_threads.add((e.get("pid"), e.get("tid") or e.get("pid")))
            elif not isinstance(args.get("sort_index"), int) or isinstance(args.get("sort_index"), bool):
                problems.append(f"event #{i}: {n} needs an integer args.sort_index")
            if e.get("ts", 0) != 0:
                problems.append(f"event #{i}: metadata with a ts: a later one would win, not this one")
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args:
                problems.append(f"event #{i} ({e.get('name')!r}): counter without args")
                continue
            for k, v in args.items():
                if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                    problems.append(f"event #{i} ({e.get('name')!r}): counter value {k}={v!r} is not a number")
            ck = (e.get("pid"), e.get("name"), e.get("id"))
            keys = set(args)
            if ck in counter_keys and counter_keys[ck] != keys:
                problems.append(f"event #{i} ({e.get('name')!r}): counter series set differs from the first event's")
            counter_keys.setdefault(ck, keys)
        elif ph in ("i", "I"):
            s = e.get("s", "t")
            if s == "t" and "tid" not in e:
                problems.append(f"event #{i}: thread-scoped instant without tid")
        elif ph in ("b", "e", "n"):
            if "id" not in e and "id2" not in e:
                problems.append(f"event #{i}: async event without id/id2")
            if not e.get("cat"):
                problems.append(f"event #{i}: async event without cat")
        elif ph in ("s", "t", "f"):
            if "id" not in e or not e.get("cat") or not e.get("name"):
                problems.append(f"event #{i}: flow event needs id, cat and name")
                continue
            fid = e["id"]
            if not isinstance(fid, int) or isinstance(fid, bool) or not 0 <= fid < JS_SAFE:
                problems.append(f"event #{i}: flow id {fid!r} is not an integer in 0..2^53 (a string is read as hex)")
                continue
            if ph == "f" and e.get("bp") != "e":
                problems.append(f'event #{i}: flow end without "bp": "e" binds to the next slice, not its own')
            if "tid" not in e or "pid" not in e:
                problems.append(f"event #{i}: flow event without pid/tid")
                continue
            flows[(e["cat"], e["name"], fid)].append((ph, round(e["ts"] * 1000), e["pid"], e["tid"] or e["pid"], i))
        elif ph in ("B", "E"):
            problems.append(f"event #{i}: B/E pairs are fragile; emit X events")
        elif ph == "T":
            problems.append(f"event #{i}: 'T' means different things to Perfetto and Catapult")

    for pid in sorted(used_pids - named_pids, key=str):
        problems.append(f"pid {pid} has no process_name")
    for pid, tid in sorted(used_threads - named_threads, key=str):
        problems.append(f"pid {pid} tid {tid} carries slices but has no thread_name")
    for scope, vals in names.items():
        if len(vals) > 1:
            problems.append(f"{scope[0]} given {len(vals)} times for {scope[1:]}: exactly one allowed")

    problems += _check_flows(flows, slices)
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
    return problems


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
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TraceError(path, e.strerror or str(e)) from None
    try:
        return validate_bytes(data, str(path))
    except (OSError, EOFError, zlib.error) as e:
        raise TraceError(path, f"cannot decompress ({e})") from None
    except RecursionError:
        raise TraceError(path, "nested too deeply to be a trace") from None

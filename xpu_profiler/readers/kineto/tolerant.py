"""The tolerant decode of events the typed schema refused: skip the odd ones, keep the rest.

The typed decode (``schema``) is all-or-nothing per chunk. When a chunk fails it, the
chunk is decoded again here into plain Python values, each event is checked by hand,
and the odd ones (a missing or wrong-typed field, a negative or absurd duration, NaN,
a number out of range, a non-object, odd ``[memory]`` args or metadata) are skipped and
counted by kind, with the first example. What is left is encoded again and decoded
with the typed schema, so that the same ``columns`` builder makes the columns.

Skips are a plain dict (picklable across worker processes): kind → [count, first
event index (chunk-local until ``offset_skips``), first name].
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import msgspec

from ...core.errors import TraceError
from .cols import MAX_DUR_US, MAX_US, Cols
from .columns import columns
from .schema import Event, Trace

Skips = dict  # kind → [count, first index, first name]
NOT_OBJECT = "that are not JSON objects"

_EVENT_DECODER = msgspec.json.Decoder(Event)
_EVENTS_DECODER = msgspec.json.Decoder(list[Event])
INT_LIMIT = 1 << 63
_ID_ARGS = ("External id", "correlation", "kind")
_TEXT_ARGS = ("name", "kernel")
_MEMORY_ARGS = ("Total Allocated", "Total Reserved")


def add_skip(skips: Skips, kind: str, index: int, name) -> None:
    got = skips.get(kind)
    if got is None:
        skips[kind] = [1, index, name if isinstance(name, str) else ""]
    else:
        got[0] += 1


def offset_skips(skips: Skips, offset: int) -> Skips:
    return {k: [n, i + offset, name] for k, (n, i, name) in skips.items()}


def merge_skips(parts: list[Skips]) -> Skips:
    out: Skips = {}
    for part in parts:
        for kind, (n, i, name) in part.items():
            if kind in out:
                out[kind][0] += n
            else:
                out[kind] = [n, i, name]
    return out


def skip_lines(label: str, skips: Skips) -> list[str]:
    """One warning per kind: ``x.json: skipped 3 events with a negative duration (first: #127 'k')``."""
    lines = []
    for kind, (n, i, name) in sorted(skips.items(), key=lambda kv: kv[1][1]):
        what = "event" if n == 1 else "events"
        if n == 1 and kind == NOT_OBJECT:
            what, kind = "entry", "that is not a JSON object"
        elif kind == NOT_OBJECT:
            what = "entries"
        first = f"#{i} {name[:60]!r}" if name else f"#{i}"
        lines.append(f"{label}: skipped {n} {what} {kind} (first: {first})")
    return lines


def _parse_int(text: str):
    """JSON integers as Python ints (the checks catch those beyond int64); one with more
    digits than ``int()`` converts is a huge float, never a traceback."""
    if len(text) > 4000:
        return -1e308 if text[0] == "-" else 1e308
    return int(text)


def generic(path: Path, data: bytes | bytearray | memoryview) -> Any:
    """The JSON document (an array, a trace object: the caller checks) as plain Python values;
    NaN/Infinity and huge numbers are accepted here (and skipped by the checks). Broken JSON
    is a TraceError naming the problem."""
    problem = None
    try:
        return msgspec.json.decode(data)
    except msgspec.ValidationError:  # a number out of range: Python's parser takes it
        pass
    except msgspec.DecodeError as e:
        problem = str(e)
        if "truncated" in problem.lower():
            raise TraceError(path, "truncated JSON (file ends in the middle of the trace)") from None
    try:  # NaN / Infinity, which Perfetto and Python's json read; slow, for the odd chunk only
        text = bytes(data).decode("utf-8", errors="replace")
        return json.loads(text, parse_int=_parse_int, parse_constant=float)
    except RecursionError:
        raise TraceError(path, "nested too deeply to be a trace") from None
    except json.JSONDecodeError as e:
        if not text[e.pos :].strip():
            raise TraceError(path, "truncated JSON (file ends in the middle of the trace)") from None
        raise TraceError(path, f"malformed JSON ({problem or str(e)[:120]})") from None
    except ValueError as e:
        raise TraceError(path, f"malformed JSON ({problem or str(e)[:120]})") from None


def _number(v) -> tuple[float | None, str | None]:
    """A ts/dur value as Perfetto reads it (number or numeric string) → (value, problem)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return None, "wrong-typed"
    try:
        x = float(v)
    except (ValueError, OverflowError):
        return None, "non-numeric" if isinstance(v, str) else "out of range"
    return x, None


def _bad_number(v) -> bool:
    return isinstance(v, float) and not math.isfinite(v) or isinstance(v, int) and not -INT_LIMIT <= v < INT_LIMIT


def check(e) -> str | None:
    """Why an event is odd (the kind of a skip), or None for a usable event. Fixes in place
    what is merely loose (an id of a wrong type is taken as absent)."""
    if not isinstance(e, dict):
        return NOT_OBJECT
    ph = e.get("ph")
    if ph is None:
        return "with no 'ph' field"
    if not isinstance(ph, str):
        return "with a wrong-typed 'ph'"
    for k in ("name", "cat"):
        if k in e and not isinstance(e[k], str):
            return f"with a wrong-typed '{k}'"
    for k in ("pid", "tid"):
        v = e.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            return f"with a wrong-typed '{k}'"
        if _bad_number(v):  # a track id, not a quantity: kept as a distinct id, as the typed path does
            e[k] = str(v)[:40]
    if "args" in e and not isinstance(e["args"], dict):
        return "with a wrong-typed 'args'"
    args = e.get("args") or {}
    if ph not in ("X", "i", "I", "M"):
        return None  # flows, counters, async: not used, no field matters
    for k in _ID_ARGS:  # correlation / External id: loose, an odd one is absent
        v = args.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, str)) or _bad_number(v)):
            del args[k]
    for k in _TEXT_ARGS:
        if k in args and not isinstance(args[k], str):
            if ph == "M":
                return "with odd metadata"
            del args[k]
    for k in ("flops", "bytes"):
        if k in args and (
            isinstance(args[k], bool) or not isinstance(args[k], (int, float, str)) or _bad_number(args[k])
        ):
            del args[k]
    if ph == "X":
        return _check_slice(e)
    if ph in ("i", "I") and e.get("name") == "[memory]":
        return _check_memory(e, args)
    return None


def _check_slice(e: dict) -> str | None:
    ts = e.get("ts")
    dur = e.get("dur")
    if ts is None:
        return "with no 'ts' field"
    if dur is None:
        return "with no 'dur' field"
    for k, v in (("ts", ts), ("dur", dur)):
        x, problem = _number(v)
        if problem == "out of range":
            return "with a time out of range"
        if problem:
            return f"with a {problem} '{k}'"
        assert x is not None  # no problem: a value
        if not math.isfinite(x):
            return "with a non-finite time (NaN or Infinity)"
        if k == "ts":
            t = x
        else:
            d = x
    if abs(t) > MAX_US or abs(d) > MAX_DUR_US:
        return "with a time out of range"
    if d < 0:
        return "with a negative duration"
    return None


def _check_memory(e: dict, args: dict) -> str | None:
    x, problem = _number(e.get("ts")) if e.get("ts") is not None else (None, "missing")
    if problem or x is None or not math.isfinite(x) or abs(x) > MAX_US:  # x is None: a problem
        return "with odd [memory] args (no usable time)"
    for k in _MEMORY_ARGS:
        v = args.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or _bad_number(v) or v < 0 or v > 2.0**62:
            return "with odd [memory] args"
    dt = args.get("Device Type")
    if dt is not None and (isinstance(dt, bool) or not isinstance(dt, int) or _bad_number(dt)):
        return "with odd [memory] args"
    return None


def _name(e) -> str:
    v = e.get("name") if isinstance(e, dict) else None
    return v if isinstance(v, str) else ""


def from_document(path: Path, data: bytes) -> tuple[Trace | None, list[Cols], list[str]]:
    """A document the typed top-level decode refused (NaN, a number out of range, an odd
    top-level field): parsed generically; top-level fields of a wrong type are dropped,
    with a warning each. Broken JSON is a TraceError naming the problem."""
    doc = generic(path, data)
    if isinstance(doc, list):
        return None, [tolerant_cols(path, doc)], []
    if not isinstance(doc, dict) or "traceEvents" not in doc:
        raise TraceError(path, "JSON is not a trace (no traceEvents array)")
    events = doc.pop("traceEvents")
    if not isinstance(events, list):
        raise TraceError(path, "not a valid trace: traceEvents is not an array")
    fields, notes = {}, []
    for k in Trace.__struct_fields__:
        if k in doc and k != "traceEvents":
            try:
                msgspec.convert({k: doc[k]}, Trace)
                fields[k] = doc[k]
            except (msgspec.ValidationError, OverflowError, TypeError, ValueError):
                notes.append(f"{path.name}: ignored the odd top-level field {k!r}")
    return msgspec.convert(fields, Trace), [tolerant_cols(path, events)], notes


def _valid_text(v: Any) -> Any:
    """``v`` with every lone surrogate in its strings written as its escape (``\\ud800``)."""
    if isinstance(v, str):
        return v.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(v, dict):
        return {_valid_text(k): _valid_text(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_valid_text(x) for x in v]
    return v


def tolerant_cols(path: Path, data: bytes | bytearray | memoryview | list[Any]) -> Cols:
    """Columns of a JSON array of events, odd events skipped and counted (``Cols.skipped``)."""
    values = data if isinstance(data, list) else generic(path, data)
    if not isinstance(values, list):
        raise TraceError(path, "not a valid trace: traceEvents is not an array")
    skips: Skips = {}
    kept, kept_idx = [], []
    for i, e in enumerate(values):
        kind = check(e)
        if kind is None:
            kept.append(e)
            kept_idx.append(i)
        else:
            add_skip(skips, kind, i, _name(e))
    n_all = len(values)
    del values
    try:
        blob = msgspec.json.encode(kept)
    except UnicodeEncodeError:  # a lone surrogate ("\\ud800" in the JSON): shown escaped, as the name has it
        kept = [_valid_text(e) for e in kept]
        blob = msgspec.json.encode(kept)
    try:
        events = _EVENTS_DECODER.decode(blob)
    except msgspec.ValidationError:  # something the checks let through: find it event by event
        events = []
        for i, e in zip(kept_idx, kept):
            try:
                events.append(_EVENT_DECODER.decode(msgspec.json.encode(e)))
            except msgspec.ValidationError as err:
                add_skip(skips, f"with an odd field ({str(err).replace('$.', '')[:80]})", i, _name(e))
    del blob, kept
    cols = columns(path, events)
    cols.n_events = n_all
    cols.skipped = merge_skips([skips, cols.skipped])
    return cols
